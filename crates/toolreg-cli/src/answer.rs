//! `toolreg run` answering the questions of the MCP servers it imported:
//! an elicitation goes to the person at the terminal, a sampling request to
//! the agent's own model (once the person allows it, or with `--yes`).
//!
//! Under `toolreg run` no MCP client stands behind a call, so a remote
//! server's question comes here (see [`Answerer`]). Without a terminal to
//! ask, an elicitation is refused with that reason, and so is sampling
//! unless `--yes` allowed it.

// rmcp marks sampling deprecated (a protocol draft drops it); the revisions
// the servers speak have it.
#![allow(deprecated)]

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use toolreg_builtins::user::{Notice, NoticeLevel, Question, UserChannel};
use toolreg_llm::model::FinishReason;
use toolreg_llm::{LlmClient, Message, ModelRequest};
use toolreg_mcp::client::Answerer;
use toolreg_mcp::rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, Role, SamplingMessage, SamplingMessageContentBlock,
};

/// How many times a field is asked again when the answer does not fit its type.
const ATTEMPTS: usize = 3;
/// Most characters of the sampling request shown when asking to allow it.
const SHOWN: usize = 300;

/// The terminal and the agent's model, answering remote servers' questions.
pub struct HostAnswerer {
    /// The person, when there is a terminal to ask.
    pub user: Option<Arc<dyn UserChannel>>,
    /// The agent's model client and model name.
    pub client: Arc<dyn LlmClient>,
    pub model: String,
    /// `--yes`: sampling is allowed without asking.
    pub allow_sampling: bool,
}

impl Answerer for HostAnswerer {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async move {
            let Some(user) = &self.user else {
                return Err("toolreg run is not on a terminal, so no one can fill in the form".to_owned());
            };
            elicit(user.as_ref(), server, request).await
        })
    }

    fn sample<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, String>> {
        Box::pin(self.sample(server, request))
    }
}

impl HostAnswerer {
    async fn sample(&self, server: &str, request: CreateMessageRequestParams) -> Result<CreateMessageResult, String> {
        let (system, messages) = conversation(&request);
        if !self.allow_sampling {
            let Some(user) = &self.user else {
                return Err("toolreg run is not on a terminal and --yes was not given, so no one can allow it".into());
            };
            let last = match messages.last() {
                Some(Message::User { text }) | Some(Message::Assistant { text, .. }) => text.as_str(),
                _ => "",
            };
            let shown: String = last.chars().take(SHOWN).collect();
            let question = Question::new(format!(
                "MCP server `{server}` asks to use the model ({}) to answer:\n  {shown}{}",
                self.model,
                if shown.len() < last.len() { "…" } else { "" }
            ))
            .with_choices(["allow", "deny"]);
            if user.ask(question).await.map_err(|e| e.to_string())? != "allow" {
                return Err("the user did not allow it".to_owned());
            }
        }
        let mut model_request = ModelRequest::new(self.model.clone(), messages);
        model_request.system = system;
        model_request.max_tokens = Some(request.max_tokens);
        model_request.temperature = request.temperature;
        let answer =
            self.client.complete(&model_request, &|_| {}).await.map_err(|e| format!("the model failed: {e}"))?;
        let stop = match answer.finish {
            FinishReason::Length => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
            _ => CreateMessageResult::STOP_REASON_END_TURN,
        };
        let message = SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(answer.text));
        Ok(CreateMessageResult::new(message, self.model.clone()).with_stop_reason(stop))
    }
}

/// The sampling request's system prompt and messages as the agent's model
/// takes them: text as text; an image, audio or tool block as a line
/// saying what it was (the model client carries user text only).
fn conversation(request: &CreateMessageRequestParams) -> (Option<String>, Vec<Message>) {
    let messages = request
        .messages
        .iter()
        .map(|message| {
            let text: Vec<String> = message
                .content
                .iter()
                .map(|block| match block {
                    SamplingMessageContentBlock::Text(text) => text.text.clone(),
                    SamplingMessageContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
                    SamplingMessageContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
                    _ => "[a tool call or result]".to_owned(),
                })
                .collect();
            match message.role {
                Role::User => Message::user(text.join("\n")),
                Role::Assistant => Message::assistant(text.join("\n"), Vec::new()),
            }
        })
        .collect();
    (request.system_prompt.clone(), messages)
}

