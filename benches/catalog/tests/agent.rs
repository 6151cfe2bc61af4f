//! The bench counts the tools the agent really offers: its first request
//! carries the always-on core, and after one `search_tools` call the next
//! carries the core and then exactly what `Deferral::search` found.

use serde_json::json;
use toolreg::engine::ToolEngine;
use toolreg_catalog_benches as catalog;
use toolreg_llm::scripted::ScriptedClient;
use toolreg_llm::{Agent, RunOutcome};

#[tokio::test(flavor = "multi_thread")]
async fn the_offered_tools_are_the_ones_the_bench_declares() {
    let registry = catalog::registry(500);
    let deferral = catalog::deferral();
    let query = "cancel the customer's Stripe subscription";
    let model = ScriptedClient::new().then_call("c1", "search_tools", json!({"query": query})).then_text("done");
    let agent = Agent::builder(model.clone(), "m", ToolEngine::builder(&registry)).defer(deferral.clone()).build();
    let outcome = agent.run("Cancel the subscription of cus_123.").await.unwrap();
    assert!(matches!(outcome, RunOutcome::Finished(_)), "{outcome:?}");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let offered = |i: usize| requests[i].tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let core: Vec<String> = catalog::always_on(&registry, &deferral).into_iter().map(str::to_owned).collect();
    assert_eq!(core.len(), catalog::core_len());
    assert!(core.contains(&"search_tools".to_owned()));
    assert_eq!(offered(0), core);
    let after = catalog::after_search(&registry, &deferral, query);
    assert_eq!(offered(1), after);
    assert_eq!(after.len(), core.len() + catalog::SEARCH_LIMIT);
    assert!(after.contains(&"stripe__cancel_subscription".to_owned()), "{after:?}");
}
