//! Tool search over a large catalog: building the index of 10,000 tools,
//! and one search of it (a few words, as a model writes them).
//!
//! The catalog is generated: every combination of an action, an object and
//! a service, each tool with a sentence of description and two described
//! parameters, like the tools of real MCP servers.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolreg::search::ToolIndex;
use toolreg::{ParamType, ToolDeclaration};

const ACTIONS: &[&str] = &[
    "get", "list", "create", "update", "delete", "search", "export", "import", "archive", "restore", "share", "watch",
    "sync", "count", "rename", "tag", "lock", "copy", "move", "preview", "validate", "publish", "schedule", "cancel",
    "approve",
];
const OBJECTS: &[&str] = &[
    "issue",
    "pull_request",
    "file",
    "folder",
    "message",
    "channel",
    "calendar_event",
    "invoice",
    "customer",
    "order",
    "ticket",
    "dashboard",
    "metric",
    "alert",
    "deployment",
    "container",
    "database_table",
    "spreadsheet_row",
    "document",
    "comment",
    "label",
    "user",
    "team",
    "webhook",
    "secret",
    "backup",
    "report",
    "task",
    "contact",
    "playlist",
    "photo",
    "video",
    "note",
    "bookmark",
    "branch",
    "commit",
    "release",
    "pipeline",
    "build",
    "log",
];
const SERVICES: &[&str] =
    &["github", "gitlab", "slack", "jira", "notion", "drive", "stripe", "shopify", "zendesk", "datadog", "kubernetes"];

/// 11,000 tools: every service × object × action, cut to `n`.
fn catalog(n: usize) -> Vec<ToolDeclaration> {
    let mut tools = Vec::with_capacity(n);
    'all: for service in SERVICES {
        for object in OBJECTS {
            for action in ACTIONS {
                if tools.len() == n {
                    break 'all;
                }
                let words = object.replace('_', " ");
                tools.push(
                    ToolDeclaration::builder(format!("{service}__{action}_{object}"))
                        .description(format!("{action} a {words} in {service}, and return what changed"))
                        .param("id", ParamType::String, format!("The {words}'s identifier in {service}"))
                        .optional_param("limit", ParamType::Integer, "At most this many results")
                        .category(*service)
                        .build(),
                );
            }
        }
    }
    tools
}

fn bench(c: &mut Criterion) {
    let tools = catalog(10_000);
    let mut group = c.benchmark_group("search");
    group.bench_function("index_10k_tools", |b| b.iter(|| black_box(ToolIndex::new(&tools))));
    let index = ToolIndex::new(&tools);
    group.bench_function("search_10k_tools", |b| {
        b.iter(|| black_box(index.search(black_box("archive an old invoice in stripe"), 5)))
    });
    group.bench_function("regex_10k_tools", |b| {
        b.iter(|| black_box(index.search_regex(black_box("^slack__.*message"), 5)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
