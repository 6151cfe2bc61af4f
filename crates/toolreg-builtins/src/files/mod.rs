//! File tools confined to one root directory: `read_file`, `write_file`,
//! `edit_file`, `list_files`, `search_files`.
//!
//! Every path is resolved through a cap-std [`Dir`] opened on the root, so the
//! kernel (`openat2` with `RESOLVE_BENEATH` on Linux, a checked walk
//! elsewhere) refuses whatever would resolve outside it — a symlink pointing
//! out, a magic link under `/proc`, a directory swapped for a link between a
//! check and its use. Lexical rules (no absolute paths, no `..`, no NUL) run
//! first so that the common mistakes get a precise message.
//!
//! ## The host's own files
//!
//! A directory named [`RESERVED_NAME`] (`.toolreg`), at any depth, and the
//! paths given to [`FileTools::with_reserved`] (the host's state directory,
//! its audit file, its store, when they lie inside the root) are out of
//! every file tool's reach: `list_files` (hidden files included) and
//! `search_files` pass over them, and `read_file`, `write_file` and
//! `edit_file` refuse them with [`FileError::Reserved`], whether they are
//! named directly or through a symbolic link inside the root. The check is
//! made where every path is resolved, so no tool can miss it.
//!
//! ```
//! use toolreg_builtins::files::{FileTools, ReadArgs, WriteArgs};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! let files = FileTools::open(root.path())?;
//! files.write(&WriteArgs::new("notes/todo.txt", "one\ntwo\n").create_parents(true))?;
//! let read = files.read(&ReadArgs::new("notes/todo.txt"))?;
//! assert_eq!(read.content, "     1\tone\n     2\ttwo\n");
//! assert!(files.read(&ReadArgs::new("../etc/passwd")).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! ## Images and PDFs
//!
//! `read_file` returns a PNG, JPEG, GIF or WebP image, or a PDF, whole, as
//! one content block instead of numbered lines (see
//! [`FileTools::read_content`]): the type is told by the file's first bytes,
//! each kind has its size limit in [`FileOptions`], and the file is opened
//! through the same confined handle as text.
//!
//! ## Approving writes with the diff in view
//!
//! `write_file` and `edit_file` are dangerous, so the engine asks an approver
//! first. The approver holds a clone of the same [`FileTools`] and calls
//! [`FileTools::preview`] with the call's tool name and arguments: it returns
//! the unified diff the call would apply, computed without writing anything.
//! Show that diff to whoever decides.

mod error;
mod path;
mod read;
mod tools;
mod walk;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolreg::ToolArgs;
use toolreg::exec::{Content, ToolOutput};

pub use error::FileError;
pub use path::RESERVED_NAME;
use path::Reserved;

/// The category every file tool is in.
pub const CATEGORY: &str = "fs";

/// Limits for the file tools. Start from [`FileOptions::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileOptions {
    /// Lines `read_file` returns when no limit is given (2,000).
    pub default_read_lines: usize,
    /// Most bytes of numbered text one `read_file` returns (256 KiB); the
    /// result then says where to continue.
    pub max_read_bytes: usize,
    /// Longest line shown whole (2,000 bytes); longer lines are cut with a
    /// marker saying how many bytes were left out. It is also all `read_file`
    /// holds of a line: the rest is read and counted, not kept, so a line of
    /// any length costs this much memory.
    pub max_line_bytes: usize,
    /// Largest content `write_file` accepts (8 MiB).
    pub max_write_bytes: usize,
    /// Largest file `edit_file` changes (8 MiB).
    pub max_edit_bytes: u64,
    /// Most paths `list_files` returns (1,000).
    pub max_list_results: usize,
    /// Most matches `search_files` returns (200).
    pub max_search_results: usize,
    /// Largest file `search_files` looks into (4 MiB); larger ones are skipped.
    pub max_search_file_bytes: u64,
    /// Largest image (PNG, JPEG, GIF, WebP) `read_file` returns as a block
    /// (5 MiB, the most any major provider takes per image); a larger one
    /// is refused with [`FileError::FileTooLarge`] naming this limit.
    pub max_image_bytes: u64,
    /// Largest PDF `read_file` returns as a block (10 MiB: under the
    /// engine's default `max_content_bytes` of 16 MiB, and, once in base64,
    /// under the request limits of the providers that read PDFs); a larger
    /// one is refused with [`FileError::FileTooLarge`] naming this limit.
    pub max_pdf_bytes: u64,
    /// Most directory entries one listing or search visits (100,000).
    pub max_walk_entries: usize,
    /// Deepest directory nesting a listing or search descends (64).
    pub max_walk_depth: usize,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            default_read_lines: 2000,
            max_read_bytes: 256 * 1024,
            max_line_bytes: 2000,
            max_write_bytes: 8 * 1024 * 1024,
            max_edit_bytes: 8 * 1024 * 1024,
            max_list_results: 1000,
            max_search_results: 200,
            max_search_file_bytes: 4 * 1024 * 1024,
            max_image_bytes: 5 * 1024 * 1024,
            max_pdf_bytes: 10 * 1024 * 1024,
            max_walk_entries: 100_000,
            max_walk_depth: 64,
        }
    }
}

