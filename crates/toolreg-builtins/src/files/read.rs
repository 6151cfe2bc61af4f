//! `read_file`, and opening regular files safely for every tool that reads.

use std::io::{BufRead, BufReader, Read};

use cap_std::fs::{File, FileType, Metadata, OpenOptions};

use toolreg::exec::{Content, ToolOutput};

use super::path::{RelPath, display};
use super::{FileError, FileTools, ReadArgs, ReadOutput, ReadResult};

/// Bytes looked at to tell binary from text.
const SNIFF_BYTES: usize = 8192;
/// Files up to this size have their lines counted to the end.
const COUNT_LIMIT: u64 = 64 * 1024 * 1024;
/// At most this many line numbers are listed in a result.
const LISTED_LINES: usize = 20;

impl FileTools {
    /// Open a regular file for reading, refusing anything else.
    ///
    /// The file is opened non-blocking, so a FIFO swapped in after any check
    /// cannot stall the call; its type is then read from the open handle,
    /// which is the object actually read.
    pub(crate) fn open_regular(&self, path: &RelPath, operation: &'static str) -> Result<(File, Metadata), FileError> {
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY);
        }
        let file = self.dir().open_with(path.for_dir(), &options).map_err(|e| {
            // Opening a socket fails with ENXIO: name what is there instead.
            #[cfg(unix)]
            if e.raw_os_error() == Some(nix::libc::ENXIO)
                && let Some(meta) = self.dir().metadata(path.for_dir()).ok().filter(|m| !m.is_file())
            {
                return FileError::NotAFile { path: path.shown.clone(), kind: kind_of(meta.file_type()) };
            }
            FileError::from_io(operation, &path.shown, &e)
        })?;
        let meta = file.metadata().map_err(|e| FileError::from_io(operation, &path.shown, &e))?;
        if !meta.is_file() {
            return Err(FileError::NotAFile { path: path.shown.clone(), kind: kind_of(meta.file_type()) });
        }
        Ok((file, meta))
    }

    /// Read lines of a text file: see [`ReadArgs`] and [`ReadResult`].
    ///
    /// Text only: an image or a PDF is refused as binary, as any binary file
    /// is. [`FileTools::read_content`], which the `read_file` tool runs,
    /// returns those as content blocks.
    pub fn read(&self, args: &ReadArgs) -> Result<ReadResult, FileError> {
        let (path, reader, size) = self.open_for_read(args)?;
        self.read_lines(args, path, reader, size)
    }

    /// What the `read_file` tool returns: the numbered lines of a text file
    /// exactly as [`FileTools::read`] gives them, or, for a PNG, JPEG, GIF or
    /// WebP image or a PDF, the whole file as one content block
    /// ([`Content::Image`], or [`Content::File`] with MIME type
    /// `application/pdf`, named after the file).
    ///
    /// The type is told by the file's first bytes, never by its name: a PNG
    /// called `notes.txt` is an image, and text called `logo.png` is read as
    /// text. An image larger than
    /// [`FileOptions::max_image_bytes`](super::FileOptions::max_image_bytes)
    /// or a PDF larger than
    /// [`FileOptions::max_pdf_bytes`](super::FileOptions::max_pdf_bytes) is
    /// refused with
    /// [`FileError::FileTooLarge`], which names the limit; at most the limit
    /// and one byte is ever read, however the file grows meanwhile.
    /// `offset` and `limit` apply to text only.
    ///
    /// ```
    /// use toolreg::exec::Content;
    /// use toolreg_builtins::files::{FileTools, ReadArgs, ReadOutput};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// std::fs::write(root.path().join("report.pdf"), b"%PDF-1.7\n%%EOF\n")?;
    /// let files = FileTools::open(root.path())?;
    /// match files.read_content(&ReadArgs::new("report.pdf"))? {
    ///     ReadOutput::Media(Content::File(pdf)) => {
    ///         assert_eq!(pdf.mime_type, "application/pdf");
    ///         assert_eq!(pdf.name.as_deref(), Some("report.pdf"));
    ///     }
    ///     other => panic!("expected a PDF block, got {other:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn read_content(&self, args: &ReadArgs) -> Result<ReadOutput, FileError> {
        let (path, mut reader, size) = self.open_for_read(args)?;
        let head = reader.fill_buf().map_err(|e| FileError::from_io("reading", &path.shown, &e))?;
        match media_type(head) {
            Some(mime) => self.read_media(&path, reader, size, mime).map(ReadOutput::Media),
            None => self.read_lines(args, path, reader, size).map(ReadOutput::Text),
        }
    }

    /// Check the arguments and open the file they name.
    fn open_for_read(&self, args: &ReadArgs) -> Result<(RelPath, BufReader<File>, u64), FileError> {
        let path = self.resolve(&args.path, false)?;
        let offset = args.offset.unwrap_or(1);
        if offset == 0 {
            return Err(FileError::BadOffset { offset });
        }
        let (file, meta) = self.open_regular(&path, "reading")?;
        Ok((path, BufReader::with_capacity(64 * 1024, file), meta.len()))
    }

    /// The whole of an image or PDF, within its limit, as a content block.
    fn read_media(
        &self,
        path: &RelPath,
        reader: impl Read,
        size: u64,
        mime: &'static str,
    ) -> Result<Content, FileError> {
        let options = self.options();
        let (limit, operation) = if mime == PDF {
            (options.max_pdf_bytes, "reading a PDF")
        } else {
            (options.max_image_bytes, "reading an image")
        };
        let bytes = read_all(reader, size, limit, path, operation)?;
        let name = || path.rel.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        // Only documents carry a name (see `Media::name`): an image block's
        // JSON has no place for one.
        Ok(if mime == PDF { Content::file(bytes, mime, name()) } else { Content::image(bytes, mime) })
    }

    /// The numbered lines of a text file; binary files are refused.
    fn read_lines(
        &self,
        args: &ReadArgs,
        path: RelPath,
        mut reader: BufReader<File>,
        size: u64,
    ) -> Result<ReadResult, FileError> {
        let offset = args.offset.unwrap_or(1);
        let limit = args.limit.unwrap_or(self.options().default_read_lines).max(1);
        let head = reader.fill_buf().map_err(|e| FileError::from_io("reading", &path.shown, &e))?;
        let sniff = &head[..head.len().min(SNIFF_BYTES)];
        if let Some(kind) = binary_kind(sniff) {
            return Err(FileError::Binary { path: path.shown, size, kind });
        }

        let options = self.options();
        let mut out = ReadResult {
            path: display(&path.rel),
            content: String::new(),
            start_line: 0,
            end_line: 0,
            total_lines: None,
            size,
            next_offset: None,
            non_utf8_lines: Vec::new(),
            cut_lines: Vec::new(),
        };
        let mut line = Vec::new();
        let mut number = 0usize;
        let mut stopped = false;
        loop {
            // Lines before `offset` are skipped without keeping a byte.
            let keep = if number + 1 < offset { 0 } else { options.max_line_bytes };
            let Some(length) =
                next_line(&mut reader, keep, &mut line).map_err(|e| FileError::from_io("reading", &path.shown, &e))?
            else {
                break;
            };
            number += 1;
            if number < offset {
                continue;
            }
            if number - offset >= limit {
                stopped = true;
                break;
            }
            let before = out.content.len();
            push_numbered(&mut out, number, &line, length, options.max_line_bytes);
            if out.content.len() > options.max_read_bytes && out.start_line != 0 {
                out.content.truncate(before);
                stopped = true;
                break;
            }
            if out.start_line == 0 {
                out.start_line = number;
            }
            out.end_line = number;
        }
        if stopped {
            out.next_offset = Some(out.end_line.max(offset - 1) + 1);
            if size <= COUNT_LIMIT {
                // `number` counts the line that stopped the read, shown or not.
                let rest = count_lines(&mut reader).map_err(|e| FileError::from_io("reading", &path.shown, &e))?;
                out.total_lines = Some(number + rest);
            }
        } else {
            out.total_lines = Some(number);
        }
        out.non_utf8_lines.truncate(LISTED_LINES);
        out.cut_lines.truncate(LISTED_LINES);
        Ok(out)
    }
}

