//! The six model-facing store tools, each an ordinary registered tool bound
//! to one [`Namespace`]. Reads are `Safe`, writes `Cautious`; all are in
//! category `store` and scope `Core`. Writes name `key` as their exclusive
//! key, so a batch that writes one key twice does so in call order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::{SafetyLevel, Scope, ToolDeclaration, ToolRegistration};

use super::{ListPage, Namespace, StoreError, StoreRef, StoredValue};

/// The names of the store tools, in registration order.
pub const TOOL_NAMES: [&str; 6] =
    ["store_set", "store_get", "store_ref", "store_list", "store_summarize", "store_delete"];

/// Keys per page when `store_list` is given no limit.
const DEFAULT_LIST_LIMIT: u64 = 100;

/// Arguments of `store_set`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    /// The key: 1 to 256 characters from A-Z, a-z, 0-9 and _ - . / : (use `/` to group keys).
    key: String,
    /// Any JSON value.
    value: Value,
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
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    /// The key.
    key: String,
    /// A version from a handle; omit it for the latest version.
    #[serde(default)]
    version: Option<u64>,
}

/// Arguments of `store_ref` and `store_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KeyArgs {
    /// The key.
    key: String,
}

/// Arguments of `store_list`.
#[derive(Debug, Deserialize, JsonSchema)]
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

fn declaration<Args: JsonSchema + 'static>(name: &str, description: &str, safety: SafetyLevel) -> ToolDeclaration {
    let declaration = ToolDeclaration::for_args::<Args>(name, description)
        .with_safety(safety)
        .with_category("store")
        .with_scope(Scope::Core);
    if safety == SafetyLevel::Safe { declaration } else { declaration.with_exclusive_key("key") }
}

pub(super) fn registrations(namespace: &Namespace) -> Vec<ToolRegistration> {
    let ns = namespace.clone();
    let set = ToolRegistration::from_async(
        "store_set",
        move |args: SetArgs| {
            let ns = ns.clone();
            async move {
                let (handle, size) = ns.set_sized(&args.key, &args.value).await?;
                Ok::<_, StoreError>(SetOutcome { key: handle.key, version: handle.version, size })
            }
        },
        declaration::<SetArgs>(
            "store_set",
            "Store a JSON value under a key, outside your context. Every call makes a new version and returns its \
             handle {key, version}; pass the handle instead of the value to whoever needs it.",
            SafetyLevel::Cautious,
        ),
    );
    let ns = namespace.clone();
    let get = ToolRegistration::from_async(
        "store_get",
        move |args: GetArgs| {
            let ns = ns.clone();
            async move {
                let stored = match args.version {
                    Some(version) => ns.get_version(&args.key, version).await?,
                    None => ns.get(&args.key).await?,
                };
                Ok::<_, StoreError>(GetOutput::from(stored))
            }
        },
        declaration::<GetArgs>(
            "store_get",
            "Read a stored value: the latest version of a key, or exactly the version a handle {key, version} names. \
             For a large value, call store_summarize first.",
            SafetyLevel::Safe,
        ),
    );
    let ns = namespace.clone();
    let reference = ToolRegistration::from_async(
        "store_ref",
        move |args: KeyArgs| {
            let ns = ns.clone();
            async move { ns.reference(&args.key).await }
        },
        declaration::<KeyArgs>(
            "store_ref",
            "Get a small handle {key, version} to the latest version of a key, to pass on instead of the value. \
             The handle keeps naming that version after later writes.",
            SafetyLevel::Safe,
        )
        .with_output_type::<StoreRef>(),
    );
    let ns = namespace.clone();
    let list = ToolRegistration::from_async(
        "store_list",
        move |args: ListArgs| {
            let ns = ns.clone();
            async move {
                let prefix = args.prefix.unwrap_or_default();
                let limit = args.limit.unwrap_or(DEFAULT_LIST_LIMIT);
                ns.list(&prefix, limit, args.cursor.as_deref()).await.map(ListOutput::from)
            }
        },
        declaration::<ListArgs>(
            "store_list",
            "List stored keys in order, one page at a time, with each key's latest version and size. When \
             next_cursor is not null, pass it as cursor to get the next page.",
            SafetyLevel::Safe,
        ),
    );
    let ns = namespace.clone();
    let summarize = ToolRegistration::from_async(
        "store_summarize",
        move |args: GetArgs| {
            let ns = ns.clone();
            async move { ns.summarize(&args.key, args.version).await }
        },
        declaration::<GetArgs>(
            "store_summarize",
            "Describe a stored value without reading it all: its type, size in bytes, nesting depth, object keys or \
             array length and element types, and a short preview.",
            SafetyLevel::Safe,
        ),
    );
    let ns = namespace.clone();
    let delete = ToolRegistration::from_async(
        "store_delete",
        move |args: KeyArgs| {
            let ns = ns.clone();
            async move {
                let deleted_versions = ns.delete(&args.key).await?;
                Ok::<_, StoreError>(DeleteOutcome { key: args.key, deleted_versions })
            }
        },
        declaration::<KeyArgs>(
            "store_delete",
            "Delete a key and every version of it; handles to it stop working.",
            SafetyLevel::Cautious,
        ),
    );
    vec![set, get, reference, list, summarize, delete]
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
