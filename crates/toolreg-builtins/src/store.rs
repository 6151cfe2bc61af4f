//! The six model-facing tools of the context store (`store_set`,
//! `store_get`, `store_ref`, `store_list`, `store_summarize`,
//! `store_delete`): `#[tool]` methods of [`StoreTools`], bound to one
//! [`Namespace`] of a `toolreg_store` store. Reads are `Safe`, writes
//! `Cautious`; all are in category `store` and scope `Core`. Writes name
//! `key` as their exclusive key, so a batch that writes one key twice does
//! so in call order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::exec::ToolOutput;
use toolreg::{ToolArgs, ToolRegistration, tools};

use toolreg_store::{ListPage, Namespace, StoreError, StoreRef, StoredValue, Summary};

/// The names of the store tools, in registration order.
pub const TOOL_NAMES: &[&str] = StoreTools::TOOL_NAMES;

/// Keys per page when `store_list` is given no limit.
const DEFAULT_LIST_LIMIT: u64 = 100;

/// Arguments of `store_set`.
///
/// The value is JSON text, not a JSON value of any type: a schema that
/// takes "any value" is one no provider's strict mode accepts (a host
/// sending tools with `strict: true` would be refused), while a string is
/// one every provider takes.
#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    /// The key: 1 to 256 characters from A-Z, a-z, 0-9 and _ - . / : (use `/` to group keys).
    key: String,
    /// The value as JSON text, such as `{"todo": ["a", "b"]}`, `[1, 2]` or `3`; text that is not JSON is stored as a string.
    value: String,
}

/// The value `store_set` stores for its text: the JSON the text holds, or
/// the text itself as a string when it is not JSON.
fn stored_value(text: String) -> Value {
    match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(_) => Value::String(text),
    }
}

/// What `store_set` returns: the handle of the new version and its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SetOutcome {
    /// The key.
    pub key: String,
    /// The version just written.
    pub version: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// Arguments of `store_get` and `store_summarize`: a key, or a handle.
#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    /// The key.
    key: String,
    /// A version from a handle; omit it for the latest version.
    #[serde(default)]
    version: Option<u64>,
}

/// Arguments of `store_ref` and `store_delete`.
#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    /// The key.
    key: String,
}

/// Arguments of `store_list`.
#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Only keys starting with this text; omit it for every key.
    #[serde(default)]
    prefix: Option<String>,
    /// Keys per page (default 100).
    #[serde(default)]
    limit: Option<u64>,
    /// The `next_cursor` of the previous page; omit it for the first page.
    #[serde(default)]
    cursor: Option<String>,
}

/// What `store_delete` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeleteOutcome {
    /// The key.
    pub key: String,
    /// How many versions were deleted.
    pub deleted_versions: u64,
}

/// The six store tools over one namespace: what a model reads and writes
/// the store through. [`Builtins::store`](crate::Builtins::store) registers
/// them; a host that calls the store itself uses the [`Namespace`].
#[derive(Debug, Clone)]
pub struct StoreTools {
    namespace: Namespace,
}

impl StoreTools {
    /// The tools over `namespace`.
    pub fn new(namespace: Namespace) -> Self {
        StoreTools { namespace }
    }

    /// The namespace they read and write.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The six tools, ready for [`toolreg::register_tools!`].
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.tool_registrations()
            .into_iter()
            .map(|tool| match tool.name() {
                Self::STORE_REF_TOOL_NAME => tool.map_declaration(|d| d.with_output_type::<StoreRef>()),
                _ => tool,
            })
            .collect()
    }
}

impl From<Namespace> for StoreTools {
    fn from(namespace: Namespace) -> Self {
        StoreTools::new(namespace)
    }
}

#[tools]
impl StoreTools {
    /// Store a JSON value, given as JSON text, under a key, outside your
    /// context. Every call makes a new version and returns its handle {key,
    /// version}; pass the handle instead of the value to whoever needs it.
    #[tool(safety = "cautious", category = "store", scope = "core", exclusive = "key")]
    async fn store_set(&self, #[args] args: SetArgs) -> Result<SetOutcome, StoreError> {
        let (handle, size) = self.namespace.set_sized(&args.key, &stored_value(args.value)).await?;
        Ok(SetOutcome { key: handle.key, version: handle.version, size })
    }

