//! Recognizing JSON text that JavaScript writes back unchanged.
//!
//! A message read from a session file may be handed to the client as the very text it was read
//! as only when `JSON.stringify(JSON.parse(text))` is that text, byte for byte. Pi writes its
//! session lines with `JSON.stringify`, so that holds for nearly every line it wrote; a file a
//! person or another program edited may differ, and is then parsed as before. The check is
//! conservative: it accepts only forms it can prove JavaScript reproduces —
//!
//! * no whitespace outside strings, and no byte below 0x20 anywhere;
//! * strings escape only `"` and `\` (as `\"`, `\\`), and control characters the way V8 does
//!   (`\b \t \n \f \r`, otherwise `\u00xx` in lowercase);
//! * numbers as `Number::toString` prints them: a decimal without exponent, `-0`, leading or
//!   trailing zeros, with at most 15 significant digits and at most five zeros after `0.` is
//!   the shortest form of the double it parses to, so it is accepted as it is; any other
//!   number is compared with what JavaScript prints for its value;
//! * objects whose keys are distinct and none an array index (JavaScript enumerates those first).

use memchr::memchr2;
use pi_js::json::push_js_number;

/// Most significant digits a decimal can have and still be the shortest form of its double.
const MAX_DIGITS: usize = 15;
/// Keys an object may have before the check gives up (duplicates are looked for linearly).
const MAX_KEYS: usize = 64;
/// Deepest nesting the check follows.
const MAX_DEPTH: usize = 256;

/// A member of the outermost object: key and value spans (the key without its quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    pub key: (usize, usize),
    pub value: (usize, usize),
}

/// Whether no byte of `b` is below 0x20 (written to vectorize: this runs over every message).
pub(crate) fn no_control_bytes(b: &[u8]) -> bool {
    b.chunks(64)
        .all(|c| c.iter().fold(0u8, |acc, &x| acc | u8::from(x < 0x20)) == 0)
}

/// Checks objects for canonical form, reusing its buffers from one object to the next.
#[derive(Default)]
pub(crate) struct Checker {
    /// Key spans of the open objects, innermost last.
    keys: Vec<(usize, usize)>,
    frames: Vec<Frame>,
    members: Vec<Member>,
}

impl Checker {
    /// Checks that the object starting at `start` of `b` is in canonical form; returns where
    /// it ends. `b` must hold no byte below 0x20 (see [`no_control_bytes`]); the text after the
    /// object is not looked at.
    pub(crate) fn object(&mut self, b: &[u8], start: usize) -> Option<usize> {
        self.keys.clear();
        self.frames.clear();
        self.members.clear();
        let mut s = Scanner {
            b,
            i: start,
            st: self,
        };
        if s.peek()? != b'{' {
            return None;
        }
        s.value()?;
        Some(s.i)
    }

    /// The members of the outermost level of the object last checked.
    pub(crate) fn members(&self) -> &[Member] {
        &self.members
    }
}

enum Frame {
    /// An object whose keys so far are `keys[from..]`, with one bit of `seen` set per key
    /// ([`key_bit`]): a key whose bit is not set yet needs no comparison with the others.
    Object {
        from: usize,
        seen: u64,
    },
    Array,
}

struct Scanner<'a, 'b> {
    b: &'b [u8],
    i: usize,
    st: &'a mut Checker,
}

