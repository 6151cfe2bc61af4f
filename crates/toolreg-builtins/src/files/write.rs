//! `write_file` and `edit_file`: atomic replacement inside the root.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use cap_std::fs::{Dir, OpenOptions, Permissions};
use similar::TextDiff;

use super::path::{RelPath, display};
use super::read::{binary_kind, kind_of, read_all};
use super::{EditArgs, EditResult, FileError, FileTools, WriteArgs, WriteResult};

/// Most edits one `edit_file` call applies.
const MAX_EDITS: usize = 100;
/// Most line numbers quoted in a match error.
const QUOTED_LINES: usize = 20;
/// Lines of context around each change in a diff.
const CONTEXT_LINES: usize = 3;
/// A diff that takes longer than this falls back to a coarser one.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);

/// Distinguishes the temporary files of concurrent writes in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The files being written in this process, so that writes to one file run
/// one at a time. The engine keeps the calls of one batch on one `path` in
/// order; this also covers calls that arrive apart, as an MCP server runs
/// them, and every `FileTools` on the same directory.
static WRITING: WriteLocks = WriteLocks { busy: Mutex::new(Vec::new()), freed: Condvar::new() };

/// Which file a lock is for: the parent directory's device and inode and the
/// name in it, so that two spellings of one path (through a link to a
/// directory, say) share one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LockKey {
    Inode(u64, u64, std::ffi::OsString),
    Path(std::path::PathBuf),
}

/// The keys locked now; a lock waits on `freed` until its key is absent.
/// Only files being written are listed, so it stays as small as the number
/// of writes in progress.
struct WriteLocks {
    busy: Mutex<Vec<LockKey>>,
    freed: Condvar,
}

/// Holds one file's lock until dropped.
struct WriteLock {
    key: LockKey,
}

impl WriteLocks {
    fn lock(&self, key: LockKey) -> WriteLock {
        // No code runs under this mutex that can panic, but a poisoned
        // list is still a correct list.
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while busy.contains(&key) {
            busy = self.freed.wait(busy).unwrap_or_else(PoisonError::into_inner);
        }
        busy.push(key.clone());
        WriteLock { key }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let mut busy = WRITING.busy.lock().unwrap_or_else(PoisonError::into_inner);
        busy.retain(|k| *k != self.key);
        drop(busy);
        WRITING.freed.notify_all();
    }
}

/// Where a write lands: the parent directory's handle and the file's name in it.
struct Target {
    parent: Dir,
    name: std::ffi::OsString,
    /// The existing file's permissions, kept across the replacement.
    existing: Option<Permissions>,
}

impl FileTools {
    /// Create or replace a file atomically: see [`WriteArgs`].
    pub fn write(&self, args: &WriteArgs) -> Result<WriteResult, FileError> {
        let path = self.resolve(&args.path, false)?;
        let limit = self.options().max_write_bytes;
        if args.content.len() > limit {
            return Err(FileError::ContentTooLarge { size: args.content.len(), limit });
        }
        let target = self.target(&path, args.create_parents)?;
        let _writing = WRITING.lock(target.key(&path));
        // What is at the name now, seen under the lock.
        let target = self.target(&path, false)?;
        let created = target.existing.is_none();
        replace(&target, args.content.as_bytes(), &path)?;
        Ok(WriteResult { path: display(&path.rel), bytes: args.content.len(), created })
    }

    /// The unified diff `write_file` would apply, without writing. A new
    /// file diffs against nothing.
    pub fn preview_write(&self, args: &WriteArgs) -> Result<String, FileError> {
        let path = self.resolve(&args.path, false)?;
        let limit = self.options().max_write_bytes;
        if args.content.len() > limit {
            return Err(FileError::ContentTooLarge { size: args.content.len(), limit });
        }
        let old = match self.read_text(&path, "previewing a write to") {
            Ok(text) => text,
            Err(FileError::NotFound { .. }) => String::new(),
            Err(e) => return Err(e),
        };
        Ok(unified_diff(&old, &args.content, &display(&path.rel)))
    }

