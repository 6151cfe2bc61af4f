//! Content blocks: what a tool result shows a model besides one JSON value —
//! text, images, audio, files, links to resources and embedded resources,
//! each with optional [`Annotations`].
//!
//! The blocks hold bytes, not base64: every provider wants base64 in its
//! JSON, but a file written to disk, a size limit and a MIME check want
//! the bytes, and bad base64 from outside is refused once, where it
//! arrives ([`Content::from_json`]). Their JSON form is MCP's content
//! block (the one shape every host of this crate already reads), plus a
//! `file` block for documents, which MCP carries as an embedded resource.
//!
//! [`Content`] deliberately implements no `Serialize`: a tool returning a
//! `Content` (or a [`ToolOutput`](super::ToolOutput)) returns blocks, while
//! any `Serialize` return is a JSON value. [`Content::to_json`] and
//! [`Content::from_json`] are its JSON.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One block of a tool result.
///
/// ```
/// use toolreg::exec::Content;
///
/// let png = Content::image(vec![0x89, b'P', b'N', b'G'], "image/png");
/// assert_eq!(png.to_json()["type"], "image");
/// assert_eq!(png.to_json()["data"], "iVBORw==");
/// assert_eq!(Content::from_json(&png.to_json()).unwrap(), png);
/// assert_eq!(png.summary(), "[image: image/png, 4 bytes]");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text(Text),
    /// An image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`, …).
    Image(Media),
    /// Audio (`audio/wav`, `audio/mpeg`, …).
    Audio(Media),
    /// A file or document (a PDF, a CSV, …), with its name when it has one.
    File(Media),
    /// A link to a resource the host can read (MCP `resource_link`).
    ResourceLink(ResourceLink),
    /// A resource with its contents (MCP `resource`).
    Resource(EmbeddedResource),
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Text {
    /// The text.
    pub text: String,
    /// Who it is for, and how much it matters.
    pub annotations: Option<Annotations>,
}

/// Bytes with a MIME type: an image, audio or a file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Media {
    /// The bytes.
    pub data: Bytes,
    /// The MIME type, such as `image/png`.
    pub mime_type: String,
    /// The file's name, when it has one (documents; ignored elsewhere).
    pub name: Option<String>,
    /// Who it is for, and how much it matters.
    pub annotations: Option<Annotations>,
}

/// A link to a resource: what MCP calls a `resource_link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Who it is for, and how much it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

/// A resource with its contents, text or bytes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its contents.
    pub contents: ResourceContents,
    /// Who it is for, and how much it matters.
    pub annotations: Option<Annotations>,
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Bytes),
}

/// Who a block is for and how much it matters, as MCP annotates blocks.
/// Formats that cannot say it leave it out; MCP passes it on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who should see the block: the user, the assistant (the model), or both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How much it matters, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the content last changed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// Annotations for this audience.
    pub fn for_audience(audience: impl IntoIterator<Item = Role>) -> Self {
        Annotations { audience: Some(audience.into_iter().collect()), ..Self::default() }
    }

    /// With this priority (0 to 1).
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }
}

/// A party of the conversation, for [`Annotations::audience`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human.
    User,
    /// The model.
    Assistant,
}

