//! The program's values as the sandbox reads them: as JSON (a call's
//! arguments, the program's result) and as text (what it prints, what it
//! throws), read from the interpreter's memory without running any of the
//! program's code.
//!
//! `JSON.stringify` would ask the program: it calls `toJSON` found on any
//! prototype, runs getters and `Proxy` traps, and turns a `String` object
//! into whatever its `toString` returns; a program that patched one of
//! those would change what a tool receives after the program wrote it. So
//! only a value's own enumerable data properties count here; a getter, a
//! proxy, a function, a `String`/`Number`/`Boolean` object, a `Date` or a
//! `Map` is refused as arguments (with where it was and what to pass
//! instead), and shown as a marker when printed. The few built-ins used
//! ([`Natives`]) are taken before the program runs, so what it does to the
//! globals changes none of them.

use rquickjs::function::This;
use rquickjs::object::Filter;
use rquickjs::{Array, Coerced, FromJs, Function, Object, Type, Value};

/// How long a prototype chain is followed (looking for a built-in kind, or
/// a property along it).
const CHAIN: usize = 64;

/// The built-ins the sandbox reads values with, as they were before the
/// program ran.
pub(super) struct Natives<'js> {
    describe: Function<'js>,
    has_own: Function<'js>,
    slice: Function<'js>,
    well_formed: Function<'js>,
    length: Function<'js>,
    /// `Error.prototype`'s `stack` getter.
    stack: Function<'js>,
    /// Prototypes whose objects are not plain data, and what to say of them.
    kinds: Vec<(Object<'js>, &'static str)>,
}

impl<'js> Natives<'js> {
    /// From the list `prelude.js` takes before the program runs (its
    /// `natives`): the functions in its order, the prototypes of [`KINDS`]
    /// in theirs, and the `stack` getter.
    pub(super) fn from_list(taken: &Array<'js>) -> rquickjs::Result<Self> {
        let prototypes: Array<'js> = taken.get(5)?;
        let mut kinds = Vec::with_capacity(KINDS.len());
        for (index, message) in KINDS.iter().enumerate() {
            kinds.push((prototypes.get(index)?, *message));
        }
        Ok(Natives {
            describe: taken.get(0)?,
            has_own: taken.get(1)?,
            slice: taken.get(2)?,
            well_formed: taken.get(3)?,
            length: taken.get(4)?,
            stack: taken.get(6)?,
            kinds,
        })
    }

