//! # toolreg-builtins
//!
//! The tools every agent needs, as ordinary toolreg tools with their safety
//! level, category and scope, so that selection, approval and audit apply to
//! them like to any other tool:
//!
//! - [`store`]: the context store's tools (`store_set`, `store_get`,
//!   `store_ref`, `store_list`, `store_summarize`, `store_delete`), named
//!   JSON values kept outside the context window and handed on by
//!   reference, over a namespace of a `toolreg-store` store.
//! - [`files`]: `read_file`, `write_file`, `edit_file`, `list_files`,
//!   `search_files`, confined to a root directory through a cap-std handle.
//! - [`shell`] (Linux): `shell`, a command in the root with a timeout; in a
//!   PID and mount namespace of its own where the process may make them (its
//!   own `/proc`, everything outside the root read-only, everything it
//!   started killed with it), and with writes confined to the root by
//!   Landlock where the kernel has it.
//!
//! The host's own files (its key and store, an audit file: see
//! [`Builtins::reserve`], and any `.toolreg` directory) are out of the file
//! tools' reach wherever they lie, and hidden from the shell where it runs
//! in a mount namespace of its own.
//! - [`user`]: `ask_user`, `notify_user`, `final_answer`, the human user as a
//!   function behind a [`user::UserChannel`].
//!
//! [`Builtins`] registers any subset, all or nothing:
//!
//! ```
//! use toolreg::FunctionRegistry;
//! use toolreg_builtins::Builtins;
//! use toolreg_builtins::user::{InProcessChannel, UserTools};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! let (channel, _inbox) = InProcessChannel::new();
//! let user = UserTools::new(channel);
//!
//! let mut registry = FunctionRegistry::new();
//! Builtins::new().files(root.path()).user(user).register(&mut registry)?;
//! assert!(registry.contains("edit_file") && registry.contains("final_answer"));
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use toolreg::{FunctionRegistry, RegistryError, ToolRegistration};

pub mod files;
#[cfg(target_os = "linux")]
pub mod shell;
pub mod store;
pub mod user;

use files::{FileError, FileOptions, FileTools};
#[cfg(target_os = "linux")]
use shell::{ShellError, ShellOptions, ShellTool};
use store::StoreTools;
use user::UserTools;

/// Chooses which built-in tools to register.
#[derive(Debug, Default)]
#[must_use]
pub struct Builtins {
    store: Option<StoreTools>,
    files: Option<FilesSpec>,
    #[cfg(target_os = "linux")]
    shell: Option<ShellOptions>,
    user: Option<UserTools>,
    reserved: Vec<PathBuf>,
}

#[derive(Debug)]
enum FilesSpec {
    Root(PathBuf),
    Tools(FileTools),
}

/// Why [`Builtins::register`] registered nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuiltinsError {
    /// The file tools' root cannot be used.
    #[error(transparent)]
    Files(#[from] FileError),
    /// The shell's root cannot be used.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Shell(#[from] ShellError),
    /// The registry refused a tool (a name already taken, for one).
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl Builtins {
    /// Nothing chosen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The six context-store tools, bound to a namespace (or prepared
    /// [`StoreTools`]).
    pub fn store(mut self, namespace: impl Into<StoreTools>) -> Self {
        self.store = Some(namespace.into());
        self
    }

    /// The file tools over `root`, with default limits.
    pub fn files(mut self, root: impl AsRef<Path>) -> Self {
        self.files = Some(FilesSpec::Root(root.as_ref().to_path_buf()));
        self
    }

    /// File tools opened already (with their own limits).
    pub fn file_tools(mut self, tools: FileTools) -> Self {
        self.files = Some(FilesSpec::Tools(tools));
        self
    }

    /// The shell tool with these options.
    #[cfg(target_os = "linux")]
    pub fn shell(mut self, options: ShellOptions) -> Self {
        self.shell = Some(options);
        self
    }

    /// The user tools over a channel (or prepared [`UserTools`], with
    /// their options).
    pub fn user(mut self, channel: impl Into<UserTools>) -> Self {
        self.user = Some(channel.into());
        self
    }

    /// Keep `path` out of every tool's reach: a file or directory of the
    /// host's own (its state directory with the sealing key and store, an
    /// audit file, an SQLite store and its `-wal` and `-shm`). Should it lie
    /// inside the root, the file tools refuse it as they refuse any
    /// `.toolreg` directory ([`FileTools::with_reserved`]), and the shell
    /// hides it where it runs in a mount namespace of its own
    /// ([`ShellOptions::reserve`]). Repeatable; it need not exist yet.
    pub fn reserve(mut self, path: impl Into<PathBuf>) -> Self {
        self.reserved.push(path.into());
        self
    }

    /// The chosen tools' registrations, in the order store, files, shell, user.
    pub fn registrations(self) -> Result<Vec<ToolRegistration>, BuiltinsError> {
        let mut out = Vec::new();
        if let Some(store) = self.store {
            out.extend(store.registrations());
        }
        let reserved = self.reserved;
        match self.files {
            Some(FilesSpec::Root(root)) => {
                out.extend(FileTools::with_reserved(root, FileOptions::default(), &reserved)?.registrations());
            }
            Some(FilesSpec::Tools(tools)) if reserved.is_empty() => out.extend(tools.registrations()),
            Some(FilesSpec::Tools(tools)) => {
                let mut all = tools.reserved_paths();
                all.extend(reserved.iter().cloned());
                let reopened = FileTools::with_reserved(tools.root(), *tools.options(), &all)?;
                out.extend(reopened.registrations());
            }
            None => {}
        }
        #[cfg(target_os = "linux")]
        if let Some(mut options) = self.shell {
            options.reserved.extend(reserved.iter().cloned());
            out.push(ShellTool::new(options)?.registration());
        }
        if let Some(user) = self.user {
            out.extend(user.registrations());
        }
        Ok(out)
    }

    /// Register the chosen tools, all or none: on any error the registry is unchanged.
    pub fn register(self, registry: &mut FunctionRegistry) -> Result<(), BuiltinsError> {
        toolreg::register_tools!(registry, self.registrations()?)?;
        Ok(())
    }
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