impl ReadResult {
    /// The line a model reads above the numbered lines: the path, which
    /// lines these are of how many, and where to read on when more follow.
    ///
    /// ```
    /// use toolreg_builtins::files::{FileTools, ReadArgs};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let root = tempfile::tempdir()?;
    /// std::fs::write(root.path().join("a.txt"), "one\ntwo\nthree\n")?;
    /// let files = FileTools::open(root.path())?;
    /// assert_eq!(files.read(&ReadArgs::new("a.txt"))?.header(), "a.txt: lines 1-3 of 3");
    /// assert_eq!(
    ///     files.read(&ReadArgs::new("a.txt").limit(2))?.header(),
    ///     "a.txt: lines 1-2 of 3 (truncated; read on with offset 3)"
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn header(&self) -> String {
        let of = match self.total_lines {
            Some(total) => format!(" of {total}"),
            None => String::new(),
        };
        let mut header = match (self.start_line, self.total_lines) {
            (0, Some(0)) => format!("{}: empty file", self.path),
            (0, Some(total)) => format!("{}: no lines there; the file has {total}", self.path),
            (0, None) => format!("{}: no lines there", self.path),
            (start, _) if start == self.end_line => format!("{}: line {start}{of}", self.path),
            (start, _) => format!("{}: lines {start}-{}{of}", self.path, self.end_line),
        };
        if let Some(next) = self.next_offset {
            header.push_str(&format!(" (truncated; read on with offset {next})"));
        }
        if !self.non_utf8_lines.is_empty() {
            let lines: Vec<String> = self.non_utf8_lines.iter().map(usize::to_string).collect();
            header.push_str(&format!("; not UTF-8, shown with U+FFFD: line {}", lines.join(", ")));
        }
        header
    }