    /// Apply exact replacements: see [`EditArgs`]. Either every edit applies
    /// and the file is replaced atomically, or nothing changes.
    pub fn edit(&self, args: &EditArgs) -> Result<EditResult, FileError> {
        let path = self.resolve(&args.path, false)?;
        let target = self.target(&path, false)?;
        // Read, change and replace under the file's lock: two edits that
        // read the same old text would otherwise each write it back with
        // only their own change, and one would be lost.
        let _writing = WRITING.lock(target.key(&path));
        let (new, result) = self.plan_edit(&path, args)?;
        let target = self.target(&path, false)?;
        replace(&target, new.as_bytes(), &path)?;
        Ok(result)
    }

    /// What [`edit`](Self::edit) would do — the replacements counted and the
    /// unified diff — without writing. An approver calls this to show the
    /// diff before a dangerous edit is allowed.
    pub fn preview_edit(&self, args: &EditArgs) -> Result<EditResult, FileError> {
        let path = self.resolve(&args.path, false)?;
        Ok(self.plan_edit(&path, args)?.1)
    }

    fn plan_edit(&self, path: &RelPath, args: &EditArgs) -> Result<(String, EditResult), FileError> {
        if args.edits.is_empty() || args.edits.len() > MAX_EDITS {
            return Err(FileError::EditCount { count: args.edits.len(), limit: MAX_EDITS });
        }
        for (i, edit) in args.edits.iter().enumerate() {
            if edit.old_string.is_empty() {
                return Err(FileError::EmptyOld { index: i + 1 });
            }
            if edit.old_string == edit.new_string {
                return Err(FileError::NoChange { index: i + 1 });
            }
        }
        let symlink = self.dir().symlink_metadata(path.for_dir()).map(|m| m.is_symlink()).unwrap_or(false);
        if symlink {
            return Err(FileError::Symlink { path: path.shown.clone() });
        }
        let old = self.read_text(path, "editing")?;
        let mut text = old.clone();
        let mut replacements = 0;
        for (i, edit) in args.edits.iter().enumerate() {
            let starts: Vec<usize> = text.match_indices(&edit.old_string).map(|(at, _)| at).collect();
            match starts.len() {
                0 => {
                    return Err(FileError::NoMatch {
                        path: path.shown.clone(),
                        index: i + 1,
                        candidates: candidates(&text, &edit.old_string),
                    });
                }
                1 => {}
                count if !edit.replace_all => {
                    return Err(FileError::ManyMatches {
                        path: path.shown.clone(),
                        index: i + 1,
                        count,
                        lines: line_numbers(&text, &starts),
                    });
                }
                _ => {}
            }
            replacements += starts.len();
            text = text.replace(&edit.old_string, &edit.new_string);
        }
        let diff = unified_diff(&old, &text, &display(&path.rel));
        Ok((text, EditResult { path: display(&path.rel), replacements, diff }))
    }

    /// Read a whole regular file as UTF-8 text, within the edit limit.
    fn read_text(&self, path: &RelPath, operation: &'static str) -> Result<String, FileError> {
        let (file, meta) = self.open_regular(path, operation)?;
        let bytes = read_all(file, meta.len(), self.options().max_edit_bytes, path, operation)?;
        if let Some(kind) = binary_kind(&bytes) {
            return Err(FileError::Binary { path: path.shown.clone(), size: bytes.len() as u64, kind });
        }
        String::from_utf8(bytes).map_err(|e| {
            let bytes = e.as_bytes();
            let at = e.utf8_error().valid_up_to();
            let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            FileError::NotUtf8 { path: path.shown.clone(), line }
        })
    }