    /// The value of `object`'s own data property `key`: `Absent` when it
    /// has none, `Accessor` for a getter or setter (not run).
    fn own(&self, object: &Object<'js>, key: &Value<'js>) -> rquickjs::Result<Own<'js>> {
        let descriptor: Value<'js> = self.describe.call((object.clone(), key.clone()))?;
        let Some(descriptor) = descriptor.into_object() else { return Ok(Own::Absent) };
        // The descriptor is a fresh ordinary object: reading its own
        // `value` finds it without a look at any prototype.
        if self.has_own.call((descriptor.clone(), "value"))? {
            Ok(Own::Data(descriptor.get("value")?))
        } else {
            Ok(Own::Accessor)
        }
    }

    /// The data property `key` of `object` or the nearest prototype that
    /// has it; `None` where that is a getter, behind a proxy, or nowhere.
    pub(super) fn data_property(&self, object: &Object<'js>, key: &str) -> rquickjs::Result<Option<Value<'js>>> {
        let key = rquickjs::String::from_str(object.ctx().clone(), key)?.into_value();
        let mut current = object.clone();
        for _ in 0..CHAIN {
            if current.as_value().is_proxy() {
                return Ok(None);
            }
            match self.own(&current, &key)? {
                Own::Data(value) => return Ok(Some(value)),
                Own::Accessor => return Ok(None),
                Own::Absent => match current.get_prototype() {
                    Some(prototype) => current = prototype,
                    None => return Ok(None),
                },
            }
        }
        Ok(None)
    }

    /// An error's stack trace: its own `stack` where the program set one
    /// (as data), else the trace the interpreter keeps inside it, read
    /// with the original getter.
    pub(super) fn stack(&self, error: &Object<'js>) -> rquickjs::Result<Option<Value<'js>>> {
        let key = rquickjs::String::from_str(error.ctx().clone(), "stack")?.into_value();
        match self.own(error, &key)? {
            Own::Data(value) => Ok(Some(value)),
            Own::Accessor => Ok(None),
            Own::Absent => self.stack.call((This(error.clone()),)).map(Some),
        }
    }

    /// What built-in kind `object` is, if it is not plain data.
    fn kind(&self, object: &Object<'js>) -> Option<&'static str> {
        let mut current = object.get_prototype();
        for _ in 0..CHAIN {
            let prototype = current?;
            if prototype.as_value().is_proxy() {
                return None;
            }
            if let Some((_, message)) = self.kinds.iter().find(|(kind, _)| kind == &prototype) {
                return Some(message);
            }
            current = prototype.get_prototype();
        }
        None
    }

    /// At most `chars` UTF-16 units of `text` (lone surrogates made
    /// U+FFFD), and how many there are in all: never more of a long
    /// string is copied than is kept.
    pub(super) fn prefix(&self, text: &rquickjs::String<'js>, chars: usize) -> rquickjs::Result<(String, usize)> {
        let total: usize = self.length.call((text.clone(),))?;
        let cut: rquickjs::String<'js> =
            if total > chars { self.slice.call((This(text.clone()), 0, chars))? } else { text.clone() };
        let whole: rquickjs::String<'js> = self.well_formed.call((This(cut),))?;
        Ok((whole.to_string()?, total))
    }
}

/// What to say of the objects of each prototype `prelude.js` lists (in its
/// order): built-in objects that are not plain data.
const KINDS: [&str; 16] = [
    "a String object (new String(…)) is not a string: pass the string itself",
    "a Number object (new Number(…)) is not a number: pass the number itself",
    "a Boolean object (new Boolean(…)) is not a boolean: pass true or false",
    "a Symbol object is not JSON",
    "a BigInt object is not JSON: pass Number(x) or String(x)",
    "a Date is not JSON: pass date.toISOString() or date.getTime()",
    "a RegExp is not JSON: pass its source text",
    "a Map is not JSON: pass Object.fromEntries(map) or [...map]",
    "a Set is not JSON: pass [...set]",
    "a WeakMap is not JSON",
    "a WeakSet is not JSON",
    "a Promise is not JSON: await it first",
    "an Error is not JSON: pass error.message",
    "an ArrayBuffer is not JSON: pass Array.from(new Uint8Array(buffer))",
    "a typed array is not JSON: pass Array.from(array)",
    "a function is not JSON",
];

enum Own<'js> {
    Absent,
    Accessor,
    Data(Value<'js>),
}

/// Why a value was not written.
#[derive(Debug)]
pub(super) enum Refused {
    /// Not plain data: what it is and what to do, and where (`.a[2]`).
    NotData { what: String, at: String },
    /// A string or key holds half of a UTF-16 surrogate pair: not Unicode,
    /// and JSON would carry it as an escape no other side accepts.
    LoneSurrogate,
    /// Nested more than the limit.
    TooDeep,
    /// Longer than the budget.
    TooLarge,
    /// The interpreter failed (out of memory, stopped).
    Interpreter(rquickjs::Error),
}

impl From<rquickjs::Error> for Refused {
    fn from(error: rquickjs::Error) -> Self {
        Refused::Interpreter(error)
    }
}

impl Refused {
    fn not_data(what: impl Into<String>) -> Self {
        Refused::NotData { what: what.into(), at: String::new() }
    }

    /// Put `step` in front of the place this was found at.
    fn within(self, step: impl FnOnce() -> String) -> Self {
        match self {
            Refused::NotData { what, at } => Refused::NotData { what, at: format!("{}{at}", step()) },
            other => other,
        }
    }
}

/// How values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// As JSON for a tool or the host: anything that is not plain data is
    /// refused.
    Json,
    /// As text for a reader: what is not plain data becomes a marker
    /// (`[getter]`, `[function]`), long strings are cut.
    Display,
}

/// Writes one value.
struct Writer<'n, 'js> {
    natives: &'n Natives<'js>,
    mode: Mode,
    /// The bytes it may write.
    budget: usize,
    /// The containers it may nest.
    depth: usize,
    /// The containers it is inside, to tell a cycle.
    open: Vec<Object<'js>>,
    out: String,
}

impl<'n, 'js> Writer<'n, 'js> {
    fn new(natives: &'n Natives<'js>, mode: Mode, budget: usize, depth: usize) -> Self {
        Writer { natives, mode, budget, depth, open: Vec::new(), out: String::new() }
    }

    /// Write `value`: in [`Mode::Display`], a string, `undefined` and an
    /// error at the top are written as text, unquoted.
    fn top(&mut self, value: &Value<'js>) -> Result<(), Refused> {
        if self.mode == Mode::Display {
            if let Some(text) = value.as_string() {
                let (text, _) = self.natives.prefix(text, self.budget.saturating_add(1))?;
                self.out.push_str(&text);
                return self.room();
            }
            if value.is_undefined() {
                self.out.push_str("undefined");
                return Ok(());
            }
            if value.is_error()
                && let Some(error) = value.as_object()
            {
                let text = error_line(self.natives, error, self.budget.saturating_add(1))?;
                self.out.push_str(&text);
                return self.room();
            }
        }
        if value.is_undefined() {
            self.out.push_str("null")
        } else {
            self.value(value)?
        }
        Ok(())
    }

    fn room(&self) -> Result<(), Refused> {
        if self.out.len() > self.budget { Err(Refused::TooLarge) } else { Ok(()) }
    }

    /// Where a value that is not data is met: refused as JSON, a marker
    /// when displayed.
    fn odd(&mut self, marker: &str, what: &str) -> Result<(), Refused> {
        match self.mode {
            Mode::Json => Err(Refused::not_data(what)),
            Mode::Display => {
                self.out.push_str(marker);
                self.room()
            }
        }
    }

    fn value(&mut self, value: &Value<'js>) -> Result<(), Refused> {
        match value.type_of() {
            Type::Null | Type::Undefined | Type::Uninitialized => self.out.push_str("null"),
            Type::Bool => self.out.push_str(if value.as_bool() == Some(true) { "true" } else { "false" }),
            Type::Int => self.out.push_str(&value.as_int().unwrap_or_default().to_string()),
            Type::Float => self.number(value.as_float().unwrap_or(f64::NAN)),
            Type::String => {
                if let Some(text) = value.as_string() {
                    self.string(text)?;
                }
            }
            Type::Symbol => return self.odd("[symbol]", "a symbol is not JSON: pass a string"),
            Type::BigInt => {
                return match self.mode {
                    Mode::Json => Err(Refused::not_data("a BigInt is not JSON: pass Number(x) or String(x)")),
                    Mode::Display => {
                        // A BigInt primitive's digits: native, no prototype.
                        let digits: Coerced<String> = value.get()?;
                        self.out.push_str(&digits.0);
                        self.out.push('n');
                        self.room()
                    }
                };
            }
            Type::Function | Type::Constructor => {
                return self.odd("[function]", "a function is not JSON");
            }
            Type::Proxy => return self.odd("[Proxy]", "a Proxy is not JSON: pass a plain object or array"),
            Type::Promise => return self.odd("[Promise]", "a Promise is not JSON: await it first"),
            Type::Array | Type::Object | Type::Exception => {
                if let Some(object) = value.as_object() {
                    return self.container(object, value.is_array());
                }
                return self.odd("[object]", "this value is not JSON");
            }
            Type::Module | Type::Unknown => return self.odd("[object]", "this value is not JSON"),
        }
        self.room()
    }

    fn number(&mut self, number: f64) {
        // As JavaScript writes it: integers without a fraction, and what
        // JSON has no number for as `null`.
        if !number.is_finite() {
            self.out.push_str("null");
        } else if number.fract() == 0.0 && number.abs() < 9_007_199_254_740_992.0 {
            #[allow(clippy::cast_possible_truncation)]
            let whole = number as i64;
            self.out.push_str(&whole.to_string());
        } else {
            self.out
                .push_str(&serde_json::Number::from_f64(number).map_or_else(|| "null".to_owned(), |n| n.to_string()));
        }
    }

    fn string(&mut self, text: &rquickjs::String<'js>) -> Result<(), Refused> {
        let text = match self.mode {
            Mode::Json => text.to_string().map_err(|e| match e {
                rquickjs::Error::Utf8(_) => Refused::LoneSurrogate,
                other => Refused::Interpreter(other),
            })?,
            Mode::Display => {
                let left = self.budget.saturating_sub(self.out.len()).saturating_add(1);
                self.natives.prefix(text, left)?.0
            }
        };
        let quoted = serde_json::to_string(&text).map_err(|e| Refused::not_data(e.to_string()))?;
        self.out.push_str(&quoted);
        self.room()
    }

    fn container(&mut self, object: &Object<'js>, array: bool) -> Result<(), Refused> {
        if self.open.iter().any(|o| o == object) {
            return self.odd("[circular]", "it refers to itself (a cycle)");
        }
        if self.open.len() >= self.depth {
            return match self.mode {
                Mode::Json => Err(Refused::TooDeep),
                Mode::Display => self.odd("[…]", ""),
            };
        }
        if object.as_value().is_proxy() {
            return self.odd("[Proxy]", "a Proxy is not JSON: pass a plain object or array");
        }
        if !array && object.as_value().is_error() {
            return match self.mode {
                Mode::Json => Err(Refused::not_data("an Error is not JSON: pass error.message")),
                Mode::Display => {
                    let left = self.budget.saturating_sub(self.out.len()).saturating_add(1);
                    let text = error_line(self.natives, object, left)?;
                    self.out.push_str(&json_string(&text));
                    self.room()
                }
            };
        }
        if !array && let Some(what) = self.natives.kind(object) {
            let marker = format!("[{}]", what.split(" is not").next().unwrap_or("object"));
            return self.odd(&marker, what);
        }
        self.open.push(object.clone());
        let written = if array { self.array(object) } else { self.object(object) };
        self.open.pop();
        written
    }

    fn array(&mut self, array: &Object<'js>) -> Result<(), Refused> {
        let key = rquickjs::String::from_str(array.ctx().clone(), "length")?.into_value();
        let length: Value<'js> = match self.natives.own(array, &key)? {
            Own::Data(length) => length,
            _ => return self.odd("[array]", "this array has no length"),
        };
        let length = length.as_number().unwrap_or(0.0);
        self.out.push('[');
        let mut index = 0.0;
        while index < length {
            if index > 0.0 {
                self.out.push(',');
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let at = index as u64;
            let key = match i32::try_from(at) {
                Ok(small) => Value::new_int(array.ctx().clone(), small),
                Err(_) => Value::new_float(array.ctx().clone(), index),
            };
            match self.natives.own(array, &key)? {
                // A hole reads as `null`, as JSON writes it, without a
                // look at the prototype.
                Own::Absent => self.out.push_str("null"),
                Own::Accessor => {
                    self.odd("[getter]", "a getter is not data: pass the value itself")
                        .map_err(|e| e.within(|| format!("[{at}]")))?;
                }
                Own::Data(item) if item.is_undefined() => self.out.push_str("null"),
                Own::Data(item) => self.value(&item).map_err(|e| e.within(|| format!("[{at}]")))?,
            }
            self.room()?;
            index += 1.0;
        }
        self.out.push(']');
        self.room()
    }

    fn object(&mut self, object: &Object<'js>) -> Result<(), Refused> {
        self.out.push('{');
        let mut first = true;
        for key in object.own_keys::<Value<'js>>(Filter::new().string().enum_only()) {
            let key = key?;
            let name = key.as_string().map(rquickjs::String::to_string).transpose().map_err(|e| match e {
                rquickjs::Error::Utf8(_) => Refused::LoneSurrogate,
                other => Refused::Interpreter(other),
            })?;
            let name = match name {
                Some(name) => name,
                None => Coerced::<String>::from_js(object.ctx(), key.clone())?.0,
            };
            let step = || if is_identifier(&name) { format!(".{name}") } else { format!("[{}]", json_string(&name)) };
            let item = match self.natives.own(object, &key)? {
                Own::Absent => continue,
                Own::Accessor => {
                    if !first {
                        self.out.push(',');
                    }
                    first = false;
                    self.out.push_str(&json_string(&name));
                    self.out.push(':');
                    self.odd("[getter]", "a getter is not data: pass the value itself").map_err(|e| e.within(step))?;
                    continue;
                }
                Own::Data(item) => item,
            };
            // As JSON: a property whose value is `undefined` is left out.
            if item.is_undefined() {
                continue;
            }
            if !first {
                self.out.push(',');
            }
            first = false;
            self.out.push_str(&json_string(&name));
            self.out.push(':');
            self.value(&item).map_err(|e| e.within(step))?;
        }
        self.out.push('}');
        self.room()
    }
}

