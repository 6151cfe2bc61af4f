//! `#[tools]`: `#[tool]` on the methods of a state struct. Registration,
//! declarations and calls through a `FunctionRegistry`, with the state
//! observed; every form a free `#[tool]` function takes, on a method.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::json;
use toolreg::CallOptions;
use toolreg::{
    CallContext, FunctionRegistry, SafetyLevel, Scope, ToolArgs, ToolCall, ToolError, ToolExecutor, tool, tools,
};

/// A key-value store the tools share.
#[derive(Clone, Default)]
struct Store {
    values: Arc<Mutex<BTreeMap<String, i64>>>,
    /// How many tool calls reached the store.
    calls: Arc<Mutex<u32>>,
}

/// A struct the lone-struct rule takes as the whole argument object.
#[derive(Deserialize, schemars::JsonSchema)]
struct Range {
    /// First key, inclusive.
    from: String,
    /// Last key, inclusive.
    to: String,
}

/// An argument object said at compile time.
#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
struct Add {
    key: String,
    by: i64,
}

#[tools]
impl Store {
    /// Set a key to a value.
    ///
    /// Returns the value before.
    #[tool(safety = "cautious", category = "kv", category = "write", exclusive = "key")]
    pub fn kv_set(
        &self,
        /// The key.
        key: String,
        /// The new value.
        value: i64,
    ) -> Option<i64> {
        self.count();
        self.values.lock().unwrap().insert(key, value)
    }

    /// Read a key.
    #[tool(safety = "safe", category = "kv", title = "Read", idempotent = true, open_world = false)]
    async fn kv_get(&self, key: String) -> Result<i64, String> {
        self.count();
        tokio::task::yield_now().await;
        self.values.lock().unwrap().get(&key).copied().ok_or_else(|| format!("no key {key}"))
    }

    /// Sum the keys in a range.
    #[tool(safety = "safe", scope = "agent")]
    fn kv_sum(&self, range: Range) -> i64 {
        self.count();
        self.values.lock().unwrap().range(range.from..=range.to).map(|(_, v)| v).sum()
    }

    /// Add to a key.
    #[tool(name = "kv-add", safety = "cautious")]
    async fn add(&self, #[args] Add { key, by }: Add, #[context] cx: &CallContext) -> String {
        self.count();
        let mut values = self.values.lock().unwrap();
        let value = values.entry(key).or_insert(0);
        *value += by;
        format!("{}: {value}", cx.call_id().unwrap_or("-"))
    }

    /// The call id and the keys, taken as one named argument.
    #[tool(description = "Echo the call id.", safety = "safe")]
    pub(crate) fn echo_call(&self, #[context] cx: CallContext, #[arg] range: Range) -> String {
        format!("{} {}..{}", cx.call_id().unwrap_or("-"), range.from, range.to)
    }

    /// Not a tool.
    fn count(&self) {
        *self.calls.lock().unwrap() += 1;
    }

    /// Not a tool either, and public.
    pub fn calls(&self) -> u32 {
        *self.calls.lock().unwrap()
    }
}

/// A tool in another module, registered beside the methods.
#[tool(safety = "safe")]
fn free_tool() -> &'static str {
    "free"
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn names_come_from_the_methods_once() {
    assert_eq!(Store::TOOL_NAMES, ["kv_set", "kv_get", "kv_sum", "kv-add", "echo_call"]);
    assert_eq!(Store::KV_SET_TOOL_NAME, "kv_set");
    assert_eq!(Store::ADD_TOOL_NAME, "kv-add");
    let names: Vec<String> = Store::tool_declarations().into_iter().map(|d| d.name).collect();
    assert_eq!(names, Store::TOOL_NAMES);
}

#[test]
fn declarations_carry_every_option_and_doc() {
    let set = Store::kv_set_tool_declaration();
    assert_eq!(set.description, "Set a key to a value.\n\nReturns the value before.");
    assert_eq!(set.safety, SafetyLevel::Cautious);
    assert_eq!(set.categories, ["kv", "write"]);
    assert_eq!(set.exclusive_key.as_deref(), Some("key"));
    assert_eq!(set.input_schema["required"], json!(["key", "value"]));
    assert_eq!(set.input_schema["properties"]["value"]["description"], "The new value.");
    assert!(set.input_schema.get("description").is_none());

    let get = Store::kv_get_tool_declaration();
    assert_eq!(get.safety, SafetyLevel::Safe);
    assert_eq!(get.title.as_deref(), Some("Read"));
    assert_eq!(get.idempotent, Some(true));
    assert_eq!(get.open_world, Some(false));

    // The lone struct is the whole argument object.
    let sum = Store::kv_sum_tool_declaration();
    assert_eq!(sum.scope, Scope::Agent);
    assert_eq!(sum.input_schema["required"], json!(["from", "to"]));

    // `#[args]`: the struct's fields; the context is no argument.
    let add = Store::add_tool_declaration();
    assert_eq!(add.name, "kv-add");
    assert_eq!(add.input_schema["required"], json!(["key", "by"]));

    // `#[arg]` keeps the lone struct one argument; `description` wins over the doc.
    let echo = Store::echo_call_tool_declaration();
    assert_eq!(echo.description, "Echo the call id.");
    assert_eq!(echo.input_schema["required"], json!(["range"]));

    // A registration declares what the declaration function says.
    let store = Store::default();
    assert_eq!(*store.kv_set_tool().declaration(), set);
}

