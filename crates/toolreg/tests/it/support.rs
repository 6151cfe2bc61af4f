//! A corpus of argument types that real tools use, shared by the provider tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolreg::exec::{Annotations, Content, Role, ToolOutput};
use toolreg::{FunctionRegistry, SafetyLevel, ToolDeclaration, ToolError, ToolRegistration, ToolResult};

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Coords {
    /// Latitude in degrees.
    pub lat: f64,
    /// Longitude in degrees.
    pub lon: f64,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Location {
    /// Place name.
    pub name: String,
    /// Where exactly, if known.
    pub coords: Option<Coords>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Person {
    pub name: String,
    #[schemars(email)]
    pub email: String,
}

/// Nested structs, vectors of structs, dates as formatted strings.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CreateEvent {
    /// Event title.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// Where it happens.
    pub location: Location,
    /// Who is invited.
    pub attendees: Vec<Person>,
    /// Start time (RFC 3339).
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub starts_at: String,
    /// The day, for all-day events.
    #[schemars(with = "Option<String>", extend("format" = "date"))]
    pub day: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    Normal,
    High,
}

/// `Option` of every kind, and defaults.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SearchIssues {
    /// Free-text query.
    pub query: String,
    pub label: Option<String>,
    pub limit: Option<u8>,
    pub min_score: Option<f64>,
    pub open: Option<bool>,
    pub assignees: Option<Vec<String>>,
    pub near: Option<Coords>,
    pub priority: Option<Priority>,
    /// Page number.
    #[serde(default)]
    pub page: u32,
    /// Sort order.
    #[serde(default = "default_sort")]
    pub sort: String,
}

fn default_sort() -> String {
    "newest".to_owned()
}

/// Enums: unit, externally tagged with data, internally and adjacently tagged, untagged.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub enum Shape {
    Point,
    Circle(f64),
    Rect { w: f64, h: f64 },
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Move { dx: i32, dy: i32 },
    Say { text: String },
    Wait,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
pub enum Adjacent {
    Num(i64),
    Text(String),
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdOrName {
    Id(u64),
    Name(String),
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Draw {
    pub shape: Shape,
    pub action: Action,
    pub adjacent: Adjacent,
    pub target: IdOrName,
    pub priority: Priority,
    pub fallback: Option<Action>,
}

/// Maps: free-form keys.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SetLabels {
    pub labels: HashMap<String, String>,
    pub weights: BTreeMap<String, f32>,
}

/// A recursive type.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TreeNode {
    pub name: String,
    pub children: Vec<TreeNode>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WriteTree {
    pub root: TreeNode,
}

/// Integers with schemars formats, constraints.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Numbers {
    pub byte: u8,
    pub small: i16,
    pub int: i32,
    pub big: i64,
    pub unsigned: u64,
    pub ratio: f32,
    #[schemars(range(min = 1, max = 10))]
    pub rating: u32,
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub currency: String,
    #[schemars(length(min = 1, max = 5))]
    pub tags: Vec<String>,
    pub id: Option<i64>,
}

/// No arguments at all.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// Arbitrary JSON.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StoreValue {
    pub key: String,
    pub value: Value,
}

/// Tuples.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MoveTo {
    /// x and y.
    pub position: (f64, f64),
    pub label: (String, u32),
}