/// The file tools over one root directory. Cloning is cheap and shares the
/// directory handle.
#[derive(Debug, Clone)]
pub struct FileTools {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: Dir,
    root: PathBuf,
    options: FileOptions,
    reserved: Reserved,
}

/// Roots that are kernel interfaces rather than files.
const REFUSED_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

impl FileTools {
    /// Open `root` with the default [`FileOptions`].
    pub fn open(root: impl AsRef<Path>) -> Result<Self, FileError> {
        Self::with_options(root, FileOptions::default())
    }

    /// Open `root` with the given limits. The root must be an existing
    /// directory outside `/proc`, `/sys` and `/dev`.
    pub fn with_options(root: impl AsRef<Path>, options: FileOptions) -> Result<Self, FileError> {
        Self::with_reserved(root, options, &[])
    }

    /// Open `root` with the given limits, and `reserved` out of every tool's
    /// reach besides [`RESERVED_NAME`]: the host's own files and
    /// directories (absolute paths, or relative to the current directory;
    /// those outside the root are out of reach already). A path reserved
    /// this way need not exist yet. A root that lies inside a reserved path
    /// is refused.
    ///
    /// ```
    /// use toolreg_builtins::files::{FileError, FileOptions, FileTools, ReadArgs};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// std::fs::write(root.path().join("audit.jsonl"), "{}\n")?;
    /// let audit = root.path().join("audit.jsonl");
    /// let files = FileTools::with_reserved(root.path(), FileOptions::default(), &[audit])?;
    /// let refused = files.read(&ReadArgs::new("audit.jsonl"));
    /// assert!(matches!(refused, Err(FileError::Reserved { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_reserved(
        root: impl AsRef<Path>,
        options: FileOptions,
        reserved: &[PathBuf],
    ) -> Result<Self, FileError> {
        let given = root.as_ref();
        let shown = given.display().to_string();
        let root =
            std::fs::canonicalize(given).map_err(|e| FileError::Root { root: shown.clone(), reason: e.to_string() })?;
        if REFUSED_ROOTS.iter().any(|refused| root.starts_with(refused)) {
            return Err(FileError::Root {
                root: shown,
                reason: "it is inside /proc, /sys or /dev, which are kernel interfaces, not files".to_owned(),
            });
        }
        let reserved = Reserved::inside(&root, reserved)?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())
            .map_err(|e| FileError::Root { root: shown, reason: e.to_string() })?;
        Ok(FileTools { inner: Arc::new(Inner { dir, root, options, reserved }) })
    }

    /// The root directory, canonicalised.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The limits in force.
    pub fn options(&self) -> &FileOptions {
        &self.inner.options
    }

    pub(crate) fn dir(&self) -> &Dir {
        &self.inner.dir
    }

    pub(crate) fn reserved(&self) -> &Reserved {
        &self.inner.reserved
    }

    /// The paths reserved with [`FileTools::with_reserved`] that lie inside
    /// the root, as absolute paths.
    pub(crate) fn reserved_paths(&self) -> Vec<PathBuf> {
        self.inner.reserved.paths().map(|rel| self.inner.root.join(rel)).collect()
    }
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ReadArgs {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// First line to return, counting from 1 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// Most lines to return (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl ReadArgs {
    /// Read `path` from its first line.
    pub fn new(path: impl Into<String>) -> Self {
        ReadArgs { path: path.into(), offset: None, limit: None }
    }

    /// Start at line `offset` (from 1).
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Return at most `limit` lines.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// What `read_file` returns for a text file ([`FileTools::read`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResult {
    /// The path read, relative to the root.
    pub path: String,
    /// The lines, each as `<number>\t<text>\n`, numbers right-aligned to six places.
    pub content: String,
    /// Number of the first line returned (0 when none was).
    pub start_line: usize,
    /// Number of the last line returned (0 when none was).
    pub end_line: usize,
    /// Lines in the whole file, when it was small enough to count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<usize>,
    /// Size of the file in bytes.
    pub size: u64,
    /// Where to continue (`offset`) when more lines follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// Lines whose bytes are not valid UTF-8 (shown with U+FFFD in their
    /// place), at most the first 20.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub non_utf8_lines: Vec<usize>,
    /// Lines longer than the line limit, shown cut.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_lines: Vec<usize>,
}