#[test]
fn the_tools_share_the_state_and_the_caller_sees_it() {
    let store = Store::default();
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, store.tool_registrations()).unwrap();
    registry.register(free_tool_tool::registration()).unwrap();
    assert_eq!(
        registry.list().map(|tool| tool.name()).collect::<Vec<_>>(),
        ["kv_set", "kv_get", "kv_sum", "kv-add", "echo_call", "free_tool"]
    );
    block_on(async {
        let out = registry.execute("kv_set", json!({"key": "a", "value": 2})).await.unwrap();
        assert_eq!(out.value, json!(null));
        let out = registry.execute("kv_set", json!({"key": "a", "value": 5})).await.unwrap();
        assert_eq!(out.value, json!(2));
        registry.execute("kv_set", json!({"key": "b", "value": 10})).await.unwrap();

        // A sync and an async method see what the other wrote.
        let out = registry.execute("kv_get", json!({"key": "a"})).await.unwrap();
        assert_eq!(out.value, json!(5));
        let err = registry.execute("kv_get", json!({"key": "zz"})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed { message: "no key zz".into() });

        let out = registry.execute("kv_sum", json!({"from": "a", "to": "b"})).await.unwrap();
        assert_eq!(out.value, json!(15));

        let call = ToolCall::new("c7", "kv-add", json!({"key": "a", "by": 3}));
        let out = registry.execute_call(call, CallOptions::default()).await.outcome.unwrap();
        assert_eq!(out.value, json!("c7: 8"));

        let call = ToolCall::new("c8", "echo_call", json!({"range": {"from": "x", "to": "y"}}));
        let out = registry.execute_call(call, CallOptions::default()).await.outcome.unwrap();
        assert_eq!(out.value, json!("c8 x..y"));

        // A bad call reaches no method and changes nothing.
        let err = registry.execute("kv_set", json!({"key": "a", "value": "six"})).await.unwrap_err();
        assert!(err.to_string().contains("`/value`"), "{err}");
    });
    // The caller's `store` shares its `Arc`s with the registered clone.
    assert_eq!(store.values.lock().unwrap().get("a"), Some(&8));
    assert_eq!(store.calls(), 7);
}

#[test]
fn one_tool_at_a_time_and_adjusted() {
    let store = Store::default();
    let mut registry = FunctionRegistry::new();
    registry.register(store.kv_set_tool().with_approval_preview(|args| Some(format!("set {}", args["key"])))).unwrap();
    registry.register(store.kv_get_tool()).unwrap();
    let preview = registry.get("kv_set").unwrap().approval_preview(&json!({"key": "k", "value": 1}));
    assert_eq!(preview.as_deref(), Some("set \"k\""));
    block_on(async {
        registry.execute("kv_set", json!({"key": "k", "value": 1})).await.unwrap();
        assert_eq!(registry.execute("kv_get", json!({"key": "k"})).await.unwrap().value, json!(1));
    });
    // Registering the block again is refused as a duplicate, all or none.
    assert!(toolreg::register_tools!(registry, store.tool_registrations()).is_err());
    assert_eq!(registry.len(), 2);
}

#[test]
fn the_methods_stay_callable_as_written() {
    let store = Store::default();
    assert_eq!(store.kv_set("k".into(), 4), None);
    assert_eq!(block_on(store.kv_get("k".into())), Ok(4));
    assert_eq!(store.kv_sum(Range { from: "a".into(), to: "z".into() }), 4);
}

/// State that counts its clones, to pin down how many the tools make.
struct Counted {
    clones: Arc<std::sync::atomic::AtomicUsize>,
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.clones.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Counted { clones: Arc::clone(&self.clones) }
    }
}

#[tools]
impl Counted {
    /// One.
    #[tool(safety = "safe")]
    fn one(&self) -> u8 {
        1
    }

    /// Two.
    #[tool(safety = "safe")]
    async fn two(&self) -> u8 {
        2
    }
}

#[test]
fn the_state_is_cloned_once_per_registration_call_never_per_tool_call() {
    use std::sync::atomic::Ordering::SeqCst;
    let state = Counted { clones: Arc::default() };
    let mut registry = FunctionRegistry::new();
    // The block's tools share one clone.
    toolreg::register_tools!(registry, state.tool_registrations()).unwrap();
    assert_eq!(state.clones.load(SeqCst), 1);
    block_on(async {
        for _ in 0..3 {
            assert_eq!(registry.execute("one", json!({})).await.unwrap().value, json!(1));
            assert_eq!(registry.execute("two", json!({})).await.unwrap().value, json!(2));
        }
    });
    assert_eq!(state.clones.load(SeqCst), 1);
    // One tool alone holds a clone of its own.
    let _ = state.two_tool();
    assert_eq!(state.clones.load(SeqCst), 2);
}
