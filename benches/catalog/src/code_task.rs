//! The code-mode task (BENCHMARKS.md, "Issue 22: code mode"): *list the 20
//! files of `docs/`, read each, store a summary per file, and say which
//! three are the largest* — solved by a scripted model that calls the tools
//! one by one ([`direct_model`]) and by one that writes one program
//! ([`code_model`]), over the same in-memory tools ([`registry`]).
//!
//! The files are Markdown of 1 to 8 KB written by a seeded generator
//! ([`files`]). The summary the scripted model "writes" and the one the
//! program computes are the same extract ([`summary`]: the title, the
//! section headings and the first sentence), so both ways store the same
//! thing; a real model would write its own words after reading the text,
//! which a program cannot do (see the README).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::{ToolRef, WireFormat};
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolRegistration};
use toolreg_llm::model::ToolResultMessage;
use toolreg_llm::scripted::ScriptedClient;
use toolreg_llm::{Message, ModelRequest};

/// How many files the task reads.
pub const FILES: usize = 20;

/// The system prompt of every variant.
pub const SYSTEM: &str = "You are a careful assistant working in a documentation repository. Use the tools to \
                          inspect files; do not guess their contents.";

/// The user's request.
pub const TASK: &str = "List the files in docs/, read each of them, store a short summary of each one with \
                        store_summary, and then tell me which three files are the largest.";

/// One file of the in-memory repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// `docs/<name>.md`.
    pub path: String,
    /// Its Markdown text.
    pub text: String,
}

const TOPICS: [&str; FILES] = [
    "architecture",
    "getting-started",
    "configuration",
    "deployment",
    "authentication",
    "rate-limits",
    "webhooks",
    "error-codes",
    "migrations",
    "observability",
    "caching",
    "search",
    "permissions",
    "billing",
    "storage",
    "scheduling",
    "testing",
    "release-process",
    "security",
    "troubleshooting",
];

/// The words the generator writes sentences from.
const VOCABULARY: &str = "the service request client server token cache queue worker config value default timeout \
                          retry policy user account project file record index field schema version release build \
                          deploy cluster node region replica backup restore metric trace log alert error status \
                          response header endpoint route handler event message batch limit quota window secret key \
                          permission role scope session job schedule task migration table column query result page \
                          cursor is are runs stores returns reads writes checks keeps sends uses needs when before \
                          after with without for each every one two new old first last only also";

const HEADINGS: [&str; 12] = [
    "Overview",
    "How it works",
    "Configuration",
    "Examples",
    "Limits",
    "Failure modes",
    "Monitoring",
    "Upgrading",
    "Reference",
    "FAQ",
    "Related pages",
    "Changelog",
];

/// A small seeded generator (xorshift): the same files on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn sentence(rng: &mut Rng, vocabulary: &[&str]) -> String {
    let n = 8 + rng.below(11);
    let words: Vec<&str> = (0..n).map(|_| vocabulary[rng.below(vocabulary.len())]).collect();
    let mut text = format!("{}.", words.join(" "));
    text[..1].make_ascii_uppercase();
    text
}

/// The size each file is written to (about: it ends at a line), from 1 KB
/// to 8 KB, all different, in no particular order.
pub fn target_bytes(i: usize) -> usize {
    1024 + (i * 7 % FILES) * 377
}

/// The 20 files, in listing order.
pub fn files() -> Vec<File> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let vocabulary: Vec<&str> = VOCABULARY.split_whitespace().collect();
    TOPICS
        .iter()
        .enumerate()
        .map(|(i, topic)| {
            let target = target_bytes(i);
            let mut title = topic.replace('-', " ");
            title[..1].make_ascii_uppercase();
            let mut lines = vec![format!("# {title}"), String::new()];
            let mut heading = rng.below(HEADINGS.len());
            let mut paragraph = 0;
            loop {
                let next = if paragraph > 0 && paragraph % 2 == 0 {
                    heading = (heading + 1 + rng.below(3)) % HEADINGS.len();
                    vec![format!("## {}", HEADINGS[heading]), String::new()]
                } else if paragraph % 5 == 3 {
                    let cmd = vocabulary[rng.below(vocabulary.len())];
                    vec![
                        "```sh".to_owned(),
                        format!("toolreg {cmd} --{topic} {}", rng.below(1000)),
                        "```".to_owned(),
                        String::new(),
                    ]
                } else {
                    let n = 2 + rng.below(3);
                    vec![(0..n).map(|_| sentence(&mut rng, &vocabulary)).collect::<Vec<_>>().join(" "), String::new()]
                };
                let len: usize = lines.iter().chain(&next).map(|l| l.len() + 1).sum();
                if len > target {
                    break;
                }
                lines.extend(next);
                paragraph += 1;
            }
            File { path: format!("docs/{topic}.md"), text: lines.join("\n") }
        })
        .collect()
}