    /// Read a stored value: the latest version of a key, or exactly the
    /// version a handle {key, version} names. A stored tool result with
    /// images or files comes back as those images or files. For a large
    /// value, call store_summarize first.
    #[tool(safety = "safe", category = "store", scope = "core")]
    async fn store_get(&self, #[args] args: GetArgs) -> Result<ToolOutput, StoreError> {
        let stored = match args.version {
            Some(version) => self.namespace.get_version(&args.key, version).await?,
            None => self.namespace.get(&args.key).await?,
        };
        Ok(get_output(stored))
    }

    /// Get a small handle {key, version} to the latest version of a key, to
    /// pass on instead of the value. The handle keeps naming that version
    /// after later writes.
    #[tool(safety = "safe", category = "store", scope = "core")]
    async fn store_ref(&self, #[args] args: KeyArgs) -> Result<StoreRef, StoreError> {
        self.namespace.reference(&args.key).await
    }

    /// List stored keys in order, one page at a time, with each key's latest
    /// version and size. When next_cursor is not null, pass it as cursor to
    /// get the next page.
    #[tool(safety = "safe", category = "store", scope = "core")]
    async fn store_list(&self, #[args] args: ListArgs) -> Result<ListOutput, StoreError> {
        let prefix = args.prefix.unwrap_or_default();
        let limit = args.limit.unwrap_or(DEFAULT_LIST_LIMIT);
        self.namespace.list(&prefix, limit, args.cursor.as_deref()).await.map(ListOutput::from)
    }

    /// Describe a stored value without reading it all: its type, size in
    /// bytes, nesting depth, object keys or array length and element types,
    /// and a short preview.
    #[tool(safety = "safe", category = "store", scope = "core")]
    async fn store_summarize(&self, #[args] args: GetArgs) -> Result<Summary, StoreError> {
        self.namespace.summarize(&args.key, args.version).await
    }

    /// Delete a key and every version of it; handles to it stop working.
    #[tool(safety = "cautious", category = "store", scope = "core", exclusive = "key")]
    async fn store_delete(&self, #[args] args: KeyArgs) -> Result<DeleteOutcome, StoreError> {
        let deleted_versions = self.namespace.delete(&args.key).await?;
        Ok(DeleteOutcome { key: args.key, deleted_versions })
    }
}

/// What `store_get` returns: for a stored tool output with blocks, its
/// blocks, with the handle and the output's value as the structured value;
/// for anything else, the handle and the value as one JSON value, as it
/// always was.
fn get_output(stored: StoredValue) -> ToolOutput {
    if let Some(output) = stored.output().filter(|output| !output.content.is_empty()) {
        let value = serde_json::json!({"key": stored.key, "version": stored.version, "value": output.value});
        return ToolOutput::from(output.content).with_value(value);
    }
    // A `GetOutput` is JSON already: turning it into a value cannot fail.
    ToolOutput::new(serde_json::to_value(GetOutput::from(stored)).unwrap_or_default())
}

/// What `store_get` shows the model: the handle and the value.
#[derive(Serialize)]
struct GetOutput {
    key: String,
    version: u64,
    value: Value,
}

impl From<StoredValue> for GetOutput {
    fn from(stored: StoredValue) -> Self {
        GetOutput { key: stored.key, version: stored.version, value: stored.value }
    }
}

/// What `store_list` shows the model.
#[derive(Serialize)]
struct ListOutput {
    keys: Vec<ListedKey>,
    next_cursor: Option<String>,
}

#[derive(Serialize)]
struct ListedKey {
    key: String,
    version: u64,
    size: u64,
}

impl From<ListPage> for ListOutput {
    fn from(page: ListPage) -> Self {
        let keys =
            page.entries.into_iter().map(|e| ListedKey { key: e.key, version: e.version, size: e.size }).collect();
        ListOutput { keys, next_cursor: page.next_cursor }
    }
}