/// Why JSON is not a content block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    /// The block's `type` is not one this crate knows.
    #[error("unknown content block type `{0}`")]
    UnknownType(String),
    /// A field is missing or has the wrong type.
    #[error("content block `{kind}`: {reason}")]
    Invalid {
        /// The block's type.
        kind: String,
        /// What is wrong.
        reason: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(Text { text: text.into(), annotations: None })
    }

    /// An image block.
    pub fn image(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Content::Image(Media::new(data, mime_type))
    }

    /// An audio block.
    pub fn audio(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Content::Audio(Media::new(data, mime_type))
    }

    /// A file or document block, with its name.
    pub fn file(data: impl Into<Bytes>, mime_type: impl Into<String>, name: impl Into<String>) -> Self {
        Content::File(Media { name: Some(name.into()), ..Media::new(data, mime_type) })
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink(ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        })
    }

    /// A resource embedded with its text.
    pub fn resource_text(uri: impl Into<String>, text: impl Into<String>, mime_type: Option<String>) -> Self {
        Content::Resource(EmbeddedResource {
            uri: uri.into(),
            mime_type,
            contents: ResourceContents::Text(text.into()),
            annotations: None,
        })
    }

    /// A resource embedded with its bytes.
    pub fn resource_blob(uri: impl Into<String>, data: impl Into<Bytes>, mime_type: Option<String>) -> Self {
        Content::Resource(EmbeddedResource {
            uri: uri.into(),
            mime_type,
            contents: ResourceContents::Blob(data.into()),
            annotations: None,
        })
    }

    /// The block with these annotations.
    pub fn annotated(mut self, annotations: Annotations) -> Self {
        *self.annotations_mut() = Some(annotations);
        self
    }

    /// The block's annotations.
    pub fn annotations(&self) -> Option<&Annotations> {
        match self {
            Content::Text(t) => t.annotations.as_ref(),
            Content::Image(m) | Content::Audio(m) | Content::File(m) => m.annotations.as_ref(),
            Content::ResourceLink(l) => l.annotations.as_ref(),
            Content::Resource(r) => r.annotations.as_ref(),
        }
    }

    fn annotations_mut(&mut self) -> &mut Option<Annotations> {
        match self {
            Content::Text(t) => &mut t.annotations,
            Content::Image(m) | Content::Audio(m) | Content::File(m) => &mut m.annotations,
            Content::ResourceLink(l) => &mut l.annotations,
            Content::Resource(r) => &mut r.annotations,
        }
    }

    /// The block's type as its JSON names it: `text`, `image`, `audio`,
    /// `file`, `resource_link` or `resource`.
    pub fn kind(&self) -> &'static str {
        match self {
            Content::Text(_) => "text",
            Content::Image(_) => "image",
            Content::Audio(_) => "audio",
            Content::File(_) => "file",
            Content::ResourceLink(_) => "resource_link",
            Content::Resource(_) => "resource",
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The bytes the block holds (its text for text), for size limits.
    pub fn size(&self) -> usize {
        match self {
            Content::Text(t) => t.text.len(),
            Content::Image(m) | Content::Audio(m) | Content::File(m) => m.data.len(),
            Content::ResourceLink(l) => l.uri.len() + l.name.len(),
            Content::Resource(r) => match &r.contents {
                ResourceContents::Text(t) => t.len(),
                ResourceContents::Blob(b) => b.len(),
            },
        }
    }

    /// One line saying what the block is, for where it cannot be shown: a
    /// terminal, a provider that takes only text. A text block is its text.
    pub fn summary(&self) -> String {
        match self {
            Content::Text(t) => t.text.clone(),
            Content::Image(m) | Content::Audio(m) | Content::File(m) => {
                let name = m.name.as_deref().map(|n| format!("{n}, ")).unwrap_or_default();
                format!("[{}: {name}{}, {}]", self.kind(), m.mime_type, Size(m.data.len()))
            }
            Content::ResourceLink(l) => format!("[resource link: {} <{}>]", l.name, l.uri),
            Content::Resource(r) => match &r.contents {
                ResourceContents::Text(text) => format!("[resource <{}>]\n{text}", r.uri),
                ResourceContents::Blob(b) => format!(
                    "[resource <{}>: {}, {}]",
                    r.uri,
                    r.mime_type.as_deref().unwrap_or("application/octet-stream"),
                    Size(b.len())
                ),
            },
        }
    }

    /// The block as JSON: MCP's content block, plus `file`
    /// (`{"type": "file", "data", "mimeType", "name"}`).
    pub fn to_json(&self) -> Value {
        let mut block = match self {
            Content::Text(t) => json!({"type": "text", "text": t.text}),
            Content::Image(m) | Content::Audio(m) => {
                json!({"type": self.kind(), "data": BASE64.encode(&m.data), "mimeType": m.mime_type})
            }
            Content::File(m) => {
                let mut block = json!({"type": "file", "data": BASE64.encode(&m.data), "mimeType": m.mime_type});
                if let Some(name) = &m.name {
                    block["name"] = json!(name);
                }
                block
            }
            Content::ResourceLink(l) => {
                let mut block = serde_json::to_value(l).unwrap_or_else(|_| json!({}));
                block["type"] = json!("resource_link");
                return block;
            }
            Content::Resource(r) => json!({"type": "resource", "resource": r.contents_json()}),
        };
        if let Some(annotations) = self.annotations() {
            block["annotations"] = serde_json::to_value(annotations).unwrap_or_else(|_| json!({}));
        }
        block
    }

    /// A block from its JSON (see [`to_json`](Self::to_json)). Base64 is
    /// decoded here, so bad base64 is refused where it arrives.
    pub fn from_json(block: &Value) -> Result<Content, ContentError> {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        let invalid = |reason: &str| ContentError::Invalid { kind: kind.to_owned(), reason: reason.to_owned() };
        let string = |field: &str| -> Result<String, ContentError> {
            block
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| invalid(&format!("`{field}` must be a string")))
        };
        let annotations = match block.get("annotations") {
            None | Some(Value::Null) => None,
            Some(a) => Some(serde_json::from_value(a.clone()).map_err(|e| invalid(&format!("annotations: {e}")))?),
        };
        let media = || -> Result<Media, ContentError> {
            Ok(Media {
                data: decode(&string("data")?).map_err(|e| invalid(&e))?,
                mime_type: string("mimeType")?,
                name: block.get("name").and_then(Value::as_str).map(str::to_owned),
                annotations: annotations.clone(),
            })
        };
        Ok(match kind {
            "text" => Content::Text(Text { text: string("text")?, annotations }),
            "image" => Content::Image(media()?),
            "audio" => Content::Audio(media()?),
            "file" => Content::File(media()?),
            "resource_link" => {
                Content::ResourceLink(serde_json::from_value(block.clone()).map_err(|e| invalid(&e.to_string()))?)
            }
            "resource" => {
                let resource =
                    block.get("resource").and_then(Value::as_object).ok_or_else(|| invalid("no `resource`"))?;
                let uri = resource.get("uri").and_then(Value::as_str).ok_or_else(|| invalid("no `resource.uri`"))?;
                let mime_type = resource.get("mimeType").and_then(Value::as_str).map(str::to_owned);
                let contents = match (resource.get("text"), resource.get("blob")) {
                    (Some(Value::String(text)), _) => ResourceContents::Text(text.clone()),
                    (_, Some(Value::String(blob))) => ResourceContents::Blob(decode(blob).map_err(|e| invalid(&e))?),
                    _ => return Err(invalid("`resource` has neither `text` nor `blob`")),
                };
                Content::Resource(EmbeddedResource { uri: uri.to_owned(), mime_type, contents, annotations })
            }
            other => return Err(ContentError::UnknownType(other.to_owned())),
        })
    }
}

