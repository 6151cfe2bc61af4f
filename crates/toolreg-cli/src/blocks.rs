//! Content blocks on a terminal: text as it is, every other block as its
//! one-line summary, and, for `toolreg call --out DIR`, each block that
//! holds bytes saved to a file in DIR.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolreg::exec::{Content, ResourceContents, ToolOutput};

use crate::{CliError, write_error};

/// Print what the model reads of `output`: its value (a string as it is,
/// anything else as pretty JSON) when it has no blocks; otherwise each block
/// on its own lines, text as text and the rest as [`Content::summary`].
/// With `out`, each block with bytes is also written to a file in that
/// directory (created if missing, and only when there is such a block),
/// replacing any file of that name, and its line says where.
pub(crate) fn print(output: &ToolOutput, out: Option<&Path>) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    if output.content.is_empty() {
        let text = match &output.value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        return writeln!(stdout, "{text}").map_err(write_error);
    }
    let mut used = HashSet::new();
    for (index, block) in output.content.iter().enumerate() {
        let line = match (out, bytes_of(block)) {
            (Some(dir), Some((bytes, mime, name))) => {
                if used.is_empty() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| CliError::new(format!("cannot create the directory {}: {e}", dir.display())))?;
                }
                let name = file_name(index + 1, mime, name, &mut used);
                let path = save(dir, &name, bytes)?;
                format!("{} saved to {}", block.summary(), path.display())
            }
            _ => block.summary(),
        };
        writeln!(stdout, "{line}").map_err(write_error)?;
    }
    Ok(())
}

/// The bytes of a block that holds some, with their MIME type and the
/// block's own name: images, audio, files and embedded binary resources.
fn bytes_of(block: &Content) -> Option<(&[u8], &str, Option<&str>)> {
    match block {
        Content::Image(m) | Content::Audio(m) | Content::File(m) => Some((&m.data, &m.mime_type, m.name.as_deref())),
        Content::Resource(r) => match &r.contents {
            ResourceContents::Blob(blob) => {
                Some((blob, r.mime_type.as_deref().unwrap_or("application/octet-stream"), None))
            }
            ResourceContents::Text(_) => None,
        },
        _ => None,
    }
}

/// The file a block is saved to: its own name when it is a safe one (the
/// last part of it, not hidden, no control characters, not taken by an
/// earlier block of this result), else `block-<n>.<extension of its MIME
/// type>`. A block's name comes from the tool, possibly a remote server,
/// so it never picks a directory.
fn file_name(n: usize, mime: &str, name: Option<&str>, used: &mut HashSet<String>) -> String {
    let own = name
        .and_then(|name| name.rsplit(['/', '\\']).next())
        .filter(|name| {
            !name.is_empty() && name.len() <= 200 && !name.starts_with('.') && !name.chars().any(char::is_control)
        })
        .map(str::to_owned);
    if let Some(own) = own
        && used.insert(own.clone())
    {
        return own;
    }
    let ext = extension(mime);
    let mut candidate = format!("block-{n}.{ext}");
    let mut again = 0;
    while !used.insert(candidate.clone()) {
        again += 1;
        candidate = format!("block-{n}-{again}.{ext}");
    }
    candidate
}

/// A file extension for a MIME type (`bin` for one not listed).
fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "text/html" => "html",
        "text/markdown" => "md",
        _ => "bin",
    }
}

/// Write `bytes` to `dir/name`: into a new temporary file beside it, then
/// renamed into place, so a link already at that name is replaced, never
/// followed, and a failed write leaves no half file.
fn save(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, CliError> {
    let path = dir.join(name);
    let temporary = dir.join(format!(".{name}.{}.part", std::process::id()));
    let failed = |e: std::io::Error| CliError::new(format!("cannot write {}: {e}", path.display()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&temporary, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(failed(e));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_block_when_safe_and_never_pick_a_directory() {
        let mut used = HashSet::new();
        assert_eq!(file_name(1, "image/png", Some("chart.png"), &mut used), "chart.png");
        // Taken by an earlier block: numbered instead.
        assert_eq!(file_name(2, "image/png", Some("chart.png"), &mut used), "block-2.png");
        assert_eq!(file_name(3, "application/pdf", Some("../../etc/passwd"), &mut used), "passwd");
        for bad in ["..", ".bashrc", "", "a\nb", "dir/", "C:\\x\\..", "\u{7}bell"] {
            assert_eq!(file_name(4, "audio/wav", Some(bad), &mut HashSet::new()), "block-4.wav", "{bad:?}");
        }
        assert_eq!(file_name(5, "image/jpeg; q=1", None, &mut used), "block-5.jpg");
        assert_eq!(file_name(6, "application/x-unknown", None, &mut used), "block-6.bin");
        used.insert("block-7.gif".into());
        assert_eq!(file_name(7, "image/gif", None, &mut used), "block-7-1.gif");
    }
}