/// Ask the person: fill in the form (field by field), decline or cancel;
/// for a URL, visit it and say when done.
async fn elicit(user: &dyn UserChannel, server: &str, request: ElicitRequestParams) -> Result<ElicitResult, String> {
    let ask = |question: Question| async move { user.ask(question).await.map_err(|e| e.to_string()) };
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => (message, requested_schema),
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            let question = Question::new(format!("MCP server `{server}` asks: {message}\n  Open: {url}"))
                .with_choices(["done", "decline", "cancel"]);
            return Ok(ElicitResult::new(action(&ask(question).await?)));
        }
        _ => return Err("toolreg does not know this kind of elicitation".to_owned()),
    };
    let question =
        Question::new(format!("MCP server `{server}` asks: {message}")).with_choices(["answer", "decline", "cancel"]);
    let chosen = ask(question).await?;
    if chosen != "answer" {
        return Ok(ElicitResult::new(action(&chosen)));
    }
    let mut content = Map::new();
    for (name, field) in fields(&schema) {
        let mut value = None;
        for _ in 0..ATTEMPTS {
            let answer = ask(field.question(&name)).await?;
            match field.read(&answer) {
                Ok(read) => {
                    value = Some(read);
                    break;
                }
                Err(why) => user.notify(Notice::new(why, NoticeLevel::Warning)).await.map_err(|e| e.to_string())?,
            }
        }
        match value {
            None => return Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Some(Some(value)) => {
                content.insert(name, value);
            }
            Some(None) => {}
        }
    }
    Ok(ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content)))
}

fn action(chosen: &str) -> ElicitationAction {
    match chosen {
        "done" | "answer" => ElicitationAction::Accept,
        "decline" => ElicitationAction::Decline,
        _ => ElicitationAction::Cancel,
    }
}

/// One field of a form, read from its schema (a primitive: string, number,
/// integer, boolean, or a choice of strings, one or several).
struct Field {
    schema: Value,
    required: bool,
}

/// The form's fields in the order the server wrote them.
fn fields(schema: &ElicitationSchema) -> Vec<(String, Field)> {
    let required = schema.required.clone().unwrap_or_default();
    let order = schema.property_order.clone().unwrap_or_else(|| schema.properties.keys().cloned().collect());
    order
        .into_iter()
        .filter_map(|name| {
            let schema = serde_json::to_value(schema.properties.get(&name)?).ok()?;
            let required = required.contains(&name);
            Some((name, Field { schema, required }))
        })
        .collect()
}

/// What the person types to leave an optional field out (or take its default).
const SKIP: &str = "-";

impl Field {
    fn kind(&self) -> &str {
        self.schema["type"].as_str().unwrap_or("string")
    }

