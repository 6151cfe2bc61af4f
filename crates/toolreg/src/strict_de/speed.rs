//! How much the adapter costs over plain serde_json on the same input. A
//! measurement, not a check (`cargo test --release -p toolreg --lib
//! strict_de::speed -- --ignored --nocapture`): it prints the best of 15 rounds
//! of each, interleaved.

#![allow(dead_code, reason = "the fields are parsed, never read")]

use std::{collections::HashMap, hint::black_box, time::Instant};

use serde::{Deserialize, de::DeserializeOwned};

#[derive(Deserialize)]
struct Flat {
    a: i64,
    b: i64,
}

#[derive(Deserialize)]
struct Point {
    x: i64,
    y: i64,
}

#[derive(Deserialize)]
enum Kind {
    Plain,
    Scaled { factor: f64 },
}

#[derive(Deserialize)]
struct Nested {
    name: String,
    points: Vec<Point>,
    origin: Option<Point>,
    kind: Kind,
    weights: HashMap<String, u32>,
    limit: u16,
}

fn ns_per<T: DeserializeOwned>(text: &str, strict: bool, n: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let text = black_box(text);
        let v: T = if strict { super::from_str(text).unwrap() } else { serde_json::from_str(text).unwrap() };
        black_box(v);
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

fn compare<T: DeserializeOwned>(label: &str, text: &str, n: u32) {
    let (mut plain, mut strict) = (f64::MAX, f64::MAX);
    for _ in 0..15 {
        plain = plain.min(ns_per::<T>(text, false, n));
        strict = strict.min(ns_per::<T>(text, true, n));
    }
    println!("{label}: serde_json {plain:.1} ns, strict {strict:.1} ns, ratio {:.3}", strict / plain);
}

#[test]
#[ignore = "a measurement; run in release with --nocapture"]
fn speed() {
    compare::<Flat>("flat", r#"{"a": 12, "b": -7}"#, 200_000);
    let nested = r#"{"name": "route one", "points": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": -5, "y": 6},
        {"x": 7, "y": 8}], "origin": {"x": 0, "y": 0}, "kind": {"Scaled": {"factor": 1.5}},
        "weights": {"a": 1, "b": 2, "c": 3}, "limit": 10}"#;
    compare::<Nested>("nested", nested, 50_000);
}
