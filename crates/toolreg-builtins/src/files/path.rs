//! The rules a path must pass before a file tool touches it: the lexical
//! rules, and the host's own files (its [`Reserved`] paths), which no file
//! tool reaches.
//!
//! The lexical checks only give clear errors early: confinement to the root
//! itself comes from resolving every path through cap-std's
//! [`Dir`](cap_std::fs::Dir), which refuses anything (a symlink, a magic
//! link, a path swapped mid-call) that resolves outside the root.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{FileError, FileTools};

/// The directory name toolreg has kept host state under (`ROOT/.toolreg/`):
/// reserved wherever it appears, at any depth and in any ASCII case (a
/// case-insensitive file system finds `.TOOLREG` too).
pub const RESERVED_NAME: &str = ".toolreg";

/// Longest path accepted, in bytes (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;

/// A path checked against the lexical rules: relative, no `..`, no NUL.
#[derive(Debug, Clone)]
pub(crate) struct RelPath {
    /// The path as the model gave it, for messages.
    pub(crate) shown: String,
    /// The normalised relative path; empty for the root itself.
    pub(crate) rel: PathBuf,
}

impl RelPath {
    /// Check `path`; `allow_root` lets `""` and `"."` name the root directory.
    pub(crate) fn parse(path: &str, allow_root: bool) -> Result<RelPath, FileError> {
        let shown = path.to_owned();
        if path.len() > MAX_PATH_BYTES {
            return Err(FileError::PathTooLong { len: path.len(), limit: MAX_PATH_BYTES });
        }
        if path.contains('\0') {
            return Err(FileError::NulByte { path: shown });
        }
        if path.is_empty() && !allow_root {
            return Err(FileError::EmptyPath);
        }
        let as_path = Path::new(path);
        let mut rel = PathBuf::new();
        for component in as_path.components() {
            match component {
                Component::Normal(part) => rel.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(FileError::ParentComponent { path: shown }),
                Component::RootDir | Component::Prefix(_) => return Err(FileError::AbsolutePath { path: shown }),
            }
        }
        if rel.as_os_str().is_empty() && !allow_root {
            return Err(FileError::NotAFile { path: shown, kind: "directory" });
        }
        Ok(RelPath { shown, rel })
    }

    /// The path to hand to the directory handle (`.` for the root).
    pub(crate) fn for_dir(&self) -> &Path {
        if self.rel.as_os_str().is_empty() { Path::new(".") } else { &self.rel }
    }
}

/// The host's own files inside the root (its state directory, an audit
/// file, a store), as paths relative to the canonical root, compared
/// component by component, ASCII case ignored. Every directory named
/// [`RESERVED_NAME`] is reserved besides.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reserved {
    inside: Vec<PathBuf>,
}

impl Reserved {
    /// The paths of `given` (absolute, or relative to the current directory)
    /// that lie inside `root` (canonical), resolved as far as they exist, so
    /// that a path spelled through a symbolic link or not made yet is caught
    /// all the same. A root that lies inside one of them is refused: every
    /// file under it would be the host's.
    pub(crate) fn inside(root: &Path, given: &[PathBuf]) -> Result<Reserved, FileError> {
        let mut inside = Vec::new();
        for path in given {
            let real = real_path(path);
            if root.starts_with(&real) {
                return Err(FileError::Root {
                    root: root.display().to_string(),
                    reason: format!("it lies inside {}, which holds the host's own state", real.display()),
                });
            }
            if let Ok(rel) = real.strip_prefix(root) {
                inside.push(rel.to_path_buf());
            }
        }
        Ok(Reserved { inside })
    }

    /// The reserved paths inside the root, relative to it.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &Path> {
        self.inside.iter().map(PathBuf::as_path)
    }

    /// Whether `rel` (relative to the root, no `..`) is or lies under a
    /// reserved path.
    pub(crate) fn covers(&self, rel: &Path) -> bool {
        rel.components().any(|c| c.as_os_str().eq_ignore_ascii_case(RESERVED_NAME))
            || self.inside.iter().any(|reserved| starts_with_ignoring_case(rel, reserved))
    }
}