    /// The choices of a single-choice field: `enum`, or `oneOf` consts.
    fn choices(&self) -> Vec<String> {
        let strings = |values: &Value| -> Vec<String> {
            values
                .as_array()
                .map(|v| v.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                .unwrap_or_default()
        };
        let mut choices = strings(&self.schema["enum"]);
        if choices.is_empty()
            && let Some(options) = self.schema["oneOf"].as_array()
        {
            choices = options.iter().filter_map(|o| o["const"].as_str().map(str::to_owned)).collect();
        }
        if choices.is_empty() && self.kind() == "boolean" {
            choices = vec!["yes".to_owned(), "no".to_owned()];
        }
        choices
    }

    /// The choices of a multiple-choice field (`type: array` of enum items).
    fn multiple(&self) -> Vec<String> {
        let items = &self.schema["items"];
        let mut options: Vec<String> =
            items["enum"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect();
        if options.is_empty() {
            options = items["anyOf"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o["const"].as_str().map(str::to_owned))
                .collect();
        }
        options
    }

    fn question(&self, name: &str) -> Question {
        let title = self.schema["title"].as_str().unwrap_or(name);
        let mut text = title.to_owned();
        if let Some(description) = self.schema["description"].as_str() {
            text.push_str(&format!(" — {description}"));
        }
        let multiple = self.multiple();
        if self.kind() == "array" {
            text.push_str(&format!(" (one or more of {}, separated by commas)", multiple.join(", ")));
        } else if matches!(self.kind(), "number" | "integer") {
            text.push_str(&format!(" ({})", self.kind()));
        }
        if !self.required {
            match self.schema.get("default") {
                Some(default) => text.push_str(&format!(" [optional; {SKIP} for the default, {default}]")),
                None => text.push_str(&format!(" [optional; {SKIP} to leave it out]")),
            }
        }
        let mut choices = self.choices();
        if !choices.is_empty() && !self.required {
            choices.push(SKIP.to_owned());
        }
        Question::new(text).with_choices(choices)
    }

    /// The value an answer gives the field (`None`: left out), or why it does not fit.
    fn read(&self, answer: &str) -> Result<Option<Value>, String> {
        let answer = answer.trim();
        if answer == SKIP {
            if self.required {
                return Err("this one is required".to_owned());
            }
            return Ok(self.schema.get("default").cloned());
        }
        match self.kind() {
            "boolean" => Ok(Some(Value::Bool(answer == "yes"))),
            "integer" => answer
                .parse::<i64>()
                .map(|n| Some(Value::from(n)))
                .map_err(|_| format!("`{answer}` is not a whole number")),
            "number" => answer
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| format!("`{answer}` is not a number")),
            "array" => {
                let options = self.multiple();
                let picked: Vec<&str> = answer.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                match picked.iter().find(|p| !options.iter().any(|o| o == *p)) {
                    Some(bad) => Err(format!("`{bad}` is not one of {}", options.join(", "))),
                    None => Ok(Some(Value::from(picked))),
                }
            }
            _ => Ok(Some(Value::String(answer.to_owned()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use serde_json::json;
    use toolreg_builtins::user::UserError;
    use toolreg_llm::scripted::ScriptedClient;

    use super::*;

    /// A person typing these lines, one per question (a choice by its
    /// number or text, as on the terminal).
    struct Typed(Mutex<VecDeque<String>>);

    impl UserChannel for Typed {
        fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>> {
            let line = self.0.lock().unwrap().pop_front();
            Box::pin(async move {
                let line = line.ok_or(UserError::Closed { reason: "no more lines".into() })?;
                Ok(match question.resolve(&line) {
                    Some(i) => question.choices[i].clone(),
                    None => line,
                })
            })
        }
        fn notify(&self, _: Notice) -> BoxFuture<'_, Result<(), UserError>> {
            Box::pin(async { Ok(()) })
        }
    }

    fn terminal(input: &str) -> Arc<dyn UserChannel> {
        Arc::new(Typed(Mutex::new(input.lines().map(str::to_owned).collect())))
    }

    /// A form request, its fields in the order written.
    fn form(schema: &str) -> ElicitRequestParams {
        let text = format!(r#"{{"mode": "form", "message": "Who are you?", "requestedSchema": {schema}}}"#);
        serde_json::from_str(&text).unwrap()
    }

    fn host(user: Option<Arc<dyn UserChannel>>, allow_sampling: bool) -> HostAnswerer {
        let client = ScriptedClient::new().then_text("Hello from the model");
        HostAnswerer { user, client: Arc::new(client), model: "m1".into(), allow_sampling }
    }

    /// Each field asked in turn, read by its type, asked again when it does
    /// not fit; an optional one left out or given its default.
    #[tokio::test]
    async fn a_form_is_filled_in_field_by_field() {
        let schema = r#"{"type": "object", "required": ["name", "age", "plan"], "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer"},
            "plan": {"type": "string", "enum": ["free", "pro"]},
            "news": {"type": "boolean", "default": false},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}}}"#;
        let input = "answer\nAda\nthirty\n36\n2\n-\na, c\n";
        let answered = host(Some(terminal(input)), false).elicit("crm", form(schema)).await.unwrap();
        assert_eq!(answered.action, ElicitationAction::Accept);
        let expected = json!({"name": "Ada", "age": 36, "plan": "pro", "news": false, "tags": ["a", "c"]});
        assert_eq!(answered.content, Some(expected));
    }

    #[tokio::test]
    async fn a_form_can_be_declined_and_needs_a_terminal() {
        let schema = r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#;
        let declined = host(Some(terminal("decline\n")), false).elicit("crm", form(schema)).await.unwrap();
        assert_eq!((declined.action, declined.content), (ElicitationAction::Decline, None));
        let refused = host(None, false).elicit("crm", form(schema)).await.unwrap_err();
        assert!(refused.contains("not on a terminal"), "{refused}");
    }

    fn sampling() -> CreateMessageRequestParams {
        serde_json::from_value(json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "systemPrompt": "Be brief.", "maxTokens": 50}))
        .unwrap()
    }

    /// Sampling asks the agent's model, once the person allows it (or with
    /// `--yes`); denied, or with no one to ask, the server is refused.
    #[tokio::test]
    async fn sampling_goes_to_the_agents_model_once_allowed() {
        let answered = host(Some(terminal("allow\n")), false).sample("crm", sampling()).await.unwrap();
        assert_eq!(answered.model, "m1");
        let text = serde_json::to_value(&answered).unwrap();
        assert_eq!(text["content"]["text"], "Hello from the model", "{text}");
        assert!(host(None, true).sample("crm", sampling()).await.is_ok());
        let denied = host(Some(terminal("deny\n")), false).sample("crm", sampling()).await.unwrap_err();
        assert!(denied.contains("did not allow"), "{denied}");
        let nobody = host(None, false).sample("crm", sampling()).await.unwrap_err();
        assert!(nobody.contains("--yes"), "{nobody}");
    }
}
