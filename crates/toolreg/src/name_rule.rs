//! The rule every tool name follows, written once.
//!
//! [`check_name`] is a `const fn`, so the same rule serves
//! [`validate_name`](crate::validate_name) at run time and `#[tool]` at
//! compile time, where the generated code evaluates it in a constant and a
//! bad name stops the build with [`NameError::summary`] as the message.

use std::fmt;

/// The longest tool name toolreg accepts (OpenAI's and Bedrock's limit).
pub const MAX_NAME_LEN: usize = 64;

/// Why a text cannot be a tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameError {
    /// The name is empty.
    Empty,
    /// The name is longer than [`MAX_NAME_LEN`] bytes of UTF-8.
    TooLong {
        /// Its length in bytes, which is what the limit counts.
        bytes: usize,
        /// Its length in characters, which may be fewer.
        chars: usize,
    },
    /// The name holds a character outside `A-Z a-z 0-9 _ -`.
    Disallowed {
        /// The first such character.
        ch: char,
    },
}

/// Check `name` against the rule every provider accepts: 1 to
/// [`MAX_NAME_LEN`] bytes, each one of `A-Z a-z 0-9 _ -`.
///
/// The length is counted in bytes (as providers count it), not characters;
/// since every allowed character is one byte, the two differ only for names
/// that are refused anyway, and the message then gives both.
pub(crate) const fn check_name(name: &str) -> Result<(), NameError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(NameError::Empty);
    }
    if bytes.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong { bytes: bytes.len(), chars: char_count(bytes) });
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(NameError::Disallowed { ch: char_at(bytes, i) });
        }
        i += 1;
    }
    Ok(())
}

/// [`check_name`] for generated code: a bad name panics, which in a constant
/// is a compile-time error that shows [`NameError::summary`].
pub(crate) const fn assert_tool_name(name: &str) {
    if let Err(error) = check_name(name) {
        panic!("{}", error.summary());
    }
}

// `summary` cannot format, so it spells the limit out; keep the two together.
const _: () = assert!(MAX_NAME_LEN == 64, "NameError::summary states the limit as 64 bytes");

impl NameError {
    /// The reason without the numbers, for compile-time messages, which
    /// cannot format.
    pub(crate) const fn summary(&self) -> &'static str {
        match self {
            NameError::Empty => "invalid tool name: a tool name must not be empty",
            NameError::TooLong { .. } => {
                "invalid tool name: a tool name may be at most 64 bytes long, counted in UTF-8 bytes, not characters"
            }
            NameError::Disallowed { .. } => {
                "invalid tool name: use only the characters A-Z, a-z, 0-9, `_` and `-` (no dots, spaces or other symbols)"
            }
        }
    }
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("a name must not be empty"),
            NameError::TooLong { bytes, chars } if bytes == chars => {
                write!(f, "a name may be at most {MAX_NAME_LEN} bytes long, this one is {bytes} bytes")
            }
            NameError::TooLong { bytes, chars } => write!(
                f,
                "a name may be at most {MAX_NAME_LEN} bytes long (UTF-8 bytes, not characters), \
                 this one is {bytes} bytes ({chars} characters)"
            ),
            NameError::Disallowed { ch } => {
                write!(f, "character {ch:?} is not allowed; use only A-Z, a-z, 0-9, `_` and `-`")
            }
        }
    }
}

/// Characters in valid UTF-8: every byte that does not continue a sequence.
const fn char_count(bytes: &[u8]) -> usize {
    let mut count = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] & 0xC0 != 0x80 {
            count += 1;
        }
        i += 1;
    }
    count
}

/// The character that starts at byte `i` of valid UTF-8.
const fn char_at(bytes: &[u8], i: usize) -> char {
    let b = bytes[i] as u32;
    let (len, mut code) = if b < 0x80 {
        (1, b)
    } else if b >= 0xF0 {
        (4, b & 0x07)
    } else if b >= 0xE0 {
        (3, b & 0x0F)
    } else {
        (2, b & 0x1F)
    };
    let mut k = 1;
    while k < len && i + k < bytes.len() {
        code = (code << 6) | (bytes[i + k] as u32 & 0x3F);
        k += 1;
    }
    match char::from_u32(code) {
        Some(ch) => ch,
        None => char::REPLACEMENT_CHARACTER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        assert_eq!(check_name("get_weather-2"), Ok(()));
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name(&"x".repeat(64)), Ok(()));
        assert_eq!(check_name(&"x".repeat(65)), Err(NameError::TooLong { bytes: 65, chars: 65 }));
        assert_eq!(check_name("server.tool"), Err(NameError::Disallowed { ch: '.' }));
        assert_eq!(check_name("caf\u{e9}"), Err(NameError::Disallowed { ch: '\u{e9}' }));
        assert_eq!(check_name("a\u{1F600}"), Err(NameError::Disallowed { ch: '\u{1F600}' }));
        assert_eq!(check_name("\u{20AC}x"), Err(NameError::Disallowed { ch: '\u{20AC}' }));
    }

    #[test]
    fn the_length_message_says_what_it_counts() {
        // 40 characters of two bytes each: 80 bytes.
        let name = "\u{e9}".repeat(40);
        let error = check_name(&name).unwrap_err();
        assert_eq!(error, NameError::TooLong { bytes: 80, chars: 40 });
        assert_eq!(
            error.to_string(),
            "a name may be at most 64 bytes long (UTF-8 bytes, not characters), this one is 80 bytes (40 characters)"
        );
        assert_eq!(
            check_name(&"x".repeat(70)).unwrap_err().to_string(),
            "a name may be at most 64 bytes long, this one is 70 bytes"
        );
        assert!(error.summary().contains("64 bytes") && error.summary().contains("not characters"));
    }

    // The rule is usable in constants, which is what `#[tool]` relies on.
    const _: () = assert_tool_name("add");
    const _: () = assert!(matches!(check_name("a b"), Err(NameError::Disallowed { ch: ' ' })));
}
