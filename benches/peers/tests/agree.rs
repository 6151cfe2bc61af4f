//! The three sides answer the same: every good call gives the tool's value,
//! every bad call is refused as a tool error, and toolreg's refusal names
//! where in the arguments the wrong value is. Without this the benches could
//! time three different things.

use futures_util::FutureExt;
use toolreg::{CallOptions, FunctionRegistry, ToolCall, ToolExecutor};
use toolreg_peer_benches::{cases, fillers, rmcp_side, toolreg_side};

fn close(text: &str, expected: f64) -> bool {
    text.trim_matches(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .parse::<f64>()
        .is_ok_and(|x| (x - expected).abs() < 1e-9)
}

#[test]
fn toolreg_answers_good_and_names_the_path_of_bad() {
    let registry = toolreg_side::registry().unwrap();
    for case in cases::all() {
        let from_value = registry.execute(case.tool, case.good()).now_or_never().unwrap().unwrap();
        let by_text =
            |text| ToolExecutor::execute_call(&registry, ToolCall::new("c1", case.tool, text), Default::default());
        let from_text = by_text(case.good_text).now_or_never().unwrap().outcome.unwrap();
        for output in [from_value, from_text] {
            assert!(close(&output.text(), case.expected), "{}: {}", case.shape, output.text());
        }
        for bad in [
            registry.execute(case.tool, case.bad()).now_or_never().unwrap(),
            by_text(case.bad_text).now_or_never().unwrap().outcome,
        ] {
            let error = bad.expect_err(case.shape).to_string();
            assert!(error.contains(case.bad_path), "{}: {error}", case.shape);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn rmcp_router_answers_good_and_refuses_bad() {
    let server = rmcp_side::RmcpServer::start();
    for case in cases::all() {
        let good = rmcp_side::answer_text(&server.call(case.tool, case.good_object()).await);
        assert!(close(&good.clone().unwrap(), case.expected), "{}: {good:?}", case.shape);
        let bad = rmcp_side::answer_text(&server.call(case.tool, case.bad_object()).await);
        assert!(bad.is_err(), "{}: {bad:?}", case.shape);
    }
}

#[cfg(feature = "rig")]
#[tokio::test]
async fn rig_toolset_answers_good_and_refuses_bad() {
    use toolreg_peer_benches::rig_side;
    let set = rig_side::toolset();
    let mut context = rig_core::tool::ToolContext::default();
    for case in cases::all() {
        let good = rig_side::answer_text(&set.execute(case.tool, case.good_text, &mut context).await);
        assert!(close(&good.clone().unwrap(), case.expected), "{}: {good:?}", case.shape);
        let bad = rig_side::answer_text(&set.execute(case.tool, case.bad_text, &mut context).await);
        assert!(bad.is_err(), "{}: {bad:?}", case.shape);
    }
}

#[test]
fn fillers_register_and_list_on_every_side() {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, fillers::toolreg(50)).unwrap();
    assert_eq!(registry.get_declarations().len(), 50);
    let call = ToolCall::new("c1", fillers::name(1), cases::all()[1].good_text);
    assert!(!registry.execute_call(call, CallOptions::default()).now_or_never().unwrap().is_error());

    let mut router = rmcp::handler::server::tool::ToolRouter::new();
    for route in fillers::rmcp(50) {
        router.add_route(route);
    }
    assert_eq!(router.list_all().len(), 50);
}