impl EmbeddedResource {
    /// MCP's `resource` object: `{uri, mimeType?, text | blob}`.
    pub fn contents_json(&self) -> Value {
        let mut resource = Map::new();
        resource.insert("uri".into(), json!(self.uri));
        if let Some(mime) = &self.mime_type {
            resource.insert("mimeType".into(), json!(mime));
        }
        match &self.contents {
            ResourceContents::Text(text) => resource.insert("text".into(), json!(text)),
            ResourceContents::Blob(blob) => resource.insert("blob".into(), json!(BASE64.encode(blob))),
        };
        Value::Object(resource)
    }
}

impl Media {
    /// Bytes with a MIME type, no name, no annotations.
    pub fn new(data: impl Into<Bytes>, mime_type: impl Into<String>) -> Self {
        Media { data: data.into(), mime_type: mime_type.into(), name: None, annotations: None }
    }

    /// The bytes as base64, as every provider's JSON carries them.
    pub fn base64(&self) -> String {
        BASE64.encode(&self.data)
    }

    /// The bytes as a `data:` URL (`data:image/png;base64,…`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.base64())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::text(text)
    }
}

/// Decode standard base64 (MCP's and every provider's), with a reason on failure.
pub(crate) fn decode(text: &str) -> Result<Bytes, String> {
    BASE64.decode(text).map(Bytes::from).map_err(|e| format!("invalid base64: {e}"))
}

/// A byte count for people: `512 bytes`, `1.5 KB`, `2.0 MB`.
struct Size(usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n if n < 1024 => write!(f, "{n} bytes"),
            n if n < 1024 * 1024 => write!(f, "{:.1} KB", n as f64 / 1024.0),
            n => write!(f, "{:.1} MB", n as f64 / (1024.0 * 1024.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_survives_its_json() {
        let blocks = [
            Content::text("hi").annotated(Annotations::for_audience([Role::User]).priority(0.5)),
            Content::image(vec![1, 2, 3], "image/png"),
            Content::audio(vec![4, 5], "audio/wav"),
            Content::file(b"%PDF-1.7".to_vec(), "application/pdf", "report.pdf"),
            Content::resource_link("file:///a.txt", "a.txt"),
            Content::resource_text("file:///b.txt", "bee", Some("text/plain".into())),
            Content::resource_blob("file:///c.bin", vec![0, 255], None),
        ];
        for block in blocks {
            let json = block.to_json();
            assert_eq!(Content::from_json(&json).unwrap(), block, "{json}");
        }
    }

    #[test]
    fn mcp_shapes_are_kept() {
        let link = Content::resource_link("file:///a", "a").to_json();
        assert_eq!(link, json!({"type": "resource_link", "uri": "file:///a", "name": "a"}));
        let text = Content::text("t").annotated(Annotations::for_audience([Role::Assistant])).to_json();
        assert_eq!(text, json!({"type": "text", "text": "t", "annotations": {"audience": ["assistant"]}}));
        let embedded = Content::resource_text("u", "x", None).to_json();
        assert_eq!(embedded, json!({"type": "resource", "resource": {"uri": "u", "text": "x"}}));
    }

    #[test]
    fn bad_blocks_are_typed_errors() {
        let bad_base64 = json!({"type": "image", "data": "not base64!", "mimeType": "image/png"});
        assert!(matches!(Content::from_json(&bad_base64), Err(ContentError::Invalid { .. })));
        let unknown = json!({"type": "hologram", "data": ""});
        assert_eq!(Content::from_json(&unknown), Err(ContentError::UnknownType("hologram".into())));
        let no_text = json!({"type": "text"});
        assert!(matches!(Content::from_json(&no_text), Err(ContentError::Invalid { .. })));
        let empty = json!({"type": "resource", "resource": {"uri": "u"}});
        assert!(Content::from_json(&empty).is_err());
    }

    #[test]
    fn summaries_name_what_is_left_out() {
        assert_eq!(
            Content::file(vec![0; 2048], "application/pdf", "a.pdf").summary(),
            "[file: a.pdf, application/pdf, 2.0 KB]"
        );
        assert_eq!(Content::resource_link("file:///x", "x").summary(), "[resource link: x <file:///x>]");
    }
}