    /// As a tool result: the [header](Self::header) and the numbered lines
    /// as one text block, which is what most hosts hand their model; and the
    /// whole result, lines included, as the structured value — for programs,
    /// and for the hosts (Claude Code, codex) that hand their model the
    /// structured value instead of the text whenever there is one.
    pub fn into_output(self) -> ToolOutput {
        let mut text = self.header();
        text.push('\n');
        text.push_str(&self.content);
        // `ReadResult` holds only strings and integers, which JSON always represents.
        let value = serde_json::to_value(&self).unwrap_or_default();
        ToolOutput::from(Content::text(text)).with_value(value)
    }
}

/// Read the next line, keeping at most `keep` bytes of it in `line` (without
/// its `\n` or `\r\n`), and return its whole length, or `None` at the end.
///
/// The rest of a longer line is read and counted but not kept, so a line of
/// any length costs `keep` bytes of memory, not its length.
fn next_line(reader: &mut impl BufRead, keep: usize, line: &mut Vec<u8>) -> std::io::Result<Option<u64>> {
    line.clear();
    let mut length = 0u64;
    let mut last = None;
    let mut read_any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let (chunk, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], true),
            None => (buf, false),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if let Some(&b) = chunk.last() {
            last = Some(b);
        }
        length += chunk.len() as u64;
        let used = chunk.len() + usize::from(ended);
        reader.consume(used);
        if ended {
            break;
        }
    }
    if last == Some(b'\r') {
        length -= 1;
        if line.len() as u64 > length {
            line.pop();
        }
    }
    Ok(Some(length))
}