impl Scanner<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// One whole value, iteratively (nesting is bounded by [`MAX_DEPTH`], not by the stack).
    fn value(&mut self) -> Option<()> {
        loop {
            // A value starts here.
            match self.peek()? {
                b'{' => {
                    self.i += 1;
                    if self.eat(b'}').is_none() {
                        self.open(Frame::Object {
                            from: self.st.keys.len(),
                            seen: 0,
                        })?;
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    self.i += 1;
                    if self.eat(b']').is_none() {
                        self.open(Frame::Array)?;
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // A value ended here: close what it completes, or go on to the next one.
            loop {
                if self.st.frames.len() == 1
                    && let Some(m) = self.st.members.last_mut()
                {
                    m.value.1 = self.i;
                }
                match self.st.frames.last() {
                    None => return Some(()),
                    Some(Frame::Object { from, .. }) => {
                        let from = *from;
                        match self.peek()? {
                            b',' => {
                                self.i += 1;
                                self.key()?;
                                break;
                            }
                            b'}' => {
                                self.i += 1;
                                self.st.keys.truncate(from);
                                self.st.frames.pop();
                            }
                            _ => return None,
                        }
                    }
                    Some(Frame::Array) => match self.peek()? {
                        b',' => {
                            self.i += 1;
                            break;
                        }
                        b']' => {
                            self.i += 1;
                            self.st.frames.pop();
                        }
                        _ => return None,
                    },
                }
            }
        }
    }

    fn open(&mut self, frame: Frame) -> Option<()> {
        if self.st.frames.len() >= MAX_DEPTH {
            return None;
        }
        self.st.frames.push(frame);
        Some(())
    }

    /// `"key":` of the innermost object: distinct from its other keys, not an array index.
    fn key(&mut self) -> Option<()> {
        let (a, b) = self.string()?;
        let key = &self.b[a..b];
        if is_array_index(key) {
            return None;
        }
        let (from, seen) = match self.st.frames.last_mut() {
            Some(Frame::Object { from, seen }) => (*from, seen),
            _ => return None,
        };
        let bit = key_bit(key);
        let siblings = &self.st.keys[from..];
        if siblings.len() >= MAX_KEYS
            || (*seen & bit != 0 && siblings.iter().any(|&(x, y)| &self.b[x..y] == key))
        {
            return None;
        }
        *seen |= bit;
        self.st.keys.push((a, b));
        self.eat(b':')?;
        if self.st.frames.len() == 1 {
            self.st.members.push(Member {
                key: (a, b),
                value: (self.i, self.i),
            });
        }
        Some(())
    }

    /// A string; returns the span between its quotes.
    fn string(&mut self) -> Option<(usize, usize)> {
        let start = self.i + 1;
        let end = string_end(self.b, start)?;
        self.i = end + 1;
        Some((start, end))
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number, in the form `Number::toString` gives its value.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let negative = self.eat(b'-').is_some();
        let int_start = self.i;
        let int_len = self.digits();
        if int_len == 0 || (int_len > 1 && self.b[int_start] == b'0') {
            return None;
        }
        let int_zero = int_len == 1 && self.b[int_start] == b'0';
        let mut simple = true;
        let mut significant = int_len;
        if self.eat(b'.').is_some() {
            let frac_start = self.i;
            let frac_len = self.digits();
            if frac_len == 0 {
                return None;
            }
            simple = self.b[self.i - 1] != b'0';
            significant = if int_zero {
                let zeros = self.b[frac_start..self.i]
                    .iter()
                    .take_while(|&&c| c == b'0')
                    .count();
                simple &= zeros <= 5;
                frac_len - zeros
            } else {
                int_len + frac_len
            };
        } else if negative && int_zero {
            return None;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
            simple = false;
        }
        if simple && significant <= MAX_DIGITS {
            return Some(());
        }
        // Longer or exponent forms (float arithmetic such as costs gives 16–17 digits):
        // compare with what JavaScript prints for the value.
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        let mut js = String::new();
        push_js_number(&mut js, text.parse().ok()?);
        (js == text).then_some(())
    }
}

/// The length of the escape starting with the backslash at `b[at]`, if it is one JavaScript
/// writes.
fn escape_len(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at + 1)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(2),
        b'u' => {
            let code = match b.get(at + 2..at + 6)? {
                [b'0', b'0', hi @ (b'0' | b'1'), lo] => (hi - b'0') * 16 + lower_hex(*lo)?,
                _ => return None,
            };
            // These have short forms.
            (!matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(6)
        }
        _ => None,
    }
}

/// Where the string whose text starts at `b[from]` ends (the index of its closing quote), its
/// escapes checked. Thirty-two bytes at a time with AVX2 where the CPU has it, else sixteen
/// with SSE2 (always there on x86-64), every quote
/// and backslash of a block taken from one comparison: message text has an escape every few
/// dozen bytes (`\\n` ends every line of a file a tool read), and searching afresh after each
/// one made this a third of the instructions of opening a long session.
#[cfg(target_arch = "x86_64")]
fn string_end(b: &[u8], from: usize) -> Option<usize> {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        #[allow(unsafe_code)]
        return unsafe { string_end_avx2(b, from) };
    }
    string_end_sse2(b, from)
}

/// [`string_end`] with AVX2; the last bytes go to the SSE2 form.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn string_end_avx2(b: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let mut at = from;
    // SAFETY: this function runs only where AVX2 is present; each load reads the 32 bytes of
    // `chunk`, a subslice of `b`.
    #[allow(unsafe_code)]
    unsafe {
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        'blocks: while let Some(chunk) = b.get(at..at + 32) {
            let v = _mm256_loadu_si256(chunk.as_ptr().cast());
            let hits =
                _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash));
            let mut mask = _mm256_movemask_epi8(hits) as u32;
            while mask != 0 {
                let p = at + mask.trailing_zeros() as usize;
                if b[p] == b'"' {
                    return Some(p);
                }
                let next = p + escape_len(b, p)?;
                if next >= at + 32 {
                    at = next;
                    continue 'blocks;
                }
                mask &= u32::MAX << (next - at);
            }
            at += 32;
        }
    }
    string_end_sse2(b, at)
}

