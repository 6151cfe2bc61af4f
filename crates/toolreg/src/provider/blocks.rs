//! What the formats share to render a result's content blocks: which
//! results need more than text, a block's bytes whatever block holds them,
//! MIME checks, and the two ways a format walks the blocks — in the tool
//! result itself ([`inline`]), or with what the tool result cannot carry
//! moved to one user message after the batch ([`follow_up`]).

use std::borrow::Cow;

use serde_json::Value;

use super::{BlockFallback, Fallback, RenderedResults, result_text};
use crate::exec::{Content, Media, ResourceContents, ToolOutput, ToolResult};

/// The image types every provider with images takes (Anthropic, OpenAI,
/// Bedrock, Ollama).
pub(crate) const WEB_IMAGES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The output of a result that has blocks other than text: what a format
/// renders block by block. `None` (a failure, a plain value, text blocks
/// only) means the text rendering every format has always had.
pub(crate) fn rich(result: &ToolResult) -> Option<&ToolOutput> {
    result.outcome.as_ref().ok().filter(|output| !output.is_text())
}

/// The bytes of a block that holds bytes: an image, audio or a file, or an
/// embedded resource with a blob (named after the last part of its URI).
/// Which provider block it becomes is decided by its MIME type.
pub(crate) fn media(block: &Content) -> Option<Cow<'_, Media>> {
    match block {
        Content::Image(m) | Content::Audio(m) | Content::File(m) => Some(Cow::Borrowed(m)),
        Content::Resource(r) => match &r.contents {
            ResourceContents::Blob(data) => {
                let mime = r.mime_type.as_deref().unwrap_or("application/octet-stream");
                let name = r.uri.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(&r.uri);
                Some(Cow::Owned(Media { name: Some(name.to_owned()), ..Media::new(data.clone(), mime) }))
            }
            ResourceContents::Text(_) => None,
        },
        _ => None,
    }
}

/// `mime` as it is spelled in `accepted`, if it is one of them (any case,
/// parameters such as `; charset=` ignored).
pub(crate) fn accepted(mime: &str, accepted: &[&'static str]) -> Option<&'static str> {
    let essence = essence(mime);
    accepted.iter().copied().find(|a| a.eq_ignore_ascii_case(essence))
}

/// The type and subtype of a MIME type, without parameters.
pub(crate) fn essence(mime: &str) -> &str {
    mime.split(';').next().unwrap_or_default().trim()
}

/// Whether a MIME type is of this top-level type (`image`, `audio`, `text`).
pub(crate) fn is(mime: &str, top: &str) -> bool {
    essence(mime).split('/').next().is_some_and(|t| t.eq_ignore_ascii_case(top))
}

/// A file's name for a provider that wants one: its own, or `file`.
pub(crate) fn file_name(media: &Media) -> &str {
    media.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("file")
}

/// The blocks of one result in the tool result itself: text blocks through
/// `text`, the rest through `native`, or, where `native` cannot carry a
/// block, as its summary text, reported as [`Fallback::Summary`].
pub(crate) fn inline<V>(
    call_id: &str,
    output: &ToolOutput,
    fallbacks: &mut Vec<BlockFallback>,
    mut text: impl FnMut(String) -> V,
    mut native: impl FnMut(&Content) -> Option<V>,
) -> Vec<V> {
    output
        .content
        .iter()
        .map(|block| match block {
            Content::Text(t) => text(t.text.clone()),
            other => native(other).unwrap_or_else(|| {
                fallbacks.push(BlockFallback::new(call_id, other, Fallback::Summary));
                text(other.summary())
            }),
        })
        .collect()
}

/// The rendering of formats whose tool messages take text only (OpenAI
/// Chat, Mistral, Ollama): each result is a tool message (`tool_message`
/// with its text); a block `part` can carry goes to one user message after
/// every tool message of the batch (`user_message`, given each such result
/// and its parts), with a line in the tool message naming it
/// ([`Fallback::FollowUpMessage`]); a block it cannot carry is its summary
/// text ([`Fallback::Summary`]). Text-only results render as they always
/// have.
pub(crate) fn follow_up(
    results: &[ToolResult],
    mut tool_message: impl FnMut(&ToolResult, String) -> Value,
    part: impl Fn(&Media) -> Option<Value>,
    user_message: impl FnOnce(Vec<(&ToolResult, Vec<Value>)>) -> Value,
) -> RenderedResults {
    let mut messages = Vec::with_capacity(results.len());
    let mut fallbacks = Vec::new();
    let mut moved: Vec<(&ToolResult, Vec<Value>)> = Vec::new();
    for result in results {
        let Some(output) = rich(result) else {
            messages.push(tool_message(result, result_text(result)));
            continue;
        };
        let mut parts = Vec::new();
        let mut lines = Vec::with_capacity(output.content.len());
        for block in &output.content {
            if let Content::Text(t) = block {
                lines.push(Cow::Borrowed(t.text.as_str()));
                continue;
            }
            let how = match media(block).and_then(|m| part(&m)) {
                Some(carried) => {
                    parts.push(carried);
                    lines.push(Cow::Owned(format!("{} (attached in the next user message)", block.summary())));
                    Fallback::FollowUpMessage
                }
                None => {
                    lines.push(Cow::Owned(block.summary()));
                    Fallback::Summary
                }
            };
            fallbacks.push(BlockFallback::new(&result.id, block, how));
        }
        messages.push(tool_message(result, lines.join("\n")));
        if !parts.is_empty() {
            moved.push((result, parts));
        }
    }
    if !moved.is_empty() {
        messages.push(user_message(moved));
    }
    RenderedResults { messages, fallbacks }
}

/// The line that introduces a call's attachments in a follow-up user
/// message; `call` is how the model knows the call (its id, or for Ollama,
/// whose calls have none, its place in the batch and its tool).
pub(crate) fn attachments_of(call: &str) -> String {
    format!("Attachments of the result of tool call {call}:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_checks_ignore_case_and_parameters() {
        assert_eq!(accepted("IMAGE/PNG", WEB_IMAGES), Some("image/png"));
        assert_eq!(accepted("image/jpeg; q=1", WEB_IMAGES), Some("image/jpeg"));
        assert_eq!(accepted("image/tiff", WEB_IMAGES), None);
        assert!(is("Audio/wav", "audio"));
        assert!(!is("application/pdf", "text"));
    }

    #[test]
    fn embedded_blobs_are_media_named_after_their_uri() {
        let blob = Content::resource_blob("file:///tmp/chart.png", vec![1, 2], Some("image/png".into()));
        let media = media(&blob).unwrap();
        assert_eq!((media.mime_type.as_str(), media.name.as_deref()), ("image/png", Some("chart.png")));
        let untyped = Content::resource_blob("mem://x/", vec![1], None);
        assert_eq!(super::media(&untyped).unwrap().mime_type, "application/octet-stream");
        assert!(super::media(&Content::resource_text("u", "t", None)).is_none());
        assert!(super::media(&Content::resource_link("u", "n")).is_none());
    }
}
