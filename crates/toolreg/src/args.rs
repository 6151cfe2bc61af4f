//! A call's arguments on their way in: limits on size and nesting for every
//! form they arrive in (text or parsed), parsing, and typed deserialisation.
//!
//! Every check here is iterative: nothing an attacker sends can make it
//! recurse, however deep the arguments nest.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::exec::ToolError;
use crate::validate::{self, ArgumentError};

/// Limits on the arguments a call may carry, checked before anything else
/// reads them, whether they arrive as text or already parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentLimits {
    /// Largest arguments, in bytes of compact JSON text (default 1 MiB).
    pub max_bytes: usize,
    /// Deepest array/object nesting (default 64).
    pub max_depth: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits { max_bytes: 1 << 20, max_depth: 64 }
    }
}

impl ArgumentLimits {
    /// Set the size limit in bytes.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Set the nesting limit.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Check argument text, before it is parsed.
    pub fn check_text(&self, text: &str) -> Result<(), ToolError> {
        if text.len() > self.max_bytes {
            return Err(ToolError::ArgumentsTooLarge { size: text.len(), limit: self.max_bytes });
        }
        if validate::json_depth_exceeds(text, self.max_depth) {
            return Err(ToolError::ArgumentsTooDeep { limit: self.max_depth });
        }
        Ok(())
    }

    /// Check parsed arguments: their size as compact JSON text (string
    /// contents counted unescaped) and their nesting, in a walk that stops
    /// as soon as a limit is passed (a second, exact one only for arguments
    /// near the size limit). The walk recurses at most `max_depth` levels
    /// (the configured limit, not the arguments' depth) and allocates
    /// nothing.
    pub fn check_value(&self, value: &Value) -> Result<(), ToolError> {
        // First with every float counted at its longest, which formats
        // nothing; only arguments that may be over the limit are counted
        // again, exactly (measured: value calls with floats 6-13% faster;
        // formatting them to count them was up to a fifth of such a call).
        match self.walk(value, 0, &mut 0, false) {
            Err(ToolError::ArgumentsTooLarge { .. }) => self.walk(value, 0, &mut 0, true),
            checked => checked,
        }
    }

    /// One pass of [`check_value`](Self::check_value); `exact`: count each
    /// float's length rather than its bound.
    fn walk(&self, value: &Value, depth: usize, size: &mut usize, exact: bool) -> Result<(), ToolError> {
        *size += match value {
            Value::Null => 4,
            Value::Bool(b) => 4 + usize::from(!*b),
            Value::Number(n) if !exact && n.is_f64() => MAX_FLOAT_LEN,
            Value::Number(n) => number_len(n),
            Value::String(s) => s.len() + 2,
            Value::Array(items) => 2 + items.len().saturating_sub(1),
            Value::Object(map) => 2 + map.keys().map(|k| k.len() + 3).sum::<usize>() + map.len().saturating_sub(1),
        };
        if *size > self.max_bytes {
            return Err(ToolError::ArgumentsTooLarge { size: *size, limit: self.max_bytes });
        }
        let children: &mut dyn Iterator<Item = &Value> = match value {
            Value::Array(items) => &mut items.iter(),
            Value::Object(map) => &mut map.values(),
            _ => return Ok(()),
        };
        if depth + 1 > self.max_depth {
            return Err(ToolError::ArgumentsTooDeep { limit: self.max_depth });
        }
        for child in children {
            self.walk(child, depth + 1, size, exact)?;
        }
        Ok(())
    }
}

/// The longest a finite `f64` is as JSON text, as serde_json writes it
/// (shortest round trip): a sign, 17 digits, a point and `e-308`.
const MAX_FLOAT_LEN: usize = 24;

/// Length of a number as JSON text: counted for integers, and for a float
/// written as serde_json writes it, into a counter rather than a `String`
/// (measured: calls with float arguments 3–8% faster without the allocation).
fn number_len(n: &Number) -> usize {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => u.checked_ilog10().map_or(1, |d| d as usize + 1),
        (None, Some(i)) => i.unsigned_abs().checked_ilog10().map_or(1, |d| d as usize + 1) + 1,
        _ => json_len(n),
    }
}

/// Length of `value` as compact JSON text, as serde_json writes it, counted
/// without building the text.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Drop arguments without recursion: a value nested deeper than the stack
/// allows would otherwise overflow it when dropped.
pub(crate) fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Parse argument text that passed [`ArgumentLimits::check_text`]; empty
/// text means no arguments.
pub(crate) fn parse(text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(empty());
    }
    serde_json::from_str(text).map_err(|e| ToolError::MalformedArguments { message: e.to_string() })
}

/// The empty argument object, used when a model sends `null` or nothing.
pub(crate) fn empty() -> Value {
    Value::Object(Map::new())
}