/// [`string_end`] with SSE2.
#[cfg(target_arch = "x86_64")]
fn string_end_sse2(b: &[u8], from: usize) -> Option<usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut at = from;
    // SAFETY: SSE2 is part of x86-64, so its intrinsics are always available; each load reads
    // the sixteen bytes of `chunk`, a subslice of `b`.
    #[allow(unsafe_code)]
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        'blocks: while let Some(chunk) = b.get(at..at + 16) {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let hits = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
            let mut mask = _mm_movemask_epi8(hits) as u32;
            while mask != 0 {
                let p = at + mask.trailing_zeros() as usize;
                if b[p] == b'"' {
                    return Some(p);
                }
                let next = p + escape_len(b, p)?;
                if next >= at + 16 {
                    at = next;
                    continue 'blocks;
                }
                // Drop the escape's own bytes (an escaped quote or backslash is flagged too).
                mask &= u32::MAX << (next - at);
            }
            at += 16;
        }
    }
    string_end_scalar(b, at)
}

#[cfg(not(target_arch = "x86_64"))]
fn string_end(b: &[u8], from: usize) -> Option<usize> {
    string_end_scalar(b, from)
}

/// [`string_end`] without vector instructions (and for the last bytes of a line).
fn string_end_scalar(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at += find_quote_or_backslash(b.get(at..)?)?;
        if b[at] == b'"' {
            return Some(at);
        }
        at += escape_len(b, at)?;
    }
}

/// The first `"` or `\\` of `b`, eight bytes at a time, in plain arithmetic.
fn find_quote_or_backslash(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = b.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let q = w ^ (ONES * u64::from(b'"'));
        let s = w ^ (ONES * u64::from(b'\\'));
        // The lowest flagged byte is the first zero byte of `q` or `s` (higher flags may be
        // borrows, never lower ones).
        let found = ((q.wrapping_sub(ONES) & !q) | (s.wrapping_sub(ONES) & !s)) & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    memchr2(b'"', b'\\', words.remainder()).map(|i| at + i)
}

fn lower_hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// A key's bit in [`Frame::Object`]'s `seen`: equal keys have the same bit.
fn key_bit(key: &[u8]) -> u64 {
    let (first, last) = (key.first().copied(), key.last().copied());
    let mix =
        key.len() ^ (usize::from(first.unwrap_or(0)) * 7) ^ (usize::from(last.unwrap_or(0)) * 13);
    1 << (mix % 64)
}

