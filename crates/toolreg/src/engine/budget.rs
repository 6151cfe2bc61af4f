//! [`OutputBudget`]: cut long results head and tail.

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::engine::layer::{HookCall, Next, ToolLayer};
use crate::exec::{Content, ToolError, ToolOutput};
use crate::handler::ToolFuture;

/// Keep at most `max_chars` characters of `text`: the first half and the last
/// half, with a marker between them saying how many characters were removed.
/// Text within the limit is returned as it is.
///
/// ```
/// let cut = toolreg::engine::truncate_middle("abcdefghij", 4);
/// assert_eq!(cut, "ab\n[... 6 characters removed ...]\nij");
/// assert_eq!(toolreg::engine::truncate_middle("short", 10), "short");
/// ```
pub fn truncate_middle(text: &str, max_chars: usize) -> Cow<'_, str> {
    let total = text.chars().count();
    if total <= max_chars {
        return Cow::Borrowed(text);
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let removed = total - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{}\n[... {removed} characters removed ...]\n{}", &text[..head_end], &text[tail_start..]))
}

/// Where an over-budget result can go instead of being cut: somewhere that
/// keeps the whole value (the built-in context store does) and answers with
/// what the model reads in its place, such as a handle and a summary.
pub trait Overflow: Send + Sync + 'static {
    /// Keep `value`, the whole result of a call to `tool` (with the
    /// provider's `call_id`, if any), and return what the model reads
    /// instead. An error falls back to cutting the text.
    fn keep<'a>(
        &'a self,
        tool: &'a str,
        call_id: Option<&'a str>,
        value: &'a Value,
    ) -> BoxFuture<'a, Result<Value, String>>;
}

/// A layer that cuts results longer than a budget, head and tail, with a
/// visible marker (see [`truncate_middle`]), or hands them to an
/// [`Overflow`] that keeps them whole.
///
/// A string result is cut as text; any other JSON result longer than the
/// budget once written out becomes the cut text. A tool's own error message
/// ([`ToolError::Failed`]) is cut the same way.
///
/// ```
/// use toolreg::engine::{OutputBudget, ToolEngine};
/// use toolreg::FunctionRegistry;
///
/// let engine = ToolEngine::builder(&FunctionRegistry::new()).layer(OutputBudget::new(8_000)).build();
/// # let _ = engine;
/// ```
#[derive(Clone)]
pub struct OutputBudget {
    max_chars: usize,
    overflow: Option<Arc<dyn Overflow>>,
}

impl std::fmt::Debug for OutputBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputBudget")
            .field("max_chars", &self.max_chars)
            .field("overflow", &self.overflow.is_some())
            .finish()
    }
}

impl OutputBudget {
    /// Cut results to at most `max_chars` characters (plus the marker).
    pub fn new(max_chars: usize) -> Self {
        OutputBudget { max_chars, overflow: None }
    }

    /// Put over-budget results in `overflow` and give the model its answer
    /// (a handle and a summary) instead of a cut text.
    pub fn overflow_to(mut self, overflow: impl Overflow) -> Self {
        self.overflow = Some(Arc::new(overflow));
        self
    }

    /// The budget in characters.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    fn cut_value(max: usize, value: Value) -> Value {
        match value {
            Value::String(s) => match truncate_middle(&s, max) {
                Cow::Borrowed(_) => Value::String(s),
                Cow::Owned(cut) => Value::String(cut),
            },
            Value::Null | Value::Bool(_) | Value::Number(_) => value,
            other => {
                let text = other.to_string();
                match truncate_middle(&text, max) {
                    Cow::Borrowed(_) => other,
                    Cow::Owned(cut) => Value::String(cut),
                }
            }
        }
    }
}

impl ToolLayer for OutputBudget {
    fn call(&self, call: HookCall, next: Next) -> ToolFuture {
        let max = self.max_chars;
        let overflow = self.overflow.clone();
        let (tool, call_id) = (call.tool().to_owned(), call.cx.call_id().map(str::to_owned));
        let future = next.run(call);
        ToolFuture::new(async move {
            match future.await {
                Ok(mut output) if !output.content.is_empty() => {
                    // Blocks: each text block is cut alone; other blocks are
                    // bounded by the engine's `max_content_bytes`.
                    for block in &mut output.content {
                        if let Content::Text(text) = block
                            && let Cow::Owned(cut) = truncate_middle(&text.text, max)
                        {
                            text.text = cut;
                        }
                    }
                    Ok(output)
                }
                Ok(mut output) => {
                    if let Some(overflow) = overflow.filter(|_| over_budget(max, &output.value)) {
                        match overflow.keep(&tool, call_id.as_deref(), &output.value).await {
                            Ok(answer) => return Ok(ToolOutput { value: answer, ..output }),
                            Err(reason) => tracing::warn!(%tool, %reason, "over-budget result not kept; cut instead"),
                        }
                    }
                    output.value = OutputBudget::cut_value(max, std::mem::take(&mut output.value));
                    Ok(output)
                }
                Err(ToolError::Failed { message }) => {
                    Err(ToolError::Failed { message: truncate_middle(&message, max).into_owned() })
                }
                Err(other) => Err(other),
            }
        })
    }
}

/// Whether a result's text is longer than `max` characters.
fn over_budget(max: usize, value: &Value) -> bool {
    match value {
        Value::String(s) => s.len() > max && s.chars().count() > max,
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
        other => {
            let text = other.to_string();
            text.len() > max && text.chars().count() > max
        }
    }
}
