//! The fast path of [`with_canonical_text`](super::with_canonical_text):
//! argument text made only of objects, arrays, plain strings, integers and
//! literals, checked in one pass ([`SimpleCheck`]) and made canonical by
//! dropping its whitespace and sorting each object's members in place.

/// Containers nested deeper than this take the serde path.
pub(super) const SIMPLE_MAX_DEPTH: usize = 32;

/// Objects with more members than this take the serde path.
pub(super) const SIMPLE_MAX_MEMBERS: usize = 16;

/// Text up to this long is made canonical on the stack: most arguments are
/// short, and a buffer on the stack costs nothing to find or to give back.
pub(super) const SIMPLE_STACK_TEXT: usize = 256;

/// The longest float text [`SimpleCheck::float`] takes; longer numbers are
/// rare and take the serde path.
const SIMPLE_MAX_FLOAT: usize = 32;

/// The fast path: call `f` with `text` without its whitespace, each object's
/// members sorted by key, when [`SimpleCheck`] found it made only of objects
/// of at most [`SIMPLE_MAX_MEMBERS`] members, arrays, strings without escapes,
/// integers of at most 18 digits (other than `-0`), floats written as
/// serde_json writes them, `true`, `false` and `null`. That is what
/// serde_json writes for its parsed value: JSON forbids a bare quote,
/// backslash or control character in a string, which are all the
/// characters serde_json escapes, and an integer that fits in an `i64` is
/// written back digit for digit. `None` when an object repeats a key.
///
/// Text that is canonical already (compact, keys in order) is not copied;
/// other text is copied without whitespace, then, only when some keys are
/// out of order, the copy's members are sorted.
pub(super) fn simple_canonical<R>(text: &[u8], shape: SimpleShape, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    if !shape.whitespace && !shape.unsorted {
        return Some(f(text));
    }
    // The compact text; then, if keys need sorting, room to sort an object's members in.
    let mut stack = [0u8; SIMPLE_STACK_TEXT];
    let mut heap = Vec::new();
    let buf = stack_or_heap(&mut stack, &mut heap, text.len());
    let len = strip_whitespace(text, buf);
    let compact = &mut buf[..len];
    if shape.unsorted {
        let mut stack = [0u8; SIMPLE_STACK_TEXT];
        let mut heap = Vec::new();
        sort_members(compact, stack_or_heap(&mut stack, &mut heap, len), 0)?;
    }
    Some(f(compact))
}

/// `len` bytes of `stack` if it is long enough, else of `heap`.
fn stack_or_heap<'b>(stack: &'b mut [u8], heap: &'b mut Vec<u8>, len: usize) -> &'b mut [u8] {
    match stack.get_mut(..len) {
        Some(buf) => buf,
        None => {
            heap.resize(len, 0);
            heap
        }
    }
}

/// What [`SimpleCheck`] found out about simple text.
#[derive(Clone, Copy)]
pub(super) struct SimpleShape {
    /// There is whitespace between tokens.
    whitespace: bool,
    /// Some object's keys are not in strictly increasing order.
    unsorted: bool,
}

/// The check pass of [`simple_canonical`]: a recursive-descent reader of the
/// simple subset. Each step takes the position to read from and returns the
/// position after what it read, or `None` when the text is not simple.
pub(super) struct SimpleCheck<'t> {
    text: &'t [u8],
    shape: SimpleShape,
}

impl<'t> SimpleCheck<'t> {
    /// Check that `text` is simple, and say what it is like.
    pub(super) fn of(text: &'t [u8]) -> Option<SimpleShape> {
        let mut check = SimpleCheck { text, shape: SimpleShape { whitespace: false, unsorted: false } };
        let end = check.value(0, 0)?;
        (check.skip_whitespace(end) == text.len()).then_some(check.shape)
    }

    fn skip_whitespace(&mut self, from: usize) -> usize {
        let mut at = from;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(at) {
            at += 1;
        }
        self.shape.whitespace |= at != from;
        at
    }