/// The summary stored for a file: its title, its section headings and the
/// first sentence of its text. [`PROGRAM`] computes the same in
/// JavaScript.
pub fn summary(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let title = lines[0].trim_start_matches("# ");
    let sections: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("## ")).collect();
    let body = lines.iter().skip(1).find(|l| !l.is_empty() && !l.starts_with('#')).copied().unwrap_or("");
    let first = match body.find(". ") {
        Some(end) => &body[..=end],
        None => body,
    };
    format!("{title}. Sections: {}. {first}", sections.join(", "))
}

/// The `n` largest files (by bytes of text), largest first.
pub fn largest(files: &[File], n: usize) -> Vec<&File> {
    let mut sorted: Vec<&File> = files.iter().collect();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.text.len()));
    sorted.truncate(n);
    sorted
}

/// The final answer: the three largest files with their sizes.
pub fn answer(files: &[File]) -> String {
    let named: Vec<String> = largest(files, 3).iter().map(|f| format!("{} ({} bytes)", f.path, f.text.len())).collect();
    format!(
        "I stored a summary for each of the {} files. The three largest are {}, {} and {}.",
        files.len(),
        named[0],
        named[1],
        named[2]
    )
}

/// What the tools stored: path → summary.
pub type Store = Arc<Mutex<BTreeMap<String, String>>>;

/// `list_files`, `read_file` (safe) and `store_summary` (cautious) over
/// `files`, storing into `store`.
pub fn registry(files: &[File], store: &Store) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let paths: Vec<Value> = files.iter().map(|f| Value::String(f.path.clone())).collect();
    let list = ToolDeclaration::builder("list_files")
        .description("List the files in a directory of the repository, by path.")
        .param("dir", ParamType::String, "The directory, relative to the repository root, e.g. `docs`.")
        .output_schema(json!({"type": "array", "items": {"type": "string"}}))
        .safety(SafetyLevel::Safe)
        .build();
    let add = |registry: &mut FunctionRegistry, registration| {
        registry.register(registration).unwrap_or_else(|e| panic!("{e}"));
    };
    add(
        &mut registry,
        ToolRegistration::new(list, move |args: Value| match args["dir"].as_str() {
            Some("docs" | "docs/" | "./docs") => Ok(Value::Array(paths.clone())),
            _ => Err("no such directory".to_owned()),
        }),
    );
    let texts: BTreeMap<String, String> = files.iter().map(|f| (f.path.clone(), f.text.clone())).collect();
    let read = ToolDeclaration::builder("read_file")
        .description("Read a text file of the repository and return its whole content.")
        .param("path", ParamType::String, "The file's path, relative to the repository root.")
        .output_schema(json!({"type": "string"}))
        .safety(SafetyLevel::Safe)
        .build();
    add(
        &mut registry,
        ToolRegistration::new(read, move |args: Value| {
            let path = args["path"].as_str().unwrap_or_default();
            texts.get(path).map(|t| Value::String(t.clone())).ok_or_else(|| format!("no such file: {path}"))
        }),
    );
    let store = Arc::clone(store);
    let save = ToolDeclaration::builder("store_summary")
        .description("Store a short summary of a file, replacing any earlier summary of it.")
        .param("path", ParamType::String, "The file's path.")
        .param("summary", ParamType::String, "The summary, one or two sentences.")
        .output_schema(json!({"type": "object", "properties": {"stored": {"type": "string"}}}))
        .safety(SafetyLevel::Cautious)
        .build();
    add(
        &mut registry,
        ToolRegistration::new(save, move |args: Value| {
            let (Some(path), Some(summary)) = (args["path"].as_str(), args["summary"].as_str()) else {
                return Err("`path` and `summary` are required".to_owned());
            };
            store.lock().unwrap_or_else(PoisonError::into_inner).insert(path.to_owned(), summary.to_owned());
            Ok(json!({"stored": path}))
        }),
    );
    registry
}

/// How the direct-calling model spreads its calls over turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    /// `list_files`; the 20 reads in one turn (parallel tool calls); the
    /// 20 stores in one turn; the answer: 4 requests.
    Parallel,
    /// `list_files`; then for each file a turn to read it and a turn to
    /// store its summary; the answer: 42 requests.
    Sequential,
}