/// `path` made absolute with every symbolic link resolved, as far as it
/// exists; the missing rest is appended as given.
fn real_path(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return missing.iter().rev().fold(real, |acc, part: &&OsStr| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

fn starts_with_ignoring_case(path: &Path, prefix: &Path) -> bool {
    let mut parts = path.components();
    prefix.components().all(|p| parts.next().is_some_and(|c| c.as_os_str().eq_ignore_ascii_case(p.as_os_str())))
}

impl FileTools {
    /// The one door every file tool's path goes through: the lexical rules
    /// ([`RelPath::parse`]), then the host's reserved paths, both as the path
    /// is written and where it leads through symbolic links inside the root
    /// (a link `notes -> .toolreg/key` is refused as the key is).
    pub(crate) fn resolve(&self, path: &str, allow_root: bool) -> Result<RelPath, FileError> {
        let parsed = RelPath::parse(path, allow_root)?;
        if self.reserved().covers(&parsed.rel) || self.real(&parsed.rel).is_some_and(|r| self.reserved().covers(&r)) {
            return Err(FileError::Reserved { path: parsed.shown });
        }
        Ok(parsed)
    }

    /// Where `rel` leads with every symbolic link resolved through the root's
    /// handle, as far as it exists (the missing rest appended as written);
    /// `None` when it cannot be told (it leads outside the root, say, which
    /// opening it then refuses).
    pub(crate) fn real(&self, rel: &Path) -> Option<PathBuf> {
        let mut missing = Vec::new();
        let mut existing = rel;
        loop {
            if existing.as_os_str().is_empty() {
                return Some(missing.iter().rev().collect());
            }
            match self.dir().canonicalize(existing) {
                Ok(real) => return Some(missing.iter().rev().fold(real, |acc, part: &&OsStr| acc.join(part))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing.push(existing.file_name()?);
                    existing = existing.parent()?;
                }
                Err(_) => return None,
            }
        }
    }
}

/// A relative path as text with `/` separators, for results.
pub(crate) fn display(path: &Path) -> String {
    let mut out = String::new();
    for (i, part) in path.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&part.as_os_str().to_string_lossy());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_rules() {
        assert!(matches!(RelPath::parse("/etc/passwd", false), Err(FileError::AbsolutePath { .. })));
        assert!(matches!(RelPath::parse("a/../../b", false), Err(FileError::ParentComponent { .. })));
        assert!(matches!(RelPath::parse("a\0b", false), Err(FileError::NulByte { .. })));
        assert!(matches!(RelPath::parse("", false), Err(FileError::EmptyPath)));
        assert!(matches!(RelPath::parse(".", false), Err(FileError::NotAFile { .. })));
        assert_eq!(RelPath::parse("./a//b/", false).unwrap().rel, PathBuf::from("a/b"));
        assert_eq!(RelPath::parse("", true).unwrap().for_dir(), Path::new("."));
        let long = "a/".repeat(MAX_PATH_BYTES);
        assert!(matches!(RelPath::parse(&long, false), Err(FileError::PathTooLong { .. })));
    }

    #[test]
    fn reserved_paths_are_matched_by_component_ignoring_case() {
        let reserved = Reserved { inside: vec![PathBuf::from("state/toolreg"), PathBuf::from("audit.jsonl")] };
        for path in
            [".toolreg", ".toolreg/key", "a/.TOOLREG/store.db", "state/toolreg/key", "State/Toolreg", "audit.jsonl"]
        {
            assert!(reserved.covers(Path::new(path)), "{path}");
        }
        for path in ["", "state", "state/toolreg-old", ".toolreg-1-2.tmp", "audit.jsonl.bak", "x/audit.jsonl"] {
            assert!(!reserved.covers(Path::new(path)), "{path}");
        }
    }
}