    fn value(&mut self, at: usize, depth: usize) -> Option<usize> {
        let at = self.skip_whitespace(at);
        match *self.text.get(at)? {
            b'{' if depth < SIMPLE_MAX_DEPTH => self.object(at + 1, depth + 1),
            b'[' if depth < SIMPLE_MAX_DEPTH => self.array(at + 1, depth + 1),
            b'"' => self.string(at).map(|(_, end)| end),
            b't' => self.literal(at, b"true"),
            b'f' => self.literal(at, b"false"),
            b'n' => self.literal(at, b"null"),
            b'-' | b'0'..=b'9' => self.integer(at).or_else(|| self.float(at)),
            _ => None,
        }
    }

    /// The members of an object, from just after its `{`.
    fn object(&mut self, at: usize, depth: usize) -> Option<usize> {
        let mut at = self.skip_whitespace(at);
        if self.text.get(at) == Some(&b'}') {
            return Some(at + 1);
        }
        let mut previous: Option<&[u8]> = None;
        for _ in 0..SIMPLE_MAX_MEMBERS {
            let (key, after_key) = self.string(at)?;
            // Raw bytes compare as the keys do: neither has an escape. An
            // equal key counts as out of order; the sort pass refuses it.
            self.shape.unsorted |= previous.is_some_and(|previous| previous >= key);
            previous = Some(key);
            at = self.skip_whitespace(after_key);
            if self.text.get(at) != Some(&b':') {
                return None;
            }
            at = self.value(at + 1, depth)?;
            at = self.skip_whitespace(at);
            match self.text.get(at) {
                Some(b'}') => return Some(at + 1),
                Some(b',') => at = self.skip_whitespace(at + 1),
                _ => return None,
            }
        }
        None
    }

    /// The items of an array, from just after its `[`.
    fn array(&mut self, at: usize, depth: usize) -> Option<usize> {
        let mut at = self.skip_whitespace(at);
        if self.text.get(at) == Some(&b']') {
            return Some(at + 1);
        }
        loop {
            at = self.value(at, depth)?;
            at = self.skip_whitespace(at);
            match self.text.get(at) {
                Some(b']') => return Some(at + 1),
                Some(b',') => at += 1,
                _ => return None,
            }
        }
    }

    /// A string with no escape and no control character: its content, and
    /// the position after its closing quote.
    fn string(&self, at: usize) -> Option<(&'t [u8], usize)> {
        let text: &'t [u8] = self.text;
        if text.get(at) != Some(&b'"') {
            return None;
        }
        let content = &text[at + 1..];
        let length = content.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        (content[length] == b'"').then(|| (&content[..length], at + 1 + length + 1))
    }

    fn literal(&self, at: usize, word: &[u8]) -> Option<usize> {
        self.text[at..].starts_with(word).then_some(at + word.len())
    }

    /// `-?(0|[1-9][0-9]*)` of at most 18 digits, not `-0`, not followed by a
    /// fraction or an exponent.
    fn integer(&self, at: usize) -> Option<usize> {
        let negative = self.text[at] == b'-';
        let digits_start = at + usize::from(negative);
        let digits = self.text[digits_start..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = digits_start + digits;
        let leading_zero = self.text.get(digits_start) == Some(&b'0');
        let simple = (1..=18).contains(&digits)
            && !(leading_zero && (digits > 1 || negative))
            && !matches!(self.text.get(end), Some(b'.' | b'e' | b'E'));
        simple.then_some(end)
    }

    /// A number with a fraction or an exponent that is written exactly as
    /// serde_json writes the `f64` it parses to (`2.5`, `0.75`, `-1.0`, as
    /// models write most floats), so that it can be kept as it is. The text
    /// is parsed and written back by serde_json itself, as the `Value` path
    /// does, so both agree on every float; `2.50` or `1e2`, written
    /// otherwise, take the serde path.
    fn float(&self, at: usize) -> Option<usize> {
        let rest = &self.text[at..];
        let length = rest
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .unwrap_or(rest.len());
        let token = &rest[..length];
        if length > SIMPLE_MAX_FLOAT || !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            return None;
        }
        let number: f64 = serde_json::from_slice(token).ok()?;
        let mut written = [0u8; SIMPLE_MAX_FLOAT + 8];
        let mut out = &mut written[..];
        serde_json::to_writer(&mut out, &number).ok()?;
        let left = out.len();
        (written[..written.len() - left] == *token).then_some(at + length)
    }
}