/// Models send `null` or nothing for tools without parameters; anything else
/// that is not an object is an error.
pub(crate) fn normalise_root(args: &mut Value) -> Result<(), ToolError> {
    match args {
        Value::Object(_) => Ok(()),
        Value::Null => {
            *args = empty();
            Ok(())
        }
        other => Err(ToolError::InvalidArguments {
            errors: vec![ArgumentError {
                path: String::new(),
                message: format!("expected an object of named arguments, got {}", validate::describe_value(other)),
            }],
        }),
    }
}

/// Deserialize typed arguments from text under the schema's rules (see
/// [`strict_de`](crate::strict_de)): a struct only from an object, an
/// integral float (`3.0`, `1e3`, `-0`) as an integer.
pub(crate) fn from_str<A: DeserializeOwned>(text: &str) -> Result<A, serde_json::Error> {
    crate::strict_de::from_str(text)
}

/// Deserialize typed arguments from a parsed value under the same rules;
/// a refusal is reported with its JSON path.
pub(crate) fn from_value<A: DeserializeOwned>(args: &Value) -> Result<A, ToolError> {
    if let Ok(a) = crate::strict_de::from_value(args) {
        return Ok(a);
    }
    let error = match serde_path_to_error::deserialize::<_, A>(crate::strict_de::Strict(args)) {
        Err(e) => validate::serde_error(e.path(), e.inner()),
        Ok(_) => ArgumentError { path: String::new(), message: "arguments rejected".into() },
    };
    Err(ToolError::InvalidArguments { errors: vec![error] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_limits_match_text_limits() {
        let limits = ArgumentLimits::default().with_max_bytes(19).with_max_depth(2);
        let small = json!({"a": [1, 2], "b": "xy"});
        assert_eq!(small.to_string().len(), 20);
        assert!(matches!(limits.check_value(&small), Err(ToolError::ArgumentsTooLarge { .. })));
        let limits = limits.with_max_bytes(20);
        assert!(limits.check_value(&small).is_ok());
        assert!(matches!(limits.check_value(&json!({"a": [[1]]})), Err(ToolError::ArgumentsTooDeep { limit: 2 })));
        for v in [json!(null), json!(true), json!(false), json!(-12), json!(1.5), json!(u64::MAX), json!("a\"b")] {
            let exact = v.to_string().len();
            let tight = ArgumentLimits::default().with_max_bytes(exact);
            assert!(tight.check_value(&v).is_ok() || v.to_string().contains('\\'), "{v}");
        }
        // Numbers are counted exactly as serde_json writes them.
        for v in [json!(1.5), json!(-0.25), json!(2.0), json!(1e300), json!(-1.0000000000000002e-7), json!(i64::MIN)] {
            let exact = v.to_string().len();
            assert!(ArgumentLimits::default().with_max_bytes(exact).check_value(&v).is_ok(), "{v}");
            let under = ArgumentLimits::default().with_max_bytes(exact - 1).check_value(&v);
            assert!(matches!(under, Err(ToolError::ArgumentsTooLarge { size, .. }) if size == exact), "{v}");
        }
    }

    #[test]
    fn no_float_is_longer_than_its_bound() {
        let mut bits = 0x9e37_79b9_7f4a_7c15_u64;
        let edges =
            [f64::MIN, f64::MAX, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, 5e-324, -5e-324, -1.0000000000000002e-7];
        let random = (0..200_000).map(|_| {
            bits ^= bits << 13;
            bits ^= bits >> 7;
            bits ^= bits << 17;
            f64::from_bits(bits)
        });
        for f in edges.into_iter().chain(random).filter(|f| f.is_finite()) {
            let len = json_len(&Number::from_f64(f).unwrap());
            assert!(len <= MAX_FLOAT_LEN, "{f} is {len} bytes");
        }
        // Numbers parse to `f64` (no `arbitrary_precision`, under which a
        // number keeps its text and the bound would not hold).
        let long: Number = serde_json::from_str("1.000000000000000000000000000000001").unwrap();
        assert_eq!(long.to_string(), "1.0");
    }

    #[test]
    fn a_deep_value_is_refused_and_dropped_without_recursion() {
        let mut v = json!(1);
        for _ in 0..200_000 {
            v = Value::Array(vec![v]);
        }
        assert!(matches!(ArgumentLimits::default().check_value(&v), Err(ToolError::ArgumentsTooDeep { limit: 64 })));
        dispose(v);
    }

    #[test]
    fn integral_floats_deserialise_as_integers() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct A {
            n: i64,
            u: u8,
        }
        assert_eq!(from_value::<A>(&json!({"n": 3.0, "u": 1e2})).unwrap(), A { n: 3, u: 100 });
        assert_eq!(from_value::<A>(&json!({"n": -0.0, "u": 0})).unwrap(), A { n: 0, u: 0 });
        assert!(from_value::<A>(&json!({"n": 1.5, "u": 0})).is_err());
        assert!(from_value::<A>(&json!({"n": 1, "u": 256.0})).is_err());
    }
}
