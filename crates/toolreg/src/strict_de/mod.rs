//! Typed arguments straight from JSON, under the rules of the tool's JSON Schema.
//!
//! A typed tool deserialises its arguments with serde instead of running the
//! JSON Schema validator first. serde and the schema disagree in two places,
//! and [`Strict`] closes both:
//!
//! 1. serde_json builds a struct from a JSON array (`[1, 2]` for `Point { x, y }`),
//!    but the schema says `"type": "object"`. [`Strict`] takes a struct only
//!    from a map, at every level.
//! 2. The schema's `"type": "integer"` accepts integral numbers written as
//!    floats (`3.0`, `1e3`, `-0`), and models send them; serde refuses them for
//!    `i8`..`i128` and `u8`..`u128`. [`Strict`] hands such a number to the
//!    integer visitor when it fits the target type, and still refuses `1.5` and
//!    numbers out of range.
//!
//! Everything else is serde's behaviour, unchanged: options, defaults,
//! `deny_unknown_fields`, enums, borrowed strings, error messages.
//!
//! Where serde buffers the input into its own private `Content` (fields beside a
//! `#[serde(flatten)]`, internally tagged and untagged enums), it deserialises
//! the buffered value with its own deserializer, which [`Strict`] cannot reach:
//! below that point serde's rules apply as they are.
//! serde_json's text parser also reads `i128` and `u128` as digits only, so
//! [`from_str`] refuses integral floats for those two widths ([`from_value`]
//! accepts them).

use serde::de::{DeserializeOwned, Deserializer, Visitor};

use wrap::Wrap;

// The deserializer is here: what it changes and where (`Mode`). `wrap` holds
// the visitor and the access objects that carry it into every nested value.
#[cfg(test)]
mod speed;
#[cfg(test)]
mod tests;
mod wrap;

/// Deserialise `T` from JSON text under the schema's rules; trailing characters are an error.
#[inline]
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(Strict(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Deserialise `T` from a parsed JSON value under the schema's rules.
#[inline]
pub(crate) fn from_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, serde_json::Error> {
    T::deserialize(Strict(value))
}

/// A deserializer that takes structs only from maps and integral floats as integers.
///
/// Wraps any self-describing deserializer (serde_json's, or `&Value`); every
/// nested value it hands out is wrapped too.
pub(crate) struct Strict<D>(pub D);

/// What the visitor behind a [`Wrap`] was asked for, when that changes the rules.
#[derive(Clone, Copy)]
enum Mode {
    /// Anything, exactly as serde takes it.
    Any,
    /// A struct: a map, never a sequence.
    Struct,
    /// An integer in `min..max` (as `f64`, `max` exclusive): integral floats in range are integers.
    Int { min: f64, max: f64 },
}

/// The [`Mode`] of an integer type: its range as `f64`. `MAX as f64 + 1.0` is
/// exactly `2^bits` (or `2^(bits-1)`): the cast rounds up to that power of two
/// for the wide types, and is exact for the narrow ones.
macro_rules! int_mode {
    ($ty:ty) => {
        Mode::Int { min: <$ty>::MIN as f64, max: <$ty>::MAX as f64 + 1.0 }
    };
}

/// Forwards `deserialize_*` methods without extra arguments, wrapping the visitor.
macro_rules! forward_deserialize {
    ($($method:ident => $mode:expr,)*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap { visitor, mode: $mode })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any => Mode::Any,
        deserialize_bool => Mode::Any,
        deserialize_i8 => int_mode!(i8),
        deserialize_i16 => int_mode!(i16),
        deserialize_i32 => int_mode!(i32),
        deserialize_i64 => int_mode!(i64),
        deserialize_i128 => int_mode!(i128),
        deserialize_u8 => int_mode!(u8),
        deserialize_u16 => int_mode!(u16),
        deserialize_u32 => int_mode!(u32),
        deserialize_u64 => int_mode!(u64),
        deserialize_u128 => int_mode!(u128),
        deserialize_f32 => Mode::Any,
        deserialize_f64 => Mode::Any,
        deserialize_char => Mode::Any,
        deserialize_str => Mode::Any,
        deserialize_string => Mode::Any,
        deserialize_bytes => Mode::Any,
        deserialize_byte_buf => Mode::Any,
        deserialize_option => Mode::Any,
        deserialize_unit => Mode::Any,
        deserialize_seq => Mode::Any,
        deserialize_map => Mode::Any,
        deserialize_identifier => Mode::Any,
        deserialize_ignored_any => Mode::Any,
    }

    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap { visitor, mode: Mode::Any })
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap { visitor, mode: Mode::Any })
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap { visitor, mode: Mode::Any })
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap { visitor, mode: Mode::Any })
    }

    /// A struct is read as a map: the schema of a struct is an object.
    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap { visitor, mode: Mode::Struct })
    }

    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap { visitor, mode: Mode::Any })
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}