/// What `read_file` read ([`FileTools::read_content`]): the numbered lines
/// of a text file, or an image or PDF as one content block.
///
/// As a tool result, text is [`ReadResult::into_output`]: a header line
/// and the numbered lines as text, the rest as the structured value; a
/// block is the result's one content block.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReadOutput {
    /// Lines of a text file.
    Text(ReadResult),
    /// An image ([`Content::Image`]) or a PDF
    /// ([`Content::File`], `application/pdf`, named after the file).
    Media(Content),
}

impl From<ReadOutput> for ToolOutput {
    fn from(read: ReadOutput) -> Self {
        match read {
            ReadOutput::Text(text) => text.into_output(),
            ReadOutput::Media(block) => ToolOutput::from(block),
        }
    }
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WriteArgs {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
    /// Create missing parent directories (default false).
    #[serde(default)]
    pub create_parents: bool,
}

impl WriteArgs {
    /// Write `content` to `path`.
    pub fn new(path: impl Into<String>, content: impl Into<String>) -> Self {
        WriteArgs { path: path.into(), content: content.into(), create_parents: false }
    }

    /// Create missing parent directories.
    pub fn create_parents(mut self, create: bool) -> Self {
        self.create_parents = create;
        self
    }
}

/// What `write_file` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteResult {
    /// The path written, relative to the root.
    pub path: String,
    /// Bytes written.
    pub bytes: usize,
    /// Whether the file is new.
    pub created: bool,
}

/// One replacement of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Edit {
    /// The exact text to replace, whitespace included.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every match instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

impl Edit {
    /// Replace the one match of `old` with `new`.
    pub fn new(old: impl Into<String>, new: impl Into<String>) -> Self {
        Edit { old_string: old.into(), new_string: new.into(), replace_all: false }
    }

    /// Replace every match.
    pub fn replace_all(mut self, all: bool) -> Self {
        self.replace_all = all;
        self
    }
}

/// Arguments of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EditArgs {
    /// Path of the file, relative to the workspace root.
    pub path: String,
    /// Replacements, applied in order; all succeed or the file is untouched.
    pub edits: Vec<Edit>,
}

impl EditArgs {
    /// Apply `edits` to `path`.
    pub fn new(path: impl Into<String>, edits: impl IntoIterator<Item = Edit>) -> Self {
        EditArgs { path: path.into(), edits: edits.into_iter().collect() }
    }
}

/// What `edit_file` returns (and [`FileTools::preview_edit`], without writing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EditResult {
    /// The path edited, relative to the root.
    pub path: String,
    /// How many replacements were made in all.
    pub replacements: usize,
    /// The change as a unified diff.
    pub diff: String,
}

/// Arguments of `list_files`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ListArgs {
    /// A glob in .gitignore syntax (`*.rs`, `src/**/*.toml`), matched against
    /// paths relative to `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Directory to list, relative to the root (default: the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Include hidden files and directories (default false).
    #[serde(default)]
    pub include_hidden: bool,
    /// Most paths to return (default and maximum: the configured cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl ListArgs {
    /// List everything under the root.
    pub fn new() -> Self {
        ListArgs::default()
    }

    /// Only paths matching this glob.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Self {
        self.pattern = Some(pattern.into());
        self
    }

    /// List under this directory.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Include hidden entries.
    pub fn include_hidden(mut self, include: bool) -> Self {
        self.include_hidden = include;
        self
    }
}

/// What `list_files` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListResult {
    /// Paths relative to the root, sorted; symbolic links are listed, never followed.
    pub files: Vec<String>,
    /// Whether the cap cut the list.
    pub truncated: bool,
    /// Ignore patterns not applied because the walk's budget was spent
    /// (4,000 patterns with 4,000 wildcards in all, each at most 512 bytes;
    /// more would make every listing slow): files they would have hidden
    /// may be listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ignore_patterns_skipped: usize,
}

/// Arguments of `search_files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SearchArgs {
    /// The regular expression (Rust `regex` syntax), matched line by line.
    pub regex: String,
    /// File or directory to search, relative to the root (default: the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only files matching this glob in .gitignore syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// Ignore case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
    /// Most matches to return (default and maximum: the configured cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl SearchArgs {
    /// Search the whole root for `regex`.
    pub fn new(regex: impl Into<String>) -> Self {
        SearchArgs { regex: regex.into(), path: None, glob: None, case_insensitive: false, limit: None }
    }

    /// Search under this path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Only files matching this glob.
    pub fn glob(mut self, glob: impl Into<String>) -> Self {
        self.glob = Some(glob.into());
        self
    }
}

/// What `search_files` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SearchResult {
    /// Matches as `file:line:text`, in path order.
    pub matches: Vec<String>,
    /// Whether the cap cut the list.
    pub truncated: bool,
    /// Files whose contents were searched.
    pub files_searched: usize,
    /// Files skipped as binary or too large.
    pub files_skipped: usize,
    /// Ignore patterns not applied because the walk's budget was spent (see
    /// [`ListResult::ignore_patterns_skipped`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ignore_patterns_skipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