/// Copy simple text without the whitespace between its tokens to the start
/// of `out` (as long as `text`), and return how long the copy is. A simple
/// string has no escape, so each quote opens or closes one.
fn strip_whitespace(text: &[u8], out: &mut [u8]) -> usize {
    let mut kept = 0;
    let mut in_string = false;
    for &byte in text {
        if in_string | !is_whitespace(byte) {
            if let Some(slot) = out.get_mut(kept) {
                *slot = byte;
            }
            kept += 1;
        }
        in_string ^= byte == b'"';
    }
    kept
}

/// JSON's whitespace, tested without a branch.
fn is_whitespace(byte: u8) -> bool {
    const WHITESPACE: u64 = 1 << b' ' | 1 << b'\t' | 1 << b'\n' | 1 << b'\r';
    // The shift wraps for bytes past 63, which the first test rules out.
    (byte <= b' ') & (WHITESPACE.wrapping_shr(u32::from(byte)) & 1 == 1)
}

/// The sort pass of [`simple_canonical`]: sort the members of every object
/// in the compact simple value at `text[at..]` by key, and return where the
/// value ends; `None` when an object repeats a key (a `Value` keeps the last
/// one). `scratch`, as long as `text`, is where an object's members are put
/// in order.
///
/// The text has been checked, so it is read without checking again; any
/// surprise is answered `None` too, which only sends the text down the
/// serde path.
fn sort_members(text: &mut [u8], scratch: &mut [u8], at: usize) -> Option<usize> {
    match *text.get(at)? {
        b'{' => {
            let open = at;
            let mut at = at + 1;
            if *text.get(at)? == b'}' {
                return Some(at + 1);
            }
            // Each member's span, and where its key ends (the key is
            // `text[start + 1..key_end]`).
            let mut members = [(0usize, 0usize, 0usize); SIMPLE_MAX_MEMBERS];
            let mut count = 0;
            let close = loop {
                let key_end = closing_quote(text, at + 1)?;
                let end = sort_members(text, scratch, key_end + 2)?; // after `":`
                *members.get_mut(count)? = (at, key_end, end);
                count += 1;
                at = end + 1;
                if *text.get(end)? == b'}' {
                    break at;
                }
            };
            let members = &mut members[..count];
            members.sort_unstable_by(|a, b| key(text, *a).cmp(key(text, *b)));
            if members.windows(2).any(|pair| key(text, pair[0]) == key(text, pair[1])) {
                return None;
            }
            // Put the members in order in the scratch space, then back in place.
            let mut written = 0;
            for (index, &(start, _, end)) in members.iter().enumerate() {
                if index > 0 {
                    *scratch.get_mut(written)? = b',';
                    written += 1;
                }
                scratch.get_mut(written..written + end - start)?.copy_from_slice(&text[start..end]);
                written += end - start;
            }
            text.get_mut(open + 1..open + 1 + written)?.copy_from_slice(&scratch[..written]);
            Some(close)
        }
        b'[' => {
            let mut at = at + 1;
            if *text.get(at)? == b']' {
                return Some(at + 1);
            }
            loop {
                let end = sort_members(text, scratch, at)?;
                at = end + 1;
                if *text.get(end)? == b']' {
                    return Some(at);
                }
            }
        }
        b'"' => closing_quote(text, at + 1).map(|end| end + 1),
        _ => {
            let rest = &text[at..];
            Some(at + rest.iter().position(|b| matches!(b, b',' | b']' | b'}')).unwrap_or(rest.len()))
        }
    }
}

/// The key of a member found by [`sort_members`].
fn key(buf: &[u8], (start, key_end, _): (usize, usize, usize)) -> &[u8] {
    &buf[start + 1..key_end]
}

/// The position of the first quote at or after `from`.
fn closing_quote(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.iter().position(|&b| b == b'"').map(|length| from + length)
}