/// Append line `number`, of which `bytes` are the first bytes (all of them
/// when `length` is within `max_line`) and `length` its whole length.
fn push_numbered(out: &mut ReadResult, number: usize, bytes: &[u8], length: u64, max_line: usize) {
    use std::fmt::Write;
    let (shown, cut) = if length > max_line as u64 {
        (&bytes[..bytes.len().min(max_line)], length - max_line as u64)
    } else {
        (bytes, 0)
    };
    let text = match std::str::from_utf8(shown) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(e) if cut > 0 && e.error_len().is_none() => {
            // The cut fell inside a character: show the whole ones.
            std::borrow::Cow::Borrowed(std::str::from_utf8(&shown[..e.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => {
            if out.non_utf8_lines.len() <= LISTED_LINES {
                out.non_utf8_lines.push(number);
            }
            String::from_utf8_lossy(shown)
        }
    };
    let _ = write!(out.content, "{number:>6}\t{text}");
    if cut > 0 {
        if out.cut_lines.len() <= LISTED_LINES {
            out.cut_lines.push(number);
        }
        let _ = write!(out.content, " … [line cut: {cut} more bytes]");
    }
    out.content.push('\n');
}

fn count_lines(reader: &mut impl BufRead) -> std::io::Result<usize> {
    let mut count = 0;
    let mut last = b'\n';
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        count += buf.iter().filter(|&&b| b == b'\n').count();
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    if last != b'\n' {
        count += 1;
    }
    Ok(count)
}

/// Read a whole regular file of at most `limit` bytes; `size` is what its
/// metadata says, and at most `limit + 1` bytes are ever read.
pub(crate) fn read_all(
    file: impl Read,
    size: u64,
    limit: u64,
    path: &RelPath,
    operation: &'static str,
) -> Result<Vec<u8>, FileError> {
    if size > limit {
        return Err(FileError::FileTooLarge { path: path.shown.clone(), size, limit, operation });
    }
    // One byte of room past the size, so the end of the file is found
    // without growing the buffer.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    // The file may grow after the size was read; never take more than the limit.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| FileError::from_io(operation, &path.shown, &e))?;
    if bytes.len() as u64 > limit {
        return Err(FileError::FileTooLarge { path: path.shown.clone(), size: bytes.len() as u64, limit, operation });
    }
    Ok(bytes)
}

/// The MIME type of a PDF.
const PDF: &str = "application/pdf";

/// The MIME type of an image or PDF that `read_file` returns as a block,
/// told by its first bytes (its "magic number"), or `None`.
pub(crate) fn media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"%PDF-") {
        Some(PDF)
    } else {
        None
    }
}

/// What a file that looks binary is, or `None` for text. A NUL byte in the
/// first 8 KiB marks binary, as git and grep decide.
pub(crate) fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: [(&[u8], &str); 12] = [
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\xfd7zXZ\0", "xz archive"),
        (b"BZh", "bzip2 archive"),
        (b"(\xb5/\xfd", "zstd archive"),
    ];
    let head = &head[..head.len().min(SNIFF_BYTES)];
    for (magic, kind) in MAGIC {
        if head.starts_with(magic) && (head.contains(&0) || magic.len() >= 4 || std::str::from_utf8(head).is_err()) {
            return Some(kind);
        }
    }
    head.contains(&0).then_some("binary data")
}

/// A file type in words, for messages.
pub(crate) fn kind_of(file_type: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "FIFO";
        }
        if file_type.is_socket() {
            return "socket";
        }
        if file_type.is_char_device() {
            return "character device";
        }
        if file_type.is_block_device() {
            return "block device";
        }
    }
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else if file_type.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that grows after its size was read (here: without end) costs
    /// at most the limit and one byte, and is refused with the limit named.
    #[test]
    fn a_file_growing_past_its_limit_is_read_no_further() {
        let path = RelPath::parse("grows.png", false).unwrap();
        let mut endless = std::io::repeat(7);
        let err = read_all(&mut endless, 10, 64, &path, "reading an image").unwrap_err();
        assert_eq!(
            err,
            FileError::FileTooLarge { path: "grows.png".into(), size: 65, limit: 64, operation: "reading an image" }
        );
        let fits = read_all(&b"0123456789"[..], 10, 64, &path, "reading an image").unwrap();
        assert_eq!(fits, b"0123456789");
    }

    #[test]
    fn media_is_told_by_its_magic_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF87a.."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"%PDF-1.7"), Some("application/pdf"));
        for other in [&b""[..], b"RIFF\0\0\0\0WAVE", b"RIFF", b"GIF8", b"\x89PNG", b"PK\x03\x04", b"hello"] {
            assert_eq!(media_type(other), None, "{other:?}");
        }
    }
}