/// The model that calls the tools itself, as a model would: each call is
/// made after the results it depends on came back.
pub fn direct_model(files: &[File], how: Direct) -> ScriptedClient {
    let mut id = 0;
    let mut call = |name: &str, args: Value| {
        id += 1;
        ToolCall::new(format!("call_{id:02}"), name, args)
    };
    let mut model = ScriptedClient::new().then_calls(vec![call("list_files", json!({"dir": "docs"}))]);
    let read = |f: &File| json!({"path": f.path});
    let store = |f: &File| json!({"path": f.path, "summary": summary(&f.text)});
    match how {
        Direct::Parallel => {
            let reads = files.iter().map(|f| call("read_file", read(f))).collect();
            model = model.then_calls(reads);
            let stores = files.iter().map(|f| call("store_summary", store(f))).collect();
            model = model.then_calls(stores);
        }
        Direct::Sequential => {
            for f in files {
                model = model.then_calls(vec![call("read_file", read(f))]);
                model = model.then_calls(vec![call("store_summary", store(f))]);
            }
        }
    }
    model.then_text(answer(files))
}

/// The program the code-mode model writes: the reads together, the
/// summaries computed as [`summary`] does, the stores together, and only
/// the three largest returned.
pub const PROGRAM: &str = r###"const paths = await tools.list_files({ dir: "docs" });
const texts = await Promise.all(paths.map((path) => tools.read_file({ path })));
const summarize = (text) => {
  const lines = text.split("\n");
  const title = lines[0].replace(/^# /, "");
  const sections = lines.filter((l) => l.startsWith("## ")).map((l) => l.slice(3));
  const body = lines.slice(1).find((l) => l !== "" && !l.startsWith("#")) || "";
  const end = body.indexOf(". ");
  const first = end >= 0 ? body.slice(0, end + 1) : body;
  return `${title}. Sections: ${sections.join(", ")}. ${first}`;
};
await Promise.all(paths.map((path, i) => tools.store_summary({ path, summary: summarize(texts[i]) })));
const sizes = paths.map((path, i) => ({ path, bytes: texts[i].length }));
sizes.sort((a, b) => b.bytes - a.bytes);
return { stored: paths.length, largest: sizes.slice(0, 3) };"###;

/// The same program with one call at a time (`await` in a loop): as many
/// model round trips and nearly the same tokens, but 41 exchanges between
/// the worker and the host instead of 3.
pub const PROGRAM_SEQUENTIAL: &str = r###"const paths = await tools.list_files({ dir: "docs" });
const summarize = (text) => {
  const lines = text.split("\n");
  const title = lines[0].replace(/^# /, "");
  const sections = lines.filter((l) => l.startsWith("## ")).map((l) => l.slice(3));
  const body = lines.slice(1).find((l) => l !== "" && !l.startsWith("#")) || "";
  const end = body.indexOf(". ");
  const first = end >= 0 ? body.slice(0, end + 1) : body;
  return `${title}. Sections: ${sections.join(", ")}. ${first}`;
};
const sizes = [];
for (const path of paths) {
  const text = await tools.read_file({ path });
  await tools.store_summary({ path, summary: summarize(text) });
  sizes.push({ path, bytes: text.length });
}
sizes.sort((a, b) => b.bytes - a.bytes);
return { stored: paths.length, largest: sizes.slice(0, 3) };"###;

/// The model that writes one program: a `run_code` call, then the answer.
pub fn code_model(files: &[File], program: &str) -> ScriptedClient {
    ScriptedClient::new().then_call("call_01", "run_code", json!({ "code": program })).then_text(answer(files))
}

/// One request as an OpenAI Chat Completions client sends it (the body
/// less `model`), rendered by the library's own wire format: `messages`
/// (system prompt, user text, the model's calls as
/// `WireFormat::render_calls` echoes them, results as
/// `WireFormat::render_results` renders them) and `tools`.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// `{"messages": […], "tools": […]}` as JSON text.
    pub body: String,
    /// The `tools` alone, as JSON text.
    pub tools: String,
    /// Each assistant message (the model's own output), as JSON text.
    pub assistant: Vec<String>,
}

/// Render `request` as [`Rendered`] says.
pub fn render(request: &ModelRequest) -> Rendered {
    let format = OpenAiChat::new();
    let refs: Vec<ToolRef<'_>> = request.tools.iter().map(ToolRef::from).collect();
    let declared = format.declare_partial(&refs).into_value();
    let mut messages = Vec::new();
    let mut assistant = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls, .. } => {
                let rendered = format.render_calls(text, tool_calls, &declared.mapping);
                assistant.push(serde_json::to_string(&rendered).unwrap_or_default());
                messages.extend(rendered);
            }
            Message::Tool { results } => {
                let results: Vec<_> = results.iter().map(ToolResultMessage::to_result).collect();
                messages.extend(format.render_results(&results, &declared.mapping).messages);
            }
            other => panic!("a message the bench does not render: {other:?}"),
        }
    }
    let tools = serde_json::to_string(&declared.tools).unwrap_or_default();
    let body = serde_json::to_string(&json!({"messages": messages, "tools": declared.tools})).unwrap_or_default();
    Rendered { body, tools, assistant }
}

