//! The host against a worker that misbehaves: it never answers, stalls
//! mid-message, sends a message without end, sends garbage or dies. Each
//! ends the program with a typed error, promptly, and the host goes on.
//! (The real worker cannot be made to do these from a program; a shell
//! script stands in for it.)

#![cfg(unix)]

use crate::support as common;

use std::time::{Duration, Instant};

use common::{engine, runs};
use serde_json::json;
use toolreg_code::{CodeError, CodeMode, Limits, Worker};

/// A worker that runs `script` under `/bin/sh` (with an empty environment,
/// as every worker starts).
fn scripted(script: &str) -> CodeMode {
    let limits = Limits { time: Duration::from_millis(300), message_bytes: 4096, ..Limits::default() };
    CodeMode::new(Worker::new("/bin/sh").arg("-c").arg(script)).limits(limits)
}

async fn refused(script: &str) -> (CodeError, Duration) {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let started = Instant::now();
    let error = scripted(script).run(&engine, "return 1;").await.unwrap_err();
    assert!(runs.lock().unwrap().is_empty(), "a tool ran");
    (error, started.elapsed())
}

#[tokio::test]
async fn a_worker_that_never_answers_is_stopped_by_the_hosts_clock() {
    let (error, took) = refused("exec /bin/sleep 60").await;
    assert_eq!(error, CodeError::Timeout { limit_ms: 300 });
    // The limit plus the host's grace, not the worker's sixty seconds.
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn a_worker_that_stalls_mid_message_is_stopped_too() {
    let (error, took) = refused("printf '{\"type\": \"do'; exec /bin/sleep 60").await;
    assert_eq!(error, CodeError::Timeout { limit_ms: 300 });
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn a_message_without_end_is_cut_at_the_limit() {
    let (error, _) = refused("while :; do printf xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done").await;
    let CodeError::Sandbox { message } = error else { panic!("{error:?}") };
    assert!(message.contains("more than 4096 bytes at once"), "{message}");
}

#[tokio::test]
async fn a_malformed_message_is_a_sandbox_error() {
    let (error, _) = refused("printf 'hello\\n'; exec /bin/sleep 60").await;
    let CodeError::Sandbox { message } = error else { panic!("{error:?}") };
    assert!(message.contains("malformed message"), "{message}");
}

#[tokio::test]
async fn a_worker_that_dies_is_reported_with_its_exit() {
    let (error, _) = refused("exit 3").await;
    let CodeError::Sandbox { message } = error else { panic!("{error:?}") };
    assert!(message.contains("exit status: 3"), "{message}");
}

#[tokio::test]
async fn the_host_runs_programs_again_afterwards() {
    refused("exec /bin/sleep 60").await;
    let runs = runs();
    let (engine, _) = engine(&runs);
    let out = common::code().run(&engine, "return await tools.add({a: 2, b: 3});").await.unwrap();
    assert_eq!(out.value, json!(5));
}