/// `value` as JSON text of at most `budget` bytes, nested at most `depth`
/// containers deep; refused where it is not plain data.
pub(super) fn json<'js>(
    natives: &Natives<'js>,
    value: &Value<'js>,
    budget: usize,
    depth: usize,
) -> Result<String, Refused> {
    let mut writer = Writer::new(natives, Mode::Json, budget, depth);
    writer.top(value)?;
    Ok(writer.out)
}

/// How deep printed values are shown before `[…]`.
const DISPLAY_DEPTH: usize = 20;

/// `value` as a reader sees it, in at most `budget` bytes, and whether it
/// was cut there.
pub(super) fn display<'js>(
    natives: &Natives<'js>,
    value: &Value<'js>,
    budget: usize,
) -> rquickjs::Result<(String, bool)> {
    let mut writer = Writer::new(natives, Mode::Display, budget, DISPLAY_DEPTH);
    match writer.top(value) {
        Ok(()) => Ok((writer.out, false)),
        Err(Refused::Interpreter(error)) => Err(error),
        // Nothing else stops a display but its length.
        Err(_) => {
            let mut out = writer.out;
            let mut end = budget.min(out.len());
            while !out.is_char_boundary(end) {
                end -= 1;
            }
            out.truncate(end);
            Ok((out, true))
        }
    }
}

/// `Name: message` of an error object, from data properties only, at most
/// about `chars` characters.
pub(super) fn error_line<'js>(natives: &Natives<'js>, error: &Object<'js>, chars: usize) -> rquickjs::Result<String> {
    let read = |key: &str, chars: usize| -> rquickjs::Result<Option<String>> {
        match natives.data_property(error, key)? {
            Some(value) => match value.as_string() {
                Some(text) => Ok(Some(natives.prefix(text, chars)?.0)),
                None => Ok(None),
            },
            None => Ok(None),
        }
    };
    let name = read("name", 200)?.unwrap_or_default();
    let message = read("message", chars)?.unwrap_or_default();
    Ok(match (name.is_empty(), message.is_empty()) {
        (true, _) => message,
        (false, true) => name,
        (false, false) => format!("{name}: {message}"),
    })
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
