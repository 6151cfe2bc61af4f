//! The lexical rules a path must pass before it reaches the directory handle.
//!
//! These checks only give clear errors early: confinement itself comes from
//! resolving every path through cap-std's [`Dir`](cap_std::fs::Dir), which
//! refuses anything (a symlink, a magic link, a path swapped mid-call) that
//! resolves outside the root.

use std::path::{Component, Path, PathBuf};

use super::FileError;

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
}
