//! The serde path of [`with_canonical_text`](super::with_canonical_text):
//! any other JSON text, parsed by serde_json and written back token by
//! token in canonical form, without a `Value`.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The serde path of [`with_canonical_text`](super::with_canonical_text): write the canonical form of
/// JSON `text` into `out` as serde_json parses it.
///
/// Each scalar goes through the same serde_json visitor call, then the same
/// serde_json writer, as a `Value` would, so the text is byte for byte what
/// [`canonical_json`](super::canonical_json) writes for the parsed value.
pub(super) fn transcode(text: &str, out: &mut Vec<u8>) -> bool {
    let mut parser = serde_json::Deserializer::from_str(text);
    CanonicalText(out).deserialize(&mut parser).and_then(|()| parser.end()).is_ok()
}

/// Writes what it is deserialised from as canonical JSON; see [`transcode`].
struct CanonicalText<'o>(&'o mut Vec<u8>);

impl CanonicalText<'_> {
    fn write<T: Serialize + ?Sized>(self, scalar: &T) {
        // Writing a string or a number to memory cannot fail.
        let _ = serde_json::to_writer(self.0, scalar);
    }

    /// Write a string; `verbatim` when it was borrowed from the text, which
    /// means it had no escape there. JSON text cannot hold a bare quote,
    /// backslash or control character in a string (serde_json refuses
    /// them), and those are all serde_json escapes: the text is already
    /// written as serde_json would write it.
    fn string(self, v: &str, verbatim: bool) {
        if verbatim {
            self.0.reserve(v.len() + 2);
            self.0.push(b'"');
            self.0.extend_from_slice(v.as_bytes());
            self.0.push(b'"');
        } else {
            self.write(v);
        }
    }
}

impl<'de> DeserializeSeed<'de> for CanonicalText<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CanonicalText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.write(v);
        Ok(())
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.string(v, true);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(CanonicalText(&mut *self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        let mut previous: Option<Cow<'de, str>> = None;
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            match &previous {
                Some(previous) if previous.as_bytes() >= key.as_bytes() => {
                    return Err(serde::de::Error::custom("object keys out of order"));
                }
                Some(_) => self.0.push(b','),
                // With serde_json's `arbitrary_precision`, a number comes as
                // a map with this one key: leave it to `Value`.
                None if key.starts_with("$serde_json::private::") => {
                    return Err(serde::de::Error::custom("a serde_json private value"));
                }
                None => {}
            }
            CanonicalText(&mut *self.0).string(&key, matches!(key, Cow::Borrowed(_)));
            self.0.push(b':');
            map.next_value_seed(CanonicalText(&mut *self.0))?;
            previous = Some(key);
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}
