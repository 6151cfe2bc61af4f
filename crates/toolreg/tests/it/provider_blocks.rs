//! Content blocks in every wire format: one snapshot per format of a batch
//! holding each block type (with the fallbacks reported), and the promises
//! every format keeps — no block dropped silently, text-only results as
//! they always were, a MIME type a provider refuses sent as its summary.

use crate::support as common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::{PDF, PNG};
use serde_json::{Value, json};
use toolreg::ToolResult;
use toolreg::exec::{Content, ToolOutput};
use toolreg::provider::{BlockFallback, CallMapping, Fallback, Provider, RenderedResults};

/// The formats of this module (MCP renders blocks as they are, in its own tests).
const FORMATS: [Provider; 7] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Bedrock,
    Provider::Mistral,
    Provider::Ollama,
];

fn ok(id: &str, output: ToolOutput) -> ToolResult {
    ToolResult { id: id.into(), name: "show".into(), outcome: Ok(output) }
}

fn render(provider: Provider, results: &[ToolResult]) -> RenderedResults {
    provider.wire_format().render_results(results, &CallMapping::default())
}

fn fallbacks_json(fallbacks: &[BlockFallback]) -> Value {
    fallbacks.iter().map(|f| json!([f.call_id, f.block, format!("{:?}", f.how)])).collect()
}

#[test]
fn every_block_in_every_format() {
    let results = common::rich_results();
    for provider in FORMATS {
        let rendered = render(provider, &results);
        let snapshot = json!({"messages": rendered.messages, "fallbacks": fallbacks_json(&rendered.fallbacks)});
        insta::assert_json_snapshot!(provider.as_str(), snapshot);
    }
}

#[test]
fn no_block_is_dropped_silently() {
    let results = common::rich_results();
    for provider in FORMATS {
        nothing_dropped(provider, &results);
    }
}

/// Where each block went in a format: a block of the provider (its bytes
/// are there in base64), or its summary text, reported. Each result holds at
/// most one block that is not text.
fn nothing_dropped(provider: Provider, results: &[ToolResult]) {
    {
        let rendered = render(provider, results);
        let text = serde_json::to_string(&rendered.messages).unwrap();
        for result in results {
            let Ok(output) = &result.outcome else { continue };
            let reported: Vec<&BlockFallback> = rendered.fallbacks.iter().filter(|f| f.call_id == result.id).collect();
            let mut expected = 0;
            for block in &output.content {
                if matches!(block, Content::Text(_)) {
                    continue;
                }
                let summary = serde_json::to_string(&block.summary()).unwrap();
                let summary = summary.trim_matches('"');
                let bytes = match block {
                    Content::Image(m) | Content::Audio(m) | Content::File(m) => Some(m.base64()),
                    Content::Resource(r) => match &r.contents {
                        toolreg::exec::ResourceContents::Blob(b) => Some(BASE64.encode(b)),
                        _ => None,
                    },
                    _ => None,
                };
                // Carried as base64, or (a text document: any media block
                // whose MIME type is text) as its text.
                let data = match block {
                    Content::Image(m) | Content::Audio(m) | Content::File(m) => Some(&m.data),
                    Content::Resource(r) => match &r.contents {
                        toolreg::exec::ResourceContents::Blob(b) => Some(b),
                        _ => None,
                    },
                    _ => None,
                };
                let as_text = data.and_then(|d| std::str::from_utf8(d).ok()).map(|t| serde_json::to_string(t).unwrap());
                let carried = bytes.as_ref().is_some_and(|b| text.contains(b.as_str()))
                    || as_text.is_some_and(|t| text.contains(t.as_str()));
                assert!(carried || text.contains(summary), "{provider}: {} lost", result.id);
                let how = reported.iter().find(|f| f.block == block.kind()).map(|f| f.how);
                match how {
                    // A summary in place of the block: its bytes are not there.
                    Some(Fallback::Summary) => {
                        expected += 1;
                        assert!(text.contains(summary), "{provider}: {}", result.id);
                    }
                    // Moved: its bytes are in the follow-up message, the tool message names it.
                    Some(Fallback::FollowUpMessage) => {
                        expected += 1;
                        assert!(carried, "{provider}: {}", result.id);
                    }
                    Some(other) => panic!("{provider}: unexpected {other:?}"),
                    None => assert!(carried, "{provider}: {} neither carried nor reported", result.id),
                }
            }
            assert_eq!(reported.len(), expected, "{provider}: {}", result.id);
        }
    }
}