    /// Open the parent directory through the root handle (creating it on
    /// request) and check what is at the file's name now.
    fn target(&self, path: &RelPath, create_parents: bool) -> Result<Target, FileError> {
        let name = path.rel.file_name().ok_or(FileError::EmptyPath)?.to_owned();
        let parent_rel = path.rel.parent().unwrap_or(Path::new(""));
        let parent = if parent_rel.as_os_str().is_empty() {
            self.dir().try_clone().map_err(|e| FileError::from_io("opening", &path.shown, &e))?
        } else {
            let shown_parent = display(parent_rel);
            match self.dir().open_dir(parent_rel) {
                Ok(dir) => dir,
                Err(e) if e.kind() == io::ErrorKind::NotFound && create_parents => {
                    self.dir()
                        .create_dir_all(parent_rel)
                        .map_err(|e| FileError::from_io("creating the directory", &shown_parent, &e))?;
                    self.dir().open_dir(parent_rel).map_err(|e| FileError::from_io("opening", &shown_parent, &e))?
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(FileError::ParentMissing { parent: shown_parent });
                }
                Err(e) => return Err(FileError::from_io("opening", &path.shown, &e)),
            }
        };
        let existing = match parent.symlink_metadata(&name) {
            Ok(meta) if meta.is_symlink() => return Err(FileError::Symlink { path: path.shown.clone() }),
            Ok(meta) if !meta.is_file() => {
                return Err(FileError::NotAFile { path: path.shown.clone(), kind: kind_of(meta.file_type()) });
            }
            Ok(meta) => Some(meta.permissions()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(FileError::from_io("writing", &path.shown, &e)),
        };
        Ok(Target { parent, name, existing })
    }
}

impl Target {
    fn key(&self, path: &RelPath) -> LockKey {
        #[cfg(unix)]
        if let Ok(meta) = self.parent.dir_metadata() {
            use cap_std::fs::MetadataExt;
            return LockKey::Inode(meta.dev(), meta.ino(), self.name.clone());
        }
        LockKey::Path(path.rel.clone())
    }
}

/// Write `content` to a new temporary file beside the target, flush it to
/// disk, then rename it over the target: readers see the old file or the new
/// one, never a mix, and a failed write leaves the old file as it was.
fn replace(target: &Target, content: &[u8], path: &RelPath) -> Result<(), FileError> {
    // A name of its own, not derived from the target's: a target name may
    // already be as long as a file name can be (255 bytes).
    let temp = format!(".toolreg-{}-{}.tmp", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let io_error = |e: io::Error| FileError::from_io("writing", &path.shown, &e);
    let mut file = target.parent.open_with(&temp, &options).map_err(io_error)?;
    let written = (|| {
        file.write_all(content)?;
        if let Some(permissions) = &target.existing {
            file.set_permissions(permissions.clone())?;
        }
        file.sync_all()?;
        drop(file);
        target.parent.rename(&temp, &target.parent, &target.name)
    })();
    if let Err(e) = written {
        let _ = target.parent.remove_file(&temp);
        return Err(io_error(e));
    }
    Ok(())
}

/// A unified diff of `old` to `new`, headed `a/<path>` and `b/<path>`.
pub(crate) fn unified_diff(old: &str, new: &str, path: &str) -> String {
    let diff = TextDiff::configure().timeout(DIFF_DEADLINE).diff_lines(old, new);
    diff.unified_diff().context_radius(CONTEXT_LINES).header(&format!("a/{path}"), &format!("b/{path}")).to_string()
}

/// Line numbers (from 1) of the byte offsets `starts`, which are ascending.
fn line_numbers(text: &str, starts: &[usize]) -> Vec<usize> {
    let mut lines = Vec::with_capacity(starts.len().min(QUOTED_LINES));
    let mut line = 1;
    let mut from = 0;
    for &at in starts.iter().take(QUOTED_LINES) {
        line += text.as_bytes()[from..at].iter().filter(|&&b| b == b'\n').count();
        from = at;
        lines.push(line);
    }
    lines
}

/// Lines that contain the first non-blank line of `old`, trimmed: where the
/// model probably meant, when whitespace or a neighbouring line differs.
fn candidates(text: &str, old: &str) -> Vec<usize> {
    let Some(first) = old.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return Vec::new();
    };
    text.lines().enumerate().filter(|(_, line)| line.contains(first)).map(|(i, _)| i + 1).take(QUOTED_LINES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_of_matches() {
        let text = "a\nb a\nc\na";
        let starts: Vec<usize> = text.match_indices('a').map(|(i, _)| i).collect();
        assert_eq!(line_numbers(text, &starts), [1, 2, 4]);
        assert_eq!(candidates("x\n  foo bar\nfoo\n", "foo bar \n zzz"), [2]);
    }
}