/// Whether a key reads as a canonical integer (`"0"`, `"17"`): JavaScript enumerates array-index
/// keys before the others, so such keys are refused whatever their size.
fn is_array_index(key: &[u8]) -> bool {
    !key.is_empty() && key.iter().all(u8::is_ascii_digit) && (key.len() == 1 || key[0] != b'0')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use pi_js::parse::parse_js_json;

    fn canonical(s: &str) -> bool {
        no_control_bytes(s.as_bytes())
            && Checker::default().object(s.as_bytes(), 0) == Some(s.len())
    }

    /// What JavaScript would write for `s` (our JSON.parse and JSON.stringify).
    fn js_round_trip(s: &str) -> Option<String> {
        parse_js_json(s).ok().map(|v| to_js_string(&v).unwrap())
    }

    #[test]
    fn strings_end_at_their_first_unescaped_quote_at_every_offset() {
        // Escapes and quotes at every position around the 16-byte blocks, each checked against
        // the byte-wise search and against where the string really ends.
        let pieces: [&[u8]; 6] = [b"\\n", b"\\\"", b"\\\\", b"\\u001f", b"x", b"\\u00e9"];
        for prefix in 0..72 {
            for (k, piece) in pieces.iter().enumerate() {
                for gap in 0..20 {
                    let mut s = vec![b'a'; prefix];
                    s.extend_from_slice(piece);
                    s.extend(std::iter::repeat_n(b'b', gap));
                    s.extend_from_slice(pieces[(k + gap) % pieces.len()]);
                    let end = s.len();
                    s.extend_from_slice(b"\"tail\"");
                    let valid = k != 5 && (k + gap) % pieces.len() != 5;
                    let want = valid.then_some(end);
                    assert_eq!(string_end(&s, 0), want, "{}", String::from_utf8_lossy(&s));
                    assert_eq!(string_end_scalar(&s, 0), want);
                    #[cfg(target_arch = "x86_64")]
                    assert_eq!(string_end_sse2(&s, 0), want);
                }
            }
        }
        assert_eq!(string_end(b"abc", 0), None);
        assert_eq!(string_end(&[b'a'; 40], 0), None);
        assert_eq!(string_end(b"0123456789abcde\\", 0), None);
        assert_eq!(string_end(&[b'a'; 80], 0), None);
        let mut odd = vec![b'a'; 31];
        odd.push(b'\\');
        assert_eq!(string_end(&odd, 0), None);
    }

    #[test]
    fn accepts_what_json_stringify_writes() {
        for s in [
            r#"{}"#,
            r#"{"a":[],"b":{},"c":[1,-2,0,0.5,-0.25,123456789012345,0.000001,1.5,100]}"#,
            r#"{"a":[0.30000000000000004,1234567890123456,1e-7,1.5e+21,-2.5e-7,0.00015000000000000001]}"#,
            r#"{"s":"q\"b\\c\n\t\r\b\f\u0000\u001f é ✓ 😀 / \u0001","t":true,"f":false,"n":null}"#,
            r#"{"nested":[[[{"x":[{"y":{}}]}]]],"01":1,"-1":2,"1.5":4}"#,
            r#"{"__proto__":{"a":1},"a":{"a":{"a":1}}}"#,
        ] {
            assert!(canonical(s), "{s}");
            assert_eq!(js_round_trip(s).as_deref(), Some(s));
        }
    }

    #[test]
    fn rejects_what_json_stringify_would_change() {
        for s in [
            r#"{ "a":1}"#,
            r#"{"a": 1}"#,
            r#"{"a":1 }"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1.50}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1e5}"#,
            r#"{"a":1E-7}"#,
            r#"{"a":1e+5}"#,
            r#"{"a":12345678901234567890}"#,
            r#"{"a":0.30000000000000005}"#,
            r#"{"a":0.0000001}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"b":1,"0":2}"#,
            r#"{"a":[1,2,]}"#,
            r#"{"a":tru}"#,
            "{\"a\":\"\t\"}",
        ] {
            assert!(!canonical(s), "{s}");
            if let Some(js) = js_round_trip(s) {
                assert_ne!(js, s, "JavaScript keeps {s}: the check is too strict");
            }
        }
    }

    #[test]
    fn refuses_some_forms_javascript_would_keep() {
        // 2³² − 1 is no array index, but integer-looking keys are all refused.
        for s in [r#"{"4294967295":1}"#, r#"{"9007199254740993":1}"#] {
            assert!(!canonical(s), "{s}");
        }
    }

    #[test]
    fn records_the_outer_members() {
        let s = r#"{"role":"user","content":[{"x":1}],"n":null}"#;
        let mut checker = Checker::default();
        assert_eq!(checker.object(s.as_bytes(), 0), Some(s.len()));
        let spans: Vec<(&str, &str)> = checker
            .members()
            .iter()
            .map(|m| (&s[m.key.0..m.key.1], &s[m.value.0..m.value.1]))
            .collect();
        assert_eq!(
            spans,
            [
                ("role", "\"user\""),
                ("content", r#"[{"x":1}]"#),
                ("n", "null")
            ]
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_followed() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(!canonical(&deep));
    }
}