/// The bytes a format carries decode back to the block's bytes.
#[test]
fn carried_bytes_decode_to_the_blocks_bytes() {
    let image = [ok("c1", ToolOutput::from(Content::image(PNG, "image/png")))];
    for provider in FORMATS {
        let rendered = render(provider, &image);
        assert!(rendered.fallbacks.iter().all(|f| f.how == Fallback::FollowUpMessage), "{provider}");
        let mut found = Vec::new();
        collect_base64(&Value::Array(rendered.messages), &mut found);
        assert!(found.iter().any(|bytes| bytes == PNG), "{provider}: {found:?}");
    }
}

/// Every string that is base64 (or a base64 data URL) decoded.
fn collect_base64(value: &Value, found: &mut Vec<Vec<u8>>) {
    match value {
        Value::String(s) => {
            let data = s.split_once(";base64,").map_or(s.as_str(), |(_, data)| data);
            if let Ok(bytes) = BASE64.decode(data) {
                found.push(bytes);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_base64(v, found)),
        Value::Object(map) => map.values().for_each(|v| collect_base64(v, found)),
        _ => {}
    }
}

#[test]
fn text_only_results_render_as_text_with_no_fallbacks() {
    let plain = [ok("call_1", ToolOutput::new(json!("hello\nworld")))];
    let blocks = [ok("call_1", ToolOutput::from(vec![Content::text("hello"), Content::text("world")]))];
    for provider in FORMATS {
        let (a, b) = (render(provider, &plain), render(provider, &blocks));
        assert!(a.fallbacks.is_empty() && b.fallbacks.is_empty(), "{provider}");
        // Text blocks read as the same text as a plain string value.
        assert_eq!(a.messages, b.messages, "{provider}");
    }
    // The text path is today's JSON, exactly.
    assert_eq!(
        render(Provider::OpenAiResponses, &plain).messages,
        [json!({"type": "function_call_output", "call_id": "call_1", "output": "hello\nworld"})]
    );
    assert_eq!(
        render(Provider::Anthropic, &plain).messages,
        [json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "hello\nworld", "is_error": false}]})]
    );
    assert_eq!(render(Provider::OpenAiChat, &[]), RenderedResults::default());
    assert_eq!(render(Provider::Gemini, &[]), RenderedResults::default());
}

#[test]
fn a_mime_type_the_provider_refuses_is_its_summary() {
    let tiff = Content::image(vec![1, 2, 3], "image/tiff");
    let results = [ok("toolu_1", ToolOutput::from(vec![Content::text("Scan:"), tiff.clone()]))];
    let rendered = render(Provider::Anthropic, &results);
    assert_eq!(
        rendered.messages[0]["content"][0]["content"],
        json!([{"type": "text", "text": "Scan:"}, {"type": "text", "text": "[image: image/tiff, 3 bytes]"}])
    );
    assert_eq!(rendered.fallbacks.len(), 1);
    assert_eq!(
        (rendered.fallbacks[0].call_id.as_str(), rendered.fallbacks[0].block, rendered.fallbacks[0].how),
        ("toolu_1", "image", Fallback::Summary)
    );
    // In every format: reported, never a panic.
    for provider in FORMATS {
        let rendered = render(provider, &results);
        assert_eq!(rendered.fallbacks.len(), 1, "{provider}");
        assert_eq!(rendered.fallbacks[0].how, Fallback::Summary, "{provider}");
    }
    // A text file that is not UTF-8 cannot be Anthropic's text document.
    let latin1 = [ok("toolu_2", ToolOutput::from(Content::file(vec![0x63, 0x61, 0x66, 0xe9], "text/plain", "a.txt")))];
    let rendered = render(Provider::Anthropic, &latin1);
    assert_eq!(rendered.fallbacks[0].how, Fallback::Summary);
    assert_eq!(rendered.messages[0]["content"][0]["content"][0]["text"], "[file: a.txt, text/plain, 4 bytes]");
    // MIME types are matched whatever their case and parameters.
    let upper = [ok("toolu_3", ToolOutput::from(Content::image(PNG, "IMAGE/PNG; x=1")))];
    let rendered = render(Provider::Anthropic, &upper);
    assert!(rendered.fallbacks.is_empty());
    assert_eq!(rendered.messages[0]["content"][0]["content"][0]["source"]["media_type"], "image/png");
}

