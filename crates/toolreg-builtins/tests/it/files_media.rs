//! `read_file` on images and PDFs: real files, each returned as one content
//! block, told by their bytes rather than their names, and refused past
//! their size limit with the limit named.

use serde_json::json;
use toolreg::FunctionRegistry;
use toolreg::exec::Content;
use toolreg_builtins::files::{FileError, FileOptions, FileTools, ReadArgs, ReadOutput};

/// A 1×1 red PNG (IHDR, one zlib-compressed IDAT, IEND; CRCs correct).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90\x77\x53\xde\
\x00\x00\x00\x0cIDAT\x78\x9c\x63\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xae\x42\x60\x82";

/// A 1×1 grey JPEG (JFIF, progressive).
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x01\x00\x48\x00\x48\x00\x00\xff\xdb\x00\x43\x00\
\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
\xff\xc2\x00\x0b\x08\x00\x01\x00\x01\x01\x01\x11\x00\xff\xc4\x00\x14\x10\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
\x00\x00\x00\xff\xda\x00\x08\x01\x01\x00\x01\x3f\x10\xff\xd9";

/// A 1×1 transparent GIF89a.
const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\xff\xff\xff\x21\xf9\x04\x01\x00\x00\x00\x00\
\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b";

/// A 1×1 lossless WebP.
const WEBP: &[u8] =
    b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00";

/// A one-page PDF.
const PDF: &[u8] =
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n\
3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 3 3]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

fn setup() -> (tempfile::TempDir, FileTools) {
    let dir = tempfile::tempdir().unwrap();
    let tools = FileTools::open(dir.path()).unwrap();
    (dir, tools)
}

fn media(read: ReadOutput) -> Content {
    match read {
        ReadOutput::Media(block) => block,
        other => panic!("expected a block, got {other:?}"),
    }
}

#[test]
fn images_and_pdfs_come_back_whole_as_blocks() {
    let (dir, files) = setup();
    for (name, bytes, mime) in [
        ("a.png", PNG, "image/png"),
        ("b.jpg", JPEG, "image/jpeg"),
        ("c.gif", GIF, "image/gif"),
        ("d.webp", WEBP, "image/webp"),
    ] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        match media(files.read_content(&ReadArgs::new(name)).unwrap()) {
            Content::Image(image) => {
                assert_eq!(image.mime_type, mime, "{name}");
                assert_eq!(image.data.as_ref(), bytes, "{name}");
            }
            other => panic!("{name}: expected an image, got {other:?}"),
        }
    }
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/report.pdf"), PDF).unwrap();
    assert_eq!(
        media(files.read_content(&ReadArgs::new("docs/report.pdf")).unwrap()),
        Content::file(PDF.to_vec(), "application/pdf", "report.pdf")
    );
}

#[test]
fn the_bytes_decide_not_the_extension() {
    let (dir, files) = setup();
    // A PNG that says it is text, a JPEG that says it is a PNG.
    std::fs::write(dir.path().join("notes.txt"), PNG).unwrap();
    std::fs::write(dir.path().join("photo.png"), JPEG).unwrap();
    let Content::Image(png) = media(files.read_content(&ReadArgs::new("notes.txt")).unwrap()) else { panic!() };
    assert_eq!(png.mime_type, "image/png");
    let Content::Image(jpeg) = media(files.read_content(&ReadArgs::new("photo.png")).unwrap()) else { panic!() };
    assert_eq!(jpeg.mime_type, "image/jpeg");

    // Text named like an image or a PDF is read as text, numbered.
    std::fs::write(dir.path().join("logo.png"), "not an image\n").unwrap();
    std::fs::write(dir.path().join("fake.pdf"), "PDF-1.7 in words\n").unwrap();
    for name in ["logo.png", "fake.pdf"] {
        match files.read_content(&ReadArgs::new(name)).unwrap() {
            ReadOutput::Text(text) => assert!(text.content.starts_with("     1\t"), "{name}: {text:?}"),
            other => panic!("{name}: expected text, got {other:?}"),
        }
    }
    // A RIFF file that is not WebP (a WAV) and other binary files stay refused.
    std::fs::write(dir.path().join("sound.webp"), b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00").unwrap();
    assert!(matches!(files.read_content(&ReadArgs::new("sound.webp")), Err(FileError::Binary { .. })));
    std::fs::write(dir.path().join("app"), b"\x7fELF\x02\x01\x01\0\0\0").unwrap();
    assert!(matches!(files.read_content(&ReadArgs::new("app")), Err(FileError::Binary { kind: "ELF executable", .. })));
}

#[test]
fn text_reads_exactly_as_before() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
    let args = ReadArgs::new("f.txt").offset(2).limit(1);
    assert_eq!(files.read_content(&args).unwrap(), ReadOutput::Text(files.read(&args).unwrap()));
    // The text-only reader still refuses an image as binary.
    std::fs::write(dir.path().join("a.png"), PNG).unwrap();
    assert!(matches!(files.read(&ReadArgs::new("a.png")), Err(FileError::Binary { kind: "PNG image", .. })));
    // Argument checks come first, for images too.
    let zero = ReadArgs::new("a.png").offset(0);
    assert_eq!(files.read_content(&zero).unwrap_err(), FileError::BadOffset { offset: 0 });
}