/// The ways the bench solves the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The model calls the three tools itself.
    Direct(Direct),
    /// The model writes one program ([`PROGRAM`], or
    /// [`PROGRAM_SEQUENTIAL`] when `sequential`) for `run_code`.
    Program {
        /// One call at a time instead of `Promise.all`.
        sequential: bool,
        /// What the agent offers the model besides `run_code`.
        offer: Offer,
    },
}

/// What an agent in code mode offers the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// `run_code` alone (its description declares the tools as
    /// TypeScript), as a server in code mode offers it.
    RunCodeOnly,
    /// The three tools and `run_code` (`CodeMode::attach`).
    ToolsAndRunCode,
}

impl Variant {
    /// Every variant the bench measures.
    pub const ALL: [Variant; 5] = [
        Variant::Direct(Direct::Parallel),
        Variant::Direct(Direct::Sequential),
        Variant::Program { sequential: false, offer: Offer::RunCodeOnly },
        Variant::Program { sequential: false, offer: Offer::ToolsAndRunCode },
        Variant::Program { sequential: true, offer: Offer::RunCodeOnly },
    ];

    /// A name for the table.
    pub fn label(self) -> &'static str {
        match self {
            Variant::Direct(Direct::Parallel) => "direct, parallel calls (20 reads in one turn, 20 stores in one)",
            Variant::Direct(Direct::Sequential) => "direct, one call per turn",
            Variant::Program { sequential: false, offer: Offer::RunCodeOnly } => {
                "one program (`Promise.all`), `run_code` offered alone"
            }
            Variant::Program { sequential: false, offer: Offer::ToolsAndRunCode } => {
                "one program (`Promise.all`), the tools and `run_code` offered"
            }
            Variant::Program { sequential: true, .. } => "one program (one call at a time), `run_code` offered alone",
        }
    }
}

/// One run of the task, ready to start.
pub struct Setup {
    /// The agent, over the task's tools.
    pub agent: toolreg_llm::Agent,
    /// Its model (holding the requests it received, when recording).
    pub model: ScriptedClient,
    /// What `store_summary` stored.
    pub store: Store,
}

/// Set up `variant` over `files`, programs running in `worker`; `record`
/// keeps the model's requests (off when timing).
pub fn setup(variant: Variant, files: &[File], worker: &toolreg_code::Worker, record: bool) -> Setup {
    use toolreg::ToolEngine;
    use toolreg_code::CodeMode;

    let store = Store::default();
    let registry = registry(files, &store);
    let engine = ToolEngine::builder(&registry).build();
    let (model, engine) = match variant {
        Variant::Direct(how) => (direct_model(files, how), engine.to_builder()),
        Variant::Program { sequential, offer } => {
            let program = if sequential { PROGRAM_SEQUENTIAL } else { PROGRAM };
            let code = CodeMode::new(worker.clone());
            let engine = match offer {
                Offer::ToolsAndRunCode => code.attach(&engine).unwrap_or_else(|e| panic!("{e}")).to_builder(),
                Offer::RunCodeOnly => {
                    let mut only = FunctionRegistry::new();
                    only.register(code.tool(&engine)).unwrap_or_else(|e| panic!("{e}"));
                    ToolEngine::builder(&only)
                }
            };
            (code_model(files, program), engine)
        }
    };
    let model = if record { model } else { model.unrecorded() };
    let agent = toolreg_llm::Agent::builder(model.clone(), "scripted", engine)
        .system(SYSTEM)
        .limits(toolreg_llm::agent::AgentLimits::default().max_steps(2 * FILES + 10))
        .build();
    Setup { agent, model, store }
}
