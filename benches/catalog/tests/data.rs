//! The data the bench measures on is what the README says it is.

use std::collections::HashSet;

use toolreg_catalog_benches as catalog;

#[test]
fn the_catalog_has_over_500_distinct_hand_written_tools() {
    let specs = catalog::specs();
    assert!(specs.len() >= 500, "{} tools", specs.len());
    let names = catalog::tool_names();
    assert_eq!(names.len(), specs.len(), "a gateway name is given twice");
    for spec in &specs {
        assert!(spec.description.len() >= 12 && spec.description.ends_with('.'), "{}: a sentence", spec.name);
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
    }
    let servers: HashSet<&str> = specs.iter().map(|s| s.server.as_str()).collect();
    assert!(servers.len() >= 50, "{} servers", servers.len());
}

#[test]
fn every_label_names_a_tool_of_the_catalog() {
    let names = catalog::tool_names();
    for (file, queries) in [("queries.txt", catalog::queries()), ("heldout.txt", catalog::heldout())] {
        assert!(queries.len() >= 100, "data/{file}: {} requests", queries.len());
        for q in &queries {
            for answer in &q.answers {
                assert!(
                    names.contains(answer),
                    "data/{file}: \"{}\" names `{answer}`, not in data/tools.txt",
                    q.request
                );
            }
        }
        let requests: HashSet<&str> = queries.iter().map(|q| q.request.as_str()).collect();
        assert_eq!(requests.len(), queries.len(), "data/{file}: a request is given twice");
    }
}

#[test]
fn the_held_out_set_shares_no_request_with_the_tuning_set_and_spans_the_servers() {
    let tuning: HashSet<String> = catalog::queries().into_iter().map(|q| q.request.to_lowercase()).collect();
    let heldout = catalog::heldout();
    assert!(heldout.len() >= 120, "{} held-out requests", heldout.len());
    for q in &heldout {
        assert!(!tuning.contains(&q.request.to_lowercase()), "\"{}\" is in both sets", q.request);
    }
    let servers: HashSet<&str> =
        heldout.iter().flat_map(|q| &q.answers).filter_map(|a| a.split(catalog::SEPARATOR).next()).collect();
    assert!(servers.len() >= 50, "the held-out set asks for tools of only {} servers", servers.len());
}

#[test]
fn registries_of_any_size_have_the_core_first_then_distinct_mcp_tools() {
    let core = catalog::core_len();
    assert!((10..=15).contains(&core), "{core} core tools");
    for n in [20, 50, 1_000] {
        let registry = catalog::registry(n);
        assert_eq!(registry.len(), n);
        assert!(registry.get("search_tools").is_some());
        let first_mcp = registry.list().map(|tool| tool.name()).nth(core).unwrap_or_default();
        assert!(first_mcp.starts_with("filesystem__"), "{first_mcp}");
    }
    // Past the hand-written tools, the same servers again under new names.
    let copies = catalog::mcp_declarations(catalog::specs().len() + 1);
    let last = copies.last().map(|d| d.name.clone()).unwrap_or_default();
    assert_eq!(last, "filesystem_2__read_text_file");
    assert!(copies.last().is_some_and(|d| d.categories == ["mcp", "filesystem_2"]));
}

#[test]
fn schemas_follow_the_parameter_lines() {
    let specs = catalog::parse_tools(
        "@server s\nsend | Send a message to someone. | to:string:Recipient ; cc?:string[]:Copies ; n?:integer:Count\n",
    )
    .unwrap();
    assert_eq!(
        specs[0].input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "Recipient"},
                "cc": {"type": "array", "items": {"type": "string"}, "description": "Copies"},
                "n": {"type": "integer", "description": "Count"}
            },
            "required": ["to"]
        })
    );
}

#[test]
fn bad_lines_are_reported_with_their_number() {
    let error = catalog::parse_tools("@server s\nok | A fine tool here. |\nbroken line\n").unwrap_err();
    assert_eq!(error.line, 3);
    let error = catalog::parse_tools("@server s\nt | A tool. | x:float:Nope\n").unwrap_err();
    assert!(error.reason.contains("unknown type `float`"), "{error}");
    assert_eq!(catalog::parse_tools("t | A tool. |\n").unwrap_err().line, 1);
    assert_eq!(catalog::parse_queries("# c\nno arrow\n").unwrap_err().line, 2);
}

#[test]
fn recall_counts_any_answer_within_k() {
    let queries = catalog::parse_queries("a => x, y\nb => z\n").unwrap();
    let ranked = vec![vec!["q".to_owned(), "y".to_owned()], vec!["z".to_owned()]];
    assert_eq!(catalog::recall_at(&queries, &ranked, 1), 0.5);
    assert_eq!(catalog::recall_at(&queries, &ranked, 2), 1.0);
}