/// Every corpus tool: (declaration, a valid argument object).
pub fn corpus() -> Vec<(ToolDeclaration, Value)> {
    fn decl<T: JsonSchema + 'static>(name: &str, description: &str) -> ToolDeclaration {
        ToolDeclaration::for_args::<T>(name, description).with_safety(SafetyLevel::Safe)
    }
    fn args<T: Serialize>(value: T) -> Value {
        serde_json::to_value(value).unwrap()
    }
    vec![
        (
            decl::<CreateEvent>("create_event", "Create a calendar event."),
            args(CreateEvent {
                title: "Standup".into(),
                location: Location { name: "Room 1".into(), coords: None },
                attendees: vec![Person { name: "Ada".into(), email: "ada@example.com".into() }],
                starts_at: "2026-11-23T09:00:00Z".into(),
                day: None,
            }),
        ),
        (
            decl::<SearchIssues>("search_issues", "Search the issue tracker.")
                .with_example(json!({"query": "crash on start"}))
                .with_example(json!({"query": "login", "label": "bug", "limit": 10, "priority": "high"})),
            json!({"query": "crash", "limit": 5, "near": {"lat": 1.0, "lon": 2.0}, "priority": "high"}),
        ),
        (
            decl::<Draw>("draw", "Draw a shape and act."),
            args(Draw {
                shape: Shape::Rect { w: 1.0, h: 2.0 },
                action: Action::Move { dx: 1, dy: -1 },
                adjacent: Adjacent::Text("x".into()),
                target: IdOrName::Name("main".into()),
                priority: Priority::Low,
                fallback: Some(Action::Wait),
            }),
        ),
        (
            decl::<SetLabels>("set_labels", "Set labels on an item."),
            json!({"labels": {"team": "core"}, "weights": {"a": 0.5}}),
        ),
        (
            decl::<WriteTree>("write_tree", "Write a tree of folders."),
            json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}}),
        ),
        (
            decl::<Numbers>("numbers", "Record numbers."),
            json!({"byte": 7, "small": -3, "int": 100000, "big": -5, "unsigned": 9, "ratio": 0.5,
                   "rating": 3, "currency": "EUR", "tags": ["a"]}),
        ),
        (decl::<NoArgs>("ping", "Check the service is up."), json!({})),
        (
            ToolDeclaration::builder("normalize_scores")
                .description("Normalize an array of scores to 0-1 range")
                .param_schema("scores", json!({"type": "array", "items": {"type": "number"}}), true)
                .optional_param("precision", toolreg::ParamType::Integer, "Decimal places")
                .param_with_default("scale", toolreg::ParamType::Number, "Upper bound", json!(1.0))
                .safety(SafetyLevel::Cautious)
                .build(),
            json!({"scores": [1, 2, 3]}),
        ),
        (ToolDeclaration::builder("get_time").description("").build().with_safety(SafetyLevel::Dangerous), json!({})),
        (decl::<StoreValue>("store_value", "Store any JSON value."), json!({"key": "k", "value": [1, {"a": null}]})),
        (
            decl::<MoveTo>("move_to", "Move to a position."),
            args(MoveTo { position: (1.0, 2.0), label: ("home".into(), 3) }),
        ),
    ]
}

/// Tools whose schema cannot be strict for OpenAI, with the reason's gist.
pub const NOT_OPENAI_STRICT: &[(&str, &str)] = &[("set_labels", "map"), ("store_value", "any value")];

/// A registry holding the corpus; every tool echoes its arguments.
pub fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for (decl, _) in corpus() {
        registry.register(ToolRegistration::new(decl, std::sync::Arc::new(Echo))).unwrap();
    }
    registry
}

/// A tool that answers with its arguments.
pub struct Echo;

impl toolreg::ErasedTool for Echo {
    fn call(&self, _cx: toolreg::CallContext, args: Value) -> toolreg::ToolFuture {
        toolreg::ToolFuture::new(async move { Ok(args.into()) })
    }
}

/// Run a future to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// Read a fixture file under `tests/fixtures/`.
pub fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
pub const WAV: &[u8] = b"RIFF\x24\x00\x00\x00WAVE";
pub const PDF: &[u8] = b"%PDF-1.7\n%%EOF";

fn ok(id: &str, output: ToolOutput) -> ToolResult {
    ToolResult { id: id.into(), name: "show".into(), outcome: Ok(output) }
}

/// Tool results holding one content block type each (every type, and MIME
/// types some providers refuse), and the text-only cases around them.
pub fn rich_results() -> Vec<ToolResult> {
    let for_model = Annotations::for_audience([Role::Assistant]).priority(0.9);
    vec![
        ok("call_plain", ToolOutput::new(json!({"n": 1}))),
        ok("call_texts", ToolOutput::from(vec![Content::text("first"), Content::text("second")])),
        ok(
            "call_image",
            ToolOutput::from(vec![Content::text("A chart:"), Content::image(PNG, "image/png").annotated(for_model)]),
        ),
        ok("call_tiff", ToolOutput::from(Content::image(vec![0x49, 0x49, 0x2a, 0x00], "image/tiff"))),
        ok("call_wav", ToolOutput::from(Content::audio(WAV, "audio/wav"))),
        ok("call_ogg", ToolOutput::from(Content::audio(vec![b'O', b'g', b'g', b'S'], "audio/ogg"))),
        ok("call_pdf", ToolOutput::from(Content::file(PDF, "application/pdf", "report.pdf"))),
        ok("call_csv", ToolOutput::from(Content::file(b"a,b\n1,2\n".to_vec(), "text/csv", "data.csv"))),
        ok("call_link", ToolOutput::from(Content::resource_link("file:///srv/big.log", "big.log"))),
        ok(
            "call_embedded",
            ToolOutput::from(Content::resource_text("file:///notes.md", "# Notes", Some("text/markdown".into()))),
        ),
        ok("call_blob", ToolOutput::from(Content::resource_blob("file:///img/dot.png", PNG, Some("image/png".into())))),
        ok(
            "call_structured",
            ToolOutput::from(vec![Content::text("2 points"), Content::image(PNG, "image/png")])
                .with_value(json!({"points": 2})),
        ),
        ToolResult { id: "call_error".into(), name: "show".into(), outcome: Err(ToolError::failed("boom")) },
    ]
}