#[test]
fn a_file_over_its_limit_is_refused_with_the_limit_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = FileOptions::default();
    assert_eq!((options.max_image_bytes, options.max_pdf_bytes), (5 << 20, 10 << 20));
    options.max_image_bytes = 64;
    options.max_pdf_bytes = 100;
    let files = FileTools::with_options(dir.path(), options).unwrap();

    let big = [PNG, &[0u8; 100]].concat();
    std::fs::write(dir.path().join("big.png"), &big).unwrap();
    let err = files.read_content(&ReadArgs::new("big.png")).unwrap_err();
    assert_eq!(
        err,
        FileError::FileTooLarge {
            path: "big.png".into(),
            size: big.len() as u64,
            limit: 64,
            operation: "reading an image"
        }
    );
    assert_eq!(err.to_string(), "`big.png` is 169 bytes, more than the limit of 64 bytes for reading an image");

    std::fs::write(dir.path().join("r.pdf"), PDF).unwrap();
    let err = files.read_content(&ReadArgs::new("r.pdf")).unwrap_err();
    assert!(err.to_string().contains("more than the limit of 100 bytes for reading a PDF"), "{err}");

    // Exactly at the limit is allowed.
    std::fs::write(dir.path().join("fits.png"), &big[..64]).unwrap();
    let Content::Image(fits) = media(files.read_content(&ReadArgs::new("fits.png")).unwrap()) else { panic!() };
    assert_eq!(fits.data.len(), 64);
}

/// Through the registry, as a model calls it: an image is the result's one
/// block; text is one text block of a header line and the numbered lines,
/// which is what every host passes its model, with the rest of the result
/// as the structured value.
#[tokio::test]
async fn the_tool_returns_a_block_for_an_image_and_numbered_lines_for_text() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("a.png"), PNG).unwrap();
    std::fs::write(dir.path().join("f.txt"), "hi\n").unwrap();
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, files.registrations()).unwrap();

    let out = registry.execute("read_file", json!({"path": "a.png"})).await.unwrap();
    assert_eq!(out.content.len(), 1);
    assert_eq!(out.content[0].summary(), "[image: image/png, 69 bytes]");
    assert!(out.value.is_null() && out.structured().is_none());

    let out = registry.execute("read_file", json!({"path": "f.txt"})).await.unwrap();
    assert_eq!(out.content, [Content::text("f.txt: line 1 of 1\n     1\thi\n")]);
    assert_eq!(out.text(), "f.txt: line 1 of 1\n     1\thi\n");
    assert_eq!(
        out.structured(),
        Some(
            &json!({"path": "f.txt", "content": "     1\thi\n", "start_line": 1, "end_line": 1, "total_lines": 1, "size": 3})
        )
    );

    // Part of a longer file: the header says which lines, of how many, and where to read on.
    std::fs::write(dir.path().join("long.txt"), "a\n\"b\"\nc\nd\n").unwrap();
    let out = registry.execute("read_file", json!({"path": "long.txt", "offset": 2, "limit": 2})).await.unwrap();
    assert_eq!(out.text(), "long.txt: lines 2-3 of 4 (truncated; read on with offset 4)\n     2\t\"b\"\n     3\tc\n");
    let value = out.structured().unwrap();
    assert_eq!(
        (value["start_line"].clone(), value["end_line"].clone(), value["next_offset"].clone()),
        (json!(2), json!(3), json!(4))
    );
    // Hosts that show their model the structured value see the lines too.
    assert!(value["content"].as_str().unwrap().contains("\t"), "the lines are in the structured value: {value}");
    std::fs::write(dir.path().join("empty.txt"), "").unwrap();
    let out = registry.execute("read_file", json!({"path": "empty.txt"})).await.unwrap();
    assert_eq!(out.text(), "empty.txt: empty file\n");

    let err = registry.execute("read_file", json!({"path": "missing.png"})).await.unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

/// `search_files` as a model reads it: a line saying what was found, then
/// the matches as lines of text, not a JSON array of escaped strings; the
/// whole result stays the structured value, for programs.
#[tokio::test]
async fn search_results_are_lines_of_text_with_the_result_as_the_structured_value() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("a.rs"), "let s = \"quoted\";\n\tindented\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "nothing here\n").unwrap();
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, files.registrations()).unwrap();

    let out = registry.execute("search_files", json!({"regex": "quoted|indented"})).await.unwrap();
    assert_eq!(out.text(), "2 matches in 2 files searched\na.rs:1:let s = \"quoted\";\na.rs:2:\tindented");
    let value = out.structured().unwrap();
    assert_eq!(value["matches"], json!(["a.rs:1:let s = \"quoted\";", "a.rs:2:\tindented"]));
    assert_eq!(value["truncated"], false);

    let out = registry.execute("search_files", json!({"regex": "absent"})).await.unwrap();
    assert_eq!(out.text(), "no matches in 2 files searched");
    let out = registry.execute("search_files", json!({"regex": "quoted|indented", "limit": 1})).await.unwrap();
    assert!(out.text().starts_with("1 match in "), "{}", out.text());
    assert!(out.text().contains("(truncated at the limit"), "{}", out.text());
}
