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
#![cfg_attr(not(test), expect(dead_code, reason = "the typed call path is the only caller"))]

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};

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
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
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

/// A visitor that wraps the access objects and deserializers it is handed in [`Strict`].
struct Wrap<V> {
    visitor: V,
    mode: Mode,
}

/// Forwards `visit_*` methods that carry a plain value.
macro_rules! forward_visit {
    ($($method:ident($ty:ty),)*) => {$(
        #[inline]
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Mode::Struct = self.mode {
            f.write_str("a JSON object for ")?;
        }
        self.visitor.expecting(f)
    }

    forward_visit! {
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    }

    #[inline]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        if let Mode::Int { min, max } = self.mode {
            // NaN and the infinities fail the range test; `-0.0 >= 0.0` holds.
            if v >= min && v < max && v.fract() == 0.0 {
                return integral(self.visitor, v);
            }
        }
        self.visitor.visit_f64(v)
    }

    #[inline]
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(Strict(deserializer))
    }

    #[inline]
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    #[inline]
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_newtype_struct(Strict(deserializer))
    }

    #[inline]
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        if let Mode::Struct = self.mode {
            // serde_json's `struct_variant` reads an array positionally; refuse it here.
            return Err(de::Error::invalid_type(Unexpected::Seq, &self));
        }
        self.visitor.visit_seq(Seq(seq))
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Map(map))
    }

    #[inline]
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(Enum(data))
    }
}

/// Hands an integral `v`, already known to fit the target type, to `visitor`
/// as serde_json would hand the same number written without a fraction.
#[inline]
fn integral<'de, V: Visitor<'de>, E: de::Error>(visitor: V, v: f64) -> Result<V::Value, E> {
    const I64_MIN: f64 = i64::MIN as f64;
    const U64_END: f64 = u64::MAX as f64 + 1.0;
    if v < 0.0 {
        if v >= I64_MIN { visitor.visit_i64(v as i64) } else { visitor.visit_i128(v as i128) }
    } else if v < U64_END {
        visitor.visit_u64(v as u64)
    } else {
        visitor.visit_u128(v as u128)
    }
}

/// A seed that deserialises through [`Strict`].
struct Seed<T>(T);

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<T> {
    type Value = T::Value;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T::Value, D::Error> {
        self.0.deserialize(Strict(deserializer))
    }
}

/// A sequence whose elements deserialise through [`Strict`].
struct Seq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A map whose keys and values deserialise through [`Strict`].
struct Map<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<A> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    #[inline]
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    #[inline]
    fn next_entry_seed<K: DeserializeSeed<'de>, T: DeserializeSeed<'de>>(
        &mut self,
        key: K,
        value: T,
    ) -> Result<Option<(K::Value, T::Value)>, A::Error> {
        self.0.next_entry_seed(Seed(key), Seed(value))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// An enum whose variant name and content deserialise through [`Strict`].
struct Enum<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    #[inline]
    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Variant(variant)))
    }
}

/// A variant's content, deserialised through [`Strict`].
struct Variant<A>(A);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    #[inline]
    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap { visitor, mode: Mode::Any })
    }

    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap { visitor, mode: Mode::Struct })
    }
}
