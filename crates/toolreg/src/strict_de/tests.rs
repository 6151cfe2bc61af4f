//! The adapter against serde_json and the schema's rules.

use std::collections::HashMap;

use proptest::prelude::*;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::{Strict, from_str, from_value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Point {
    x: i64,
    y: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Meters(u32);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Closed {
    level: u8,
    note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    Empty,
    Circle(u32),
    Rect { w: u32, h: u32 },
    Pair(i32, i32),
    At(Point),
}

/// Nested structs, enums, sequences, maps, options and every integer width.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Corpus {
    name: String,
    small: i8,
    count: u16,
    offset: i32,
    id: u64,
    delta: i64,
    wide_u: u128,
    wide_i: i128,
    ratio: f64,
    point: Point,
    points: Vec<Point>,
    labels: HashMap<String, Point>,
    maybe: Option<Point>,
    shapes: Vec<Shape>,
    #[serde(default)]
    tags: Vec<u8>,
    pair: (i16, Point),
    length: Meters,
    closed: Closed,
}

/// Both entry points give the same answer; returns it.
fn both<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> Result<T, String> {
    let from_text = from_str::<T>(text).map_err(|e| e.to_string());
    let value: Value = serde_json::from_str(text).expect("test input is JSON");
    let from_val = from_value::<T>(&value).map_err(|e| e.to_string());
    assert_eq!(from_text.is_ok(), from_val.is_ok(), "{text}: {from_text:?} vs {from_val:?}");
    if let (Ok(a), Ok(b)) = (&from_text, &from_val) {
        assert_eq!(a, b, "{text}");
    }
    from_text
}

#[test]
fn struct_from_array_is_refused_at_the_root() {
    assert_eq!(serde_json::from_str::<Point>("[1, 2]").unwrap(), Point { x: 1, y: 2 });
    let err = both::<Point>("[1, 2]").unwrap_err();
    assert!(err.contains("invalid type: sequence, expected a JSON object for struct Point"), "{err}");
    assert_eq!(both::<Point>(r#"{"x": 1, "y": 2}"#), Ok(Point { x: 1, y: 2 }));
}

#[test]
fn struct_from_array_is_refused_when_nested() {
    #[derive(Debug, PartialEq, Deserialize)]
    struct Nest {
        list: Option<Vec<Point>>,
        map: Option<HashMap<String, Point>>,
        opt: Option<Point>,
        boxed: Option<Box<Point>>,
        shape: Option<Shape>,
        tuple: Option<(u8, Point)>,
        wrapped: Option<Wrapped>,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapped(Point);

    let cases = [
        r#"{"list": [{"x": 1, "y": 2}, [3, 4]]}"#,
        r#"{"map": {"a": [1, 2]}}"#,
        r#"{"opt": [1, 2]}"#,
        r#"{"boxed": [1, 2]}"#,
        r#"{"shape": {"At": [1, 2]}}"#,
        r#"{"shape": {"Rect": [1, 2]}}"#,
        r#"{"tuple": [7, [1, 2]]}"#,
        r#"{"wrapped": [1, 2]}"#,
    ];
    for text in cases {
        let full = text.replacen('{', r#"{"_": 0, "#, 1);
        serde_json::from_str::<Nest>(&full).unwrap_or_else(|e| panic!("serde takes {full}: {e}"));
        let err = both::<Nest>(&full).unwrap_err();
        assert!(err.contains("expected a JSON object for"), "{full}: {err}");
    }
    let ok = r#"{"list": [{"x": 1, "y": 2}], "map": {"a": {"x": 3, "y": 4}}, "shape": {"Rect": {"w": 1, "h": 2}},
                 "tuple": [7, {"x": 5, "y": 6}], "wrapped": {"x": 0, "y": 0}}"#;
    let nest = both::<Nest>(ok).unwrap();
    assert_eq!(nest.map.unwrap()["a"], Point { x: 3, y: 4 });
    assert_eq!(nest.shape, Some(Shape::Rect { w: 1, h: 2 }));
    assert_eq!(nest.tuple, Some((7, Point { x: 5, y: 6 })));
}

#[test]
fn tuples_and_tuple_variants_still_take_arrays() {
    assert_eq!(both::<(i8, String)>(r#"[1, "a"]"#), Ok((1, "a".to_owned())));
    assert_eq!(both::<Shape>(r#"{"Pair": [1, -2]}"#), Ok(Shape::Pair(1, -2)));
    assert_eq!(both::<Meters>("5.0"), Ok(Meters(5)));
}

macro_rules! integral_floats_for {
    ($($ty:ty),*) => {$(
        for text in ["0.0", "-0", "-0.0", "3.0", "1e2", "100E0", "2.5e1"] {
            let expected: $ty = match text { "3.0" => 3, "1e2" | "100E0" => 100, "2.5e1" => 25, _ => 0 };
            // serde_json reads `-0` as the float -0.0, except its 128-bit reader, which reads digits.
            let digits_only = text == "-0" && <$ty>::BITS == 128 && <$ty>::MIN != 0;
            assert_eq!(serde_json::from_str::<$ty>(text).is_err(), !digits_only, "serde on {text}");
            if <$ty>::BITS == 128 {
                // serde_json's text parser reads 128-bit integers as digits only.
                assert_eq!(from_str::<$ty>(text).is_err(), !digits_only, "{text}");
                assert_eq!(from_value::<$ty>(&serde_json::from_str(text).unwrap()).unwrap(), expected);
            } else {
                assert_eq!(both::<$ty>(text), Ok(expected), "{text} as {}", stringify!($ty));
            }
            if <$ty>::BITS < 64 {
                let (min, max) = (<$ty>::MIN as f64, <$ty>::MAX as f64);
                assert_eq!(both::<$ty>(&format!("{min:.1}")), Ok(<$ty>::MIN));
                assert_eq!(both::<$ty>(&format!("{max:.1}")), Ok(<$ty>::MAX));
                assert!(both::<$ty>(&format!("{:.1}", max + 1.0)).is_err());
                assert!(both::<$ty>(&format!("{:.1}", min - 1.0)).is_err());
            }
            assert!(both::<$ty>("1.5").is_err());
            assert!(both::<$ty>("-7.25").is_err());
            assert!(both::<$ty>("1e300").is_err());
            assert!(both::<$ty>("-1e300").is_err());
        }
    )*};
}

#[test]
fn integral_floats_are_taken_for_every_integer_width() {
    integral_floats_for!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);
    assert_eq!(both::<i64>("1e3"), Ok(1000));
    assert_eq!(both::<i64>("-9223372036854775808.0"), Ok(i64::MIN));
    assert_eq!(both::<u64>("9007199254740992.0"), Ok(1 << 53));
    assert_eq!(both::<u64>("1e19"), Ok(10_000_000_000_000_000_000));
    assert_eq!(from_value::<u128>(&json!(1e30)).unwrap(), 1_000_000_000_000_000_019_884_624_838_656);
    assert_eq!(from_value::<i128>(&json!(-1e20)).unwrap(), -100_000_000_000_000_000_000);
    // Integers keep going through serde's own path, at full width.
    assert_eq!(from_str::<u128>("340282366920938463463374607431768211455").unwrap(), u128::MAX);
    assert_eq!(from_str::<i128>("-170141183460469231731687303715884105728").unwrap(), i128::MIN);
}

#[test]
fn fractional_and_out_of_range_floats_are_refused() {
    let err = both::<i64>("1.5").unwrap_err();
    assert!(err.starts_with("invalid type: floating point `1.5`, expected i64"), "{err}");
    let err = both::<i64>("1e300").unwrap_err();
    assert!(err.starts_with("invalid type: floating point `1e+300`, expected i64"), "{err}");
    assert!(both::<i64>("9223372036854775808.0").is_err());
    let err = both::<u8>("-1.0").unwrap_err();
    assert!(err.starts_with("invalid type: floating point `-1.0`, expected u8"), "{err}");
    let err = both::<u8>("256.0").unwrap_err();
    assert!(err.starts_with("invalid type: floating point `256.0`, expected u8"), "{err}");
    assert!(both::<i8>("-129.0").is_err());
    assert!(both::<u64>("18446744073709551615.0").is_err(), "rounds to 2^64, out of range");
    assert!(from_value::<u128>(&json!(1e39)).is_err());
    assert!(from_value::<i128>(&json!(-1e39)).is_err());
    // An integer out of range keeps serde's message.
    let err = both::<u8>("256").unwrap_err();
    assert!(err.starts_with("invalid value: integer `256`, expected u8"), "{err}");
}

#[test]
fn floats_and_untyped_values_are_untouched() {
    assert_eq!(both::<f64>("3.0"), Ok(3.0));
    assert_eq!(both::<f32>("2"), Ok(2.0));
    assert_eq!(both::<f64>("-0.0").map(f64::is_sign_negative), Ok(true));
    let value = from_str::<Value>(r#"{"a": 3.0, "b": [1, -0.0]}"#).unwrap();
    assert!(value["a"].is_f64() && value["b"][1].is_f64() && value["b"][0].is_u64());
    let number = from_str::<serde_json::Number>("3.0").unwrap();
    assert!(number.is_f64());
}

#[test]
fn serde_attributes_behave_as_in_serde() {
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        #[serde(default = "ten")]
        limit: u32,
        #[serde(default)]
        tags: Vec<String>,
        maybe: Option<i8>,
        #[serde(rename = "kind")]
        shape: Option<Shape>,
    }
    fn ten() -> u32 {
        10
    }
    assert_eq!(both::<Args>("{}"), Ok(Args { limit: 10, tags: vec![], maybe: None, shape: None }));
    assert_eq!(
        both::<Args>(r#"{"limit": 2.0, "maybe": null, "kind": "Empty", "tags": ["a\n\u00e9"]}"#),
        Ok(Args { limit: 2, tags: vec!["a\né".to_owned()], maybe: None, shape: Some(Shape::Empty) })
    );
    let err = both::<Args>(r#"{"limits": 1}"#).unwrap_err();
    assert!(err.starts_with("unknown field `limits`, expected one of"), "{err}");
    let err = both::<Args>(r#"{"kind": "Hexagon"}"#).unwrap_err();
    assert!(err.starts_with("unknown variant `Hexagon`"), "{err}");
    let err = both::<Args>(r#"{"kind": "Rect"}"#).unwrap_err();
    assert!(err.starts_with("invalid type: unit variant, expected struct variant"), "{err}");
    let err = from_str::<Args>(r#"{"limit": 1, "limit": 2}"#).unwrap_err().to_string();
    assert!(err.starts_with("duplicate field `limit`"), "{err}");
    let err = both::<Args>(r#"{"maybe": 200}"#).unwrap_err();
    assert!(err.starts_with("invalid value: integer `200`, expected i8"), "{err}");
}

#[test]
fn trailing_characters_and_bad_syntax_are_refused() {
    let err = from_str::<Point>(r#"{"x": 1, "y": 2} x"#).unwrap_err();
    assert!(err.is_syntax() && err.to_string().starts_with("trailing characters"), "{err}");
    assert!(from_str::<Point>(r#"{"x": 1, "y": 2}  "#).is_ok());
    assert!(from_str::<Point>(r#"{"x": 1, "y": 2"#).unwrap_err().is_eof());
    assert!(from_str::<Point>(r#"{"x": 1, "y": 2.}"#).unwrap_err().is_syntax());
    assert!(from_str::<Point>(r#"{"x": 1, "y": 2, "x": 3}"#).unwrap_err().is_data());
}

#[test]
fn borrowed_strings_are_borrowed() {
    #[derive(Deserialize)]
    struct Borrowing<'a> {
        name: &'a str,
        #[serde(borrow)]
        raw: std::borrow::Cow<'a, str>,
    }
    let text = r#"{"name": "plain", "raw": "also plain"}"#;
    let mut de = serde_json::Deserializer::from_str(text);
    let args = Borrowing::deserialize(Strict(&mut de)).unwrap();
    assert_eq!(args.name, "plain");
    assert!(matches!(args.raw, std::borrow::Cow::Borrowed("also plain")));
    let value = json!({"name": "from value", "raw": "x"});
    let args = Borrowing::deserialize(Strict(&value)).unwrap();
    assert_eq!(args.name, "from value");
}

#[derive(Debug, PartialEq, Deserialize)]
struct Outer {
    id: u32,
    #[serde(flatten)]
    inner: Inner,
    #[serde(flatten)]
    rest: HashMap<String, Value>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Inner {
    a: i64,
    b: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    Add { a: i64, b: i64 },
    Neg { a: i64 },
    Reset,
    Move(Point),
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Loose {
    Int(i64),
    Float(f64),
    Point(Point),
    Text(String),
}

#[test]
fn flatten_and_tagged_enums_work() {
    let outer = both::<Outer>(r#"{"id": 7.0, "a": -3, "b": "x", "extra": [1.5]}"#).unwrap();
    assert_eq!(outer.id, 7);
    assert_eq!(outer.inner, Inner { a: -3, b: Some("x".to_owned()) });
    assert_eq!(outer.rest, HashMap::from([("extra".to_owned(), json!([1.5]))]));
    let err = both::<Outer>(r#"{"id": 7, "b": "x"}"#).unwrap_err();
    assert!(err.starts_with("missing field `a`"), "{err}");
    let err = both::<Outer>(r#"[7, -3]"#).unwrap_err();
    assert!(err.starts_with("invalid type: sequence, expected struct Outer"), "{err}");

    assert_eq!(both::<Op>(r#"{"op": "add", "a": 1, "b": 2}"#), Ok(Op::Add { a: 1, b: 2 }));
    assert_eq!(both::<Op>(r#"{"a": 5, "op": "neg"}"#), Ok(Op::Neg { a: 5 }));
    assert_eq!(both::<Op>(r#"{"op": "reset"}"#), Ok(Op::Reset));
    assert_eq!(both::<Op>(r#"{"op": "move", "x": 1, "y": 2}"#), Ok(Op::Move(Point { x: 1, y: 2 })));
    assert!(both::<Op>(r#"{"op": "mul", "a": 1}"#).unwrap_err().starts_with("unknown variant `mul`"));
    assert!(both::<Op>(r#"{"a": 1}"#).unwrap_err().starts_with("missing field `op`"));

    assert_eq!(both::<Loose>("3"), Ok(Loose::Int(3)));
    assert_eq!(both::<Loose>("3.0"), Ok(Loose::Float(3.0)));
    assert_eq!(both::<Loose>(r#"{"x": 1, "y": 2}"#), Ok(Loose::Point(Point { x: 1, y: 2 })));
    assert_eq!(both::<Loose>(r#""s""#), Ok(Loose::Text("s".to_owned())));
}

/// serde deserialises what it buffered with its own deserializer, beyond
/// this adapter's reach: there serde's rules hold, as documented above.
#[test]
fn buffered_content_keeps_serdes_rules() {
    assert!(both::<Outer>(r#"{"id": 7, "a": 3.0}"#).is_err());
    assert!(both::<Op>(r#"{"op": "neg", "a": 3.0}"#).is_err());
    assert_eq!(both::<Op>(r#"["add", 1, 2]"#), Ok(Op::Add { a: 1, b: 2 }));
    assert_eq!(both::<Loose>("[1, 2]"), Ok(Loose::Point(Point { x: 1, y: 2 })));
}

/// The JSON pointer of the value `serde_path_to_error` blames.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => format!("/{index}"),
            Segment::Map { key } => format!("/{key}"),
            Segment::Enum { variant } => format!("/{variant}"),
            Segment::Unknown => "/?".to_owned(),
        })
        .collect()
}

#[test]
fn error_paths_reach_through_the_adapter() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Args {
        items: Vec<Point>,
        shape: Option<Shape>,
    }
    let cases = [
        (r#"{"items": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 1.5, "y": 0}]}"#, "/items/2/x", "floating point"),
        (r#"{"items": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, [1, 2]]}"#, "/items/2", "a JSON object for"),
        (r#"{"items": [], "shape": {"At": {"x": "1", "y": 2}}}"#, "/shape/At/x", "string \"1\""),
        (r#"{"items": [], "shape": {"Rect": {"w": 1, "h": -2.0}}}"#, "/shape/Rect/h", "floating point `-2.0`"),
    ];
    for (text, at, says) in cases {
        let mut de = serde_json::Deserializer::from_str(text);
        let err = serde_path_to_error::deserialize::<_, Args>(Strict(&mut de)).unwrap_err();
        assert_eq!(pointer(err.path()), at, "{text}");
        assert!(err.inner().to_string().contains(says), "{text}: {}", err.inner());

        let value: Value = serde_json::from_str(text).unwrap();
        let err = serde_path_to_error::deserialize::<_, Args>(Strict(&value)).unwrap_err();
        assert_eq!(pointer(err.path()), at, "{text}");
        assert!(err.inner().to_string().contains(says), "{text}: {}", err.inner());
    }
    let mut de = serde_json::Deserializer::from_str(r#"{"items": [{"x": 1.0, "y": 2e0}]}"#);
    let args = serde_path_to_error::deserialize::<_, Args>(Strict(&mut de)).unwrap();
    assert_eq!(args.items, [Point { x: 1, y: 2 }]);
}

#[test]
fn nesting_depth_stays_bounded() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Node {
        next: Option<Box<Node>>,
    }
    let nested = |depth: usize| format!("{}null{}", r#"{"next": "#.repeat(depth), "}".repeat(depth));
    assert!(from_str::<Node>(&nested(100)).is_ok());
    let err = from_str::<Node>(&nested(100_000)).unwrap_err();
    assert!(err.to_string().starts_with("recursion limit exceeded"), "{err}");
    let err = from_str::<Value>(&"[".repeat(100_000)).unwrap_err();
    assert!(err.to_string().starts_with("recursion limit exceeded"), "{err}");
}

fn point() -> impl Strategy<Value = Point> {
    (any::<i64>(), any::<i64>()).prop_map(|(x, y)| Point { x, y })
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Empty),
        any::<u32>().prop_map(Shape::Circle),
        (any::<u32>(), any::<u32>()).prop_map(|(w, h)| Shape::Rect { w, h }),
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| Shape::Pair(a, b)),
        point().prop_map(Shape::At),
    ]
}

prop_compose! {
    fn corpus()(
        name in "[a-z\"\\\\é\n]{0,8}",
        ints in (any::<i8>(), any::<u16>(), any::<i32>(), any::<u64>(), any::<i64>()),
        wide_u in prop_oneof![any::<u128>(), any::<u64>().prop_map(u128::from)],
        wide_i in prop_oneof![any::<i128>(), any::<i64>().prop_map(i128::from)],
        quarters in any::<i32>(),
        point in point(),
        points in proptest::collection::vec(point(), 0..4),
        labels in proptest::collection::hash_map("[a-z]{0,3}", point(), 0..3),
        maybe in proptest::option::of(point()),
        shapes in proptest::collection::vec(shape(), 0..4),
        tags in proptest::collection::vec(any::<u8>(), 0..4),
        pair in (any::<i16>(), point()),
        length in any::<u32>(),
        closed in (any::<u8>(), proptest::option::of("[a-z]{0,4}")),
    ) -> Corpus {
        let (small, count, offset, id, delta) = ints;
        Corpus {
            name, small, count, offset, id, delta, wide_u, wide_i,
            // Quarters print and parse back exactly.
            ratio: f64::from(quarters) / 4.0,
            point, points, labels, maybe, shapes, tags, pair,
            length: Meters(length),
            closed: Closed { level: closed.0, note: closed.1 },
        }
    }
}

/// What was done to a value, for judging the answers.
#[derive(Debug, Default)]
struct Changes {
    /// Some object became the array of its values (serde reads a struct from one).
    object_as_array: bool,
}

/// Applies one change per node where `ops` says so (0..=7: none).
fn mutate(value: &mut Value, ops: &mut impl Iterator<Item = u8>, wide: bool, changes: &mut Changes) {
    const EXACT: f64 = (1u64 << 52) as f64;
    let op = ops.next().unwrap_or(0) % 16;
    let int = value.as_i64().map(|n| n as f64).or_else(|| value.as_u64().map(|n| n as f64));
    match (op, &mut *value, int) {
        // Integral float, then fractional, then far out of range.
        (8, _, Some(n)) if !wide && n.abs() < EXACT => *value = json!(n),
        (9, _, Some(n)) if !wide && n.abs() < EXACT => *value = json!(n + 0.5),
        (10, _, Some(_)) => *value = json!(-1e300),
        (11, _, Some(n)) if !wide && n.abs() < EXACT => *value = json!(-n - 1.0),
        (12, Value::Object(map), _) => {
            changes.object_as_array = true;
            *value = Value::Array(std::mem::take(map).into_iter().map(|(_, v)| v).collect());
        }
        (13, _, _) => *value = Value::Null,
        (14, Value::Object(map), _) => {
            map.insert("unknown".to_owned(), json!(1));
        }
        (15, Value::Object(map), _) => {
            let first = map.keys().next().cloned();
            first.map(|key| map.remove(&key));
        }
        (15, Value::Array(items), _) => {
            items.pop();
        }
        (14 | 15, _, Some(n)) => *value = json!(n.to_string()),
        _ => match value {
            Value::Array(items) => items.iter_mut().for_each(|item| mutate(item, ops, wide, changes)),
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    mutate(item, ops, key.starts_with("wide"), changes);
                }
            }
            _ => {}
        },
    }
}

/// Integral floats in the range of `i64` or `u64`, written as integers.
fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0) {
                if (-9.223_372_036_854_776e18..0.0).contains(&f) {
                    *value = json!(f as i64);
                } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
                    *value = json!(f as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Object(map) => map.values_mut().for_each(normalize),
        _ => {}
    }
}

proptest! {
    #[test]
    fn corpus_round_trips(c in corpus()) {
        let text = serde_json::to_string(&c).unwrap();
        prop_assert_eq!(from_str::<Corpus>(&text).unwrap(), c.clone());
        let pretty = serde_json::to_string_pretty(&c).unwrap();
        prop_assert_eq!(from_str::<Corpus>(&pretty).unwrap(), c.clone());
        if let Ok(value) = serde_json::to_value(&c) {
            prop_assert_eq!(from_value::<Corpus>(&value).unwrap(), c);
        }
    }

    /// What the adapter takes, serde takes once integral floats are written
    /// as integers, with the same result; what serde takes so, the adapter
    /// takes unless an object became an array.
    #[test]
    fn refuses_what_serde_refuses_but_integral_floats(
        mut c in corpus(),
        ops in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        // `Value` holds 64-bit integers only.
        c.wide_u %= 1 << 64;
        c.wide_i = c.wide_i.clamp(i64::MIN.into(), i64::MAX.into());
        let mut value = serde_json::to_value(&c).unwrap();
        let mut changes = Changes::default();
        mutate(&mut value, &mut ops.into_iter(), false, &mut changes);
        let text = value.to_string();
        let mut normal = value.clone();
        normalize(&mut normal);
        let normal_text = normal.to_string();

        let serde_normal = serde_json::from_value::<Corpus>(normal).map_err(|e| e.to_string());
        let serde_text = serde_json::from_str::<Corpus>(&text).map_err(|e| e.to_string());
        let ours_text = from_str::<Corpus>(&text).map_err(|e| e.to_string());
        let ours_value = from_value::<Corpus>(&value).map_err(|e| e.to_string());

        for ours in [&ours_text, &ours_value] {
            // Every object of the corpus is a struct, a map or an enum: none is an array.
            prop_assert!(!changes.object_as_array || ours.is_err(), "{} taken", text);
            if let Ok(taken) = ours {
                prop_assert_eq!(Ok(taken), serde_normal.as_ref(), "{}", text);
            }
            match (&serde_normal, ours) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Ok(_), Err(e)) => prop_assert!(
                    changes.object_as_array && e.contains("a JSON object for"), "{} refused: {}", text, e
                ),
                (Err(_), _) => {}
            }
        }
        // What serde refused and the adapter took had integral floats in it.
        if serde_text.is_err() && ours_text.is_ok() {
            prop_assert_ne!(text, normal_text);
        }
    }
}
