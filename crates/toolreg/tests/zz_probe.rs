use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::HashMap;
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
struct Point { x: f64, y: f64 }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
enum Unit { A, B }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
enum Mixed { A, B(u8), C { x: i32 } }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)] #[serde(tag = "kind")]
enum Tagged { Circle { r: f64 }, Square { side: f64 } }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)] #[serde(untagged)]
enum Untagged { N(i64), S(String) }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
struct Node { name: String, children: Vec<Node>, parent: Option<Box<Node>> }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
struct Args { p: Point, op: Option<Point>, ou: Option<Unit>, m: Mixed, t: Tagged, u: Untagged, map: HashMap<String, u32>, v: Vec<String>, #[serde(default)] d: u64, #[schemars(with = "String", extend("format" = "date-time"))] when: String, #[schemars(length(min = 1, max = 5))] s: String, ob: Option<bool> }
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
struct Empty {}
#[derive(Deserialize, JsonSchema)] #[allow(dead_code)]
struct Rec { root: Node }
#[test] fn probe() {
  println!("{}", serde_json::to_string_pretty(&toolreg::schema::schema_for::<Args>()).unwrap());
  println!("{}", serde_json::to_string(&toolreg::schema::schema_for::<Empty>()).unwrap());
  println!("{}", serde_json::to_string(&toolreg::schema::schema_for::<()>()).unwrap());
  println!("{}", serde_json::to_string(&toolreg::schema::schema_for::<Rec>()).unwrap());
}
