//! [`FileError`]: every way a file tool can refuse or fail, each naming its rule.

use std::io;

/// Why a file tool refused a call or could not finish it.
///
/// The text of each variant names the rule that was applied, so a model can
/// correct its call; none of them leaves a change behind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The path was empty.
    #[error("the path is empty: name a file relative to the workspace root")]
    EmptyPath,
    /// The path contains a NUL byte, which no file name may contain.
    #[error("path {path:?} contains a NUL byte, which no file name may contain")]
    NulByte {
        /// The path as given.
        path: String,
    },
    /// The path is absolute; paths are relative to the workspace root.
    #[error("path `{path}` is absolute: paths are relative to the workspace root")]
    AbsolutePath {
        /// The path as given.
        path: String,
    },
    /// The path contains a `..` component.
    #[error("path `{path}` contains `..`: paths may not climb out of the workspace root")]
    ParentComponent {
        /// The path as given.
        path: String,
    },
    /// The path is longer than the limit.
    #[error("path is {len} bytes long, more than the limit of {limit}")]
    PathTooLong {
        /// Length of the path in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Resolving the path led outside the root, through a symbolic link.
    #[error("path `{path}` leads outside the workspace root through a symbolic link, which is refused")]
    OutsideRoot {
        /// The path as given.
        path: String,
    },
    /// The path is, or leads to, the host's own files: its state directory
    /// (key, store), its audit file, or any `.toolreg` directory. No tool
    /// reads, lists or changes them.
    #[error(
        "`{path}` is the host's own state (its key, store or audit record), which no tool may read, list or change"
    )]
    Reserved {
        /// The path as given.
        path: String,
    },
    /// A write or edit named a symbolic link; only regular files are changed.
    #[error("`{path}` is a symbolic link: write_file and edit_file change regular files only, not links")]
    Symlink {
        /// The path as given.
        path: String,
    },
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The path names something other than a regular file (a directory, a
    /// device, a FIFO, a socket).
    #[error("`{path}` is a {kind}, not a regular file: only regular files are read or written")]
    NotAFile {
        /// The path as given.
        path: String,
        /// What it is instead.
        kind: &'static str,
    },
    /// The path was expected to be a directory.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// The file is binary and is not shown as text.
    #[error("`{path}` is a binary file ({kind}, {size} bytes) and is not shown as text")]
    Binary {
        /// The path as given.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// What it looks like (`PNG image`, `ELF executable`, `binary data`).
        kind: &'static str,
    },
    /// The file is larger than the tool handles.
    #[error("`{path}` is {size} bytes, more than the limit of {limit} bytes for {operation}")]
    FileTooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
        /// Which operation has the limit.
        operation: &'static str,
    },
    /// The content to write is larger than the limit.
    #[error("the content is {size} bytes, more than the write limit of {limit} bytes")]
    ContentTooLarge {
        /// Size of the content in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The file is not valid UTF-8, so it cannot be edited as text.
    #[error("`{path}` is not valid UTF-8 (first invalid byte on line {line}), so it cannot be edited as text")]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// The first line with an invalid byte.
        line: usize,
    },
    /// The parent directory is missing and was not to be created.
    #[error("the parent directory `{parent}` does not exist: pass create_parents: true to create it")]
    ParentMissing {
        /// The missing parent, relative to the root.
        parent: String,
    },
    /// A line offset of zero: lines count from 1.
    #[error("offset {offset} is not a line number: lines count from 1")]
    BadOffset {
        /// The offset given.
        offset: usize,
    },
    /// An edit list was empty or too long.
    #[error("edit_file takes 1 to {limit} edits, got {count}")]
    EditCount {
        /// How many edits were given.
        count: usize,
        /// The most allowed.
        limit: usize,
    },
    /// An edit's `old_string` is empty.
    #[error("edit {index}: old_string is empty; quote the exact text to replace")]
    EmptyOld {
        /// The edit's position, from 1.
        index: usize,
    },
    /// An edit's `old_string` and `new_string` are the same.
    #[error("edit {index}: old_string and new_string are the same, so the edit changes nothing")]
    NoChange {
        /// The edit's position, from 1.
        index: usize,
    },
    /// An edit's `old_string` was not found.
    #[error("edit {index}: old_string was not found in `{path}`{}", candidates_text(candidates))]
    NoMatch {
        /// The path as given.
        path: String,
        /// The edit's position, from 1.
        index: usize,
        /// Lines that contain the first line of `old_string`, trimmed.
        candidates: Vec<usize>,
    },
    /// An edit's `old_string` matched more than once without `replace_all`.
    #[error(
        "edit {index}: old_string matches {count} times in `{path}` (lines {}); quote more surrounding text so it matches once, or set replace_all: true",
        join_lines(lines)
    )]
    ManyMatches {
        /// The path as given.
        path: String,
        /// The edit's position, from 1.
        index: usize,
        /// How many matches there are.
        count: usize,
        /// The line of each match (at most the first 20).
        lines: Vec<usize>,
    },
    /// A regular expression did not compile.
    #[error("invalid regular expression: {message}")]
    InvalidRegex {
        /// The compiler's message.
        message: String,
    },
    /// A regular expression would compile to an automaton past the limit:
    /// searching with it could take seconds per file (a nested or repeated
    /// optional part, `(?:a?){3000}`, a large counted repetition of a
    /// Unicode class).
    #[error(
        "the regular expression is too large: it compiles to more than {limit} bytes; use fewer or smaller \
         repetitions (`{{n,m}}` counts, nested optional parts) or ASCII classes such as `[0-9A-Za-z_]`"
    )]
    RegexTooLarge {
        /// The limit, in bytes of compiled automaton.
        limit: usize,
    },
    /// A glob pattern did not compile.
    #[error("invalid glob pattern `{pattern}`: {message}")]
    InvalidGlob {
        /// The pattern as given.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// The operating system refused access.
    #[error("permission denied for `{path}`")]
    PermissionDenied {
        /// The path as given.
        path: String,
    },
    /// The workspace root cannot be used.
    #[error("the workspace root `{root}` cannot be used: {reason}")]
    Root {
        /// The root as given.
        root: String,
        /// Why.
        reason: String,
    },
    /// Any other I/O failure.
    #[error("{operation} `{path}` failed: {message}")]
    Io {
        /// What was being done.
        operation: &'static str,
        /// The path as given.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

fn candidates_text(candidates: &[usize]) -> String {
    if candidates.is_empty() {
        "; no line contains its first line either, so read the file again and quote it exactly".to_owned()
    } else {
        format!(
            "; lines that contain its first line: {} (check whitespace and the lines around)",
            join_lines(candidates)
        )
    }
}

fn join_lines(lines: &[usize]) -> String {
    lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

/// cap-std's message for a path that resolves outside its directory.
const ESCAPE_MESSAGE: &str = "a path led outside of the filesystem";

impl FileError {
    /// Map an I/O error on `path` to the rule it broke.
    pub(crate) fn from_io(operation: &'static str, path: &str, error: &io::Error) -> Self {
        let path = path.to_owned();
        if is_escape(error) {
            return FileError::OutsideRoot { path };
        }
        match error.kind() {
            io::ErrorKind::NotFound => FileError::NotFound { path },
            io::ErrorKind::PermissionDenied => FileError::PermissionDenied { path },
            io::ErrorKind::NotADirectory => FileError::NotADirectory { path },
            _ => FileError::Io { operation, path, message: error.to_string() },
        }
    }
}

/// Whether cap-std refused the path because it resolves outside the root
/// (a symlink pointing out, a magic link, or a rename across the boundary).
fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied
        && error.get_ref().is_some_and(|inner| inner.to_string() == ESCAPE_MESSAGE)
}