#[test]
fn chat_formats_send_one_follow_up_message_after_every_tool_message() {
    let results = common::rich_results();
    for provider in [Provider::OpenAiChat, Provider::Mistral, Provider::Ollama] {
        let rendered = render(provider, &results);
        let roles: Vec<&str> = rendered.messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        let tools = roles.iter().filter(|r| **r == "tool").count();
        assert_eq!(tools, results.len(), "{provider}: a tool message per result");
        assert_eq!(roles.last(), Some(&"user"), "{provider}");
        assert_eq!(roles.len(), tools + 1, "{provider}: one user message");
        // The tool message names what moved.
        let image_message = &rendered.messages[2]["content"];
        assert_eq!(
            image_message.as_str().unwrap(),
            "A chart:\n[image: image/png, 8 bytes] (attached in the next user message)",
            "{provider}"
        );
    }
    // Ollama's calls have no ids the model saw: its place in the batch and its tool.
    let ollama = render(Provider::Ollama, &results);
    let last = ollama.messages.last().unwrap();
    assert_eq!(
        last["content"].as_str().unwrap().lines().next(),
        Some("Attachments of the result of tool call 3 (show): 1 image(s)")
    );
    assert_eq!(last["images"][0], BASE64.encode(PNG));
    // Without a block to move, no user message.
    let text = [ok("call_1", ToolOutput::new(json!("hi")))];
    assert_eq!(render(Provider::OpenAiChat, &text).messages.len(), 1);
    let pdf_only = [ok("call_1", ToolOutput::from(Content::file(PDF, "application/pdf", "r.pdf")))];
    let rendered = render(Provider::Mistral, &pdf_only);
    assert_eq!(rendered.messages.len(), 1, "Mistral has no inline file chunk: a summary");
    assert_eq!(rendered.fallbacks[0].how, Fallback::Summary);
}

#[test]
fn bedrock_carries_the_structured_value_as_json_after_the_blocks() {
    let results = [ok(
        "tooluse_1",
        ToolOutput::from(vec![Content::text("2 points"), Content::image(PNG, "image/png")])
            .with_value(json!({"points": 2})),
    )];
    let rendered = render(Provider::Bedrock, &results);
    let content = &rendered.messages[0]["content"][0]["toolResult"]["content"];
    assert_eq!(content[0], json!({"text": "2 points"}));
    assert_eq!(content[1]["image"]["format"], "png");
    assert_eq!(content[2], json!({"json": {"points": 2}}));
}

#[test]
fn gemini_puts_media_in_the_function_responses_parts() {
    let results =
        [ok("fc_1", ToolOutput::from(vec![Content::text("Here:"), Content::file(PDF, "application/pdf", "r.pdf")]))];
    let rendered = render(Provider::Gemini, &results);
    let response = &rendered.messages[0]["parts"][0]["functionResponse"];
    assert_eq!(response["response"], json!({"output": "Here:"}));
    assert_eq!(
        response["parts"],
        json!([{"inlineData": {"mimeType": "application/pdf", "data": BASE64.encode(PDF), "displayName": "r.pdf"}}])
    );
    assert!(rendered.fallbacks.is_empty());
}

/// Any bytes, any MIME type, any name: every format renders without
/// panicking and accounts for every block.
mod arbitrary {
    use proptest::prelude::*;

    use super::*;

    fn mime() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "image/png",
                "image/tiff",
                "IMAGE/JPEG; q=1",
                "audio/wav",
                "audio/x-flac",
                "application/pdf",
                "text/plain",
                "text/csv; charset=utf-8",
                "application/vnd.ms-excel",
                "",
                ";",
                "/",
            ])
            .prop_map(str::to_owned),
            ".{0,30}",
        ]
    }

    fn block() -> impl Strategy<Value = Content> {
        let data = prop::collection::vec(any::<u8>(), 0..40);
        (0..6u8, data, mime(), proptest::option::of(".{0,20}"), ".{0,20}").prop_map(|(kind, data, mime, name, uri)| {
            match kind {
                0 => Content::image(data, mime),
                1 => Content::audio(data, mime),
                2 => Content::file(data, mime, name.unwrap_or_default()),
                3 => Content::resource_blob(uri, data, name.map(|_| mime)),
                4 => Content::resource_text(uri, String::from_utf8_lossy(&data), Some(mime)),
                _ => Content::resource_link(uri, name.unwrap_or_default()),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn any_block(blocks in prop::collection::vec((block(), proptest::option::of(".{0,10}")), 1..5)) {
            let results: Vec<ToolResult> = blocks
                .into_iter()
                .enumerate()
                .map(|(i, (block, text))| {
                    let mut output = ToolOutput::default();
                    if let Some(text) = text {
                        output = output.with_block(Content::text(text));
                    }
                    ok(&format!("call_{i}"), output.with_block(block))
                })
                .collect();
            for provider in FORMATS {
                nothing_dropped(provider, &results);
            }
        }
    }
}
