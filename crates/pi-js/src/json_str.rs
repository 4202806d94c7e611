//! Fast JSON string escaping for large texts (tool output, file contents, request bodies).
//!
//! serde_json escapes a string one byte at a time (a table lookup and a branch per byte), which
//! profiled as the largest single cost of a tool turn: every tool result is written five or six
//! times (events, the provider request, the session line). [`push_json_str`] looks at sixteen
//! bytes at once (eight where SSE2 is not there) for the three things that need an escape (a
//! control character, `"`, `\`) and copies the runs between them whole. The output is
//! byte-identical to serde_json's (and to `JSON.stringify`'s: control characters as
//! `\b \t \n \f \r` or lowercase `\u00xx`, everything else raw).
//!
//! [`JsonStr`] and [`JsValue`] put it under serde: a long string is escaped here and handed to
//! serde_json's serializer as a finished fragment (the token serde_json's own `RawValue` uses);
//! `serde_json::to_value` parses such a fragment back into the string, so values stay the same.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde_json::Value;

/// Strings shorter than this go through serde_json's own escaping: the fragment costs an
/// allocation and a copy, which a short string does not earn back.
const FAST_MIN_LEN: usize = 64;

/// The token serde_json's serializers recognize as "write this text verbatim".
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// High bit set in every byte of `w` that needs an escape, and possibly in bytes above the
/// first such byte (borrows), never below it: the lowest set bit is exact.
#[inline]
fn special_mask(w: u64) -> u64 {
    let control = w.wrapping_sub(LOW * 0x20) & !w;
    let quote = w ^ (LOW * u64::from(b'"'));
    let backslash = w ^ (LOW * u64::from(b'\\'));
    let quote = quote.wrapping_sub(LOW) & !quote;
    let backslash = backslash.wrapping_sub(LOW) & !backslash;
    (control | quote | backslash) & HIGH
}

#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The index of the first byte at or after `from` that needs an escape, or `bytes.len()`.
#[inline]
fn find_special(bytes: &[u8], mut from: usize) -> usize {
    while let Some(chunk) = bytes.get(from..from + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let m = special_mask(u64::from_le_bytes(word));
        if m != 0 {
            return from + (m.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    bytes[from..]
        .iter()
        .position(|&b| needs_escape(b))
        .map_or(bytes.len(), |p| from + p)
}

/// Appends the escape of one byte that [`needs_escape`].
#[inline]
fn push_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\r' => out.extend_from_slice(b"\\r"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

/// Appends `s` as a JSON string literal, quotes included, exactly as `JSON.stringify(s)`.
#[allow(unsafe_code)]
pub fn push_json_str(out: &mut String, s: &str) {
    // SAFETY: what is appended is `s` with some ASCII bytes replaced by ASCII escapes, between
    // two quotes: valid UTF-8 once this returns. The blocks below may stop in the middle of a
    // character, but the next block or the tail completes it before the borrow ends, and
    // nothing in between can panic but an allocation, which aborts.
    let out = unsafe { out.as_mut_vec() };
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    #[cfg(target_arch = "x86_64")]
    let done = sse2::escape_blocks(out, bytes);
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    // The tail shorter than a block (all of it elsewhere), eight bytes at a time.
    let mut start = done;
    loop {
        let next = find_special(bytes, start);
        out.extend_from_slice(&bytes[start..next]);
        match bytes.get(next) {
            Some(&b) => push_escape(out, b),
            None => break,
        }
        start = next + 1;
    }
    out.push(b'"');
}

/// SSE2 is part of x86-64 itself: no detection, every x86-64 CPU has it.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_storeu_si128,
    };

    /// Escapes `bytes` sixteen at a time onto `out` while a whole block is left; returns how
    /// many were consumed. Each block is stored whole and the output's length set past the
    /// bytes before its first escape only, so text with a newline every few dozen bytes costs
    /// a load, a compare and a store per escape, not a copy call (criterion `json_escape`, a
    /// generated 150 KiB source file: 4.3 GiB/s scanning blocks and copying the runs between
    /// escapes, 5.2-5.6 GiB/s this way).
    #[allow(unsafe_code)]
    pub(super) fn escape_blocks(out: &mut Vec<u8>, bytes: &[u8]) -> usize {
        let mut at = 0;
        while at + 16 <= bytes.len() {
            out.reserve(16);
            // SAFETY: SSE2 is enabled on every x86-64 target; `at + 16 <= len` gives 16
            // readable bytes, and `reserve(16)` 16 writable ones past the length; `loadu` and
            // `storeu` need no alignment. The length only grows over bytes just written.
            let mask = unsafe {
                let v = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
                _mm_storeu_si128(out.as_mut_ptr().add(out.len()).cast::<__m128i>(), v);
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                // Unsigned `v <= 0x1f`: the minimum with 0x1f is `v` itself.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
            };
            let kept = if mask == 0 {
                16
            } else {
                mask.trailing_zeros() as usize
            };
            // SAFETY: as above, the first `kept` bytes past the length were just written.
            unsafe { out.set_len(out.len() + kept) };
            if kept < 16 {
                super::push_escape(out, bytes[at + kept]);
                at += kept + 1;
            } else {
                at += 16;
            }
        }
        at
    }
}

/// Serializes a string like `str`'s own impl, escaping a long one with [`push_json_str`].
pub struct JsonStr<'a>(pub &'a str);

impl Serialize for JsonStr<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_str(self.0, s)
    }
}

/// A `serialize_with` form of [`JsonStr`].
pub fn serialize_str<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if text.len() < FAST_MIN_LEN {
        return s.serialize_str(text);
    }
    // The literal is built in a per-thread scratch buffer (a request body escapes every long
    // text of the transcript; this saves an allocation and free for each).
    // Taken out while in use, so a serializer that came back here would just get a new one.
    let mut literal = SCRATCH.take();
    literal.clear();
    push_json_str(&mut literal, text);
    let done = s.serialize_struct(RAW_VALUE_TOKEN, 1).and_then(|mut raw| {
        raw.serialize_field(RAW_VALUE_TOKEN, literal.as_str())?;
        raw.end()
    });
    if literal.capacity() <= SCRATCH_KEEP {
        SCRATCH.set(literal);
    }
    done
}

/// The largest scratch buffer a thread keeps between strings (an idle process holds no more).
const SCRATCH_KEEP: usize = 256 * 1024;

thread_local! {
    static SCRATCH: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// About how many bytes `JSON.stringify(value)` takes: the strings' lengths, two quotes each, and
/// a few bytes per other item. Escapes and long numbers are not counted, so it may fall short.
fn estimated_js_len(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| estimated_js_len(v) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + estimated_js_len(v))
                .sum::<usize>()
        }
        _ => 5,
    }
}

/// Serializes a `serde_json::Value` as its own impl does, its long strings through
/// [`JsonStr`] (request bodies: the whole transcript's text, written at every request).
pub struct JsValue<'a>(pub &'a Value);

impl Serialize for JsValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(text) => serialize_str(text, s),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&JsValue(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, &JsValue(v))?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

/// `JSON.stringify(value)` through [`JsValue`].
pub fn value_to_js_string(value: &Value) -> Result<String, serde_json::Error> {
    // A tenth more than the estimate covers typical escapes without a regrowth.
    let guess = estimated_js_len(value);
    crate::json::to_js_string_sized(&JsValue(value), guess + guess / 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::to_js_string;

    /// `s` as a JSON string literal (see [`push_json_str`]).
    fn json_str_literal(s: &str) -> String {
        let mut out = String::new();
        push_json_str(&mut out, s);
        out
    }

    fn all_bytes_text() -> String {
        let mut s = String::new();
        for c in (0u32..0x80).chain([0xe9, 0x2028, 0x2029, 0xfeff, 0x1f600]) {
            s.push(char::from_u32(c).unwrap());
            s.push_str("ab");
        }
        s
    }

    #[test]
    fn escapes_like_serde_json_at_every_length_and_offset() {
        let text = all_bytes_text();
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        for (i, _) in chars.iter().step_by(3) {
            for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200] {
                let end = chars
                    .iter()
                    .map(|(j, _)| *j)
                    .find(|j| *j >= i + len)
                    .unwrap_or(text.len());
                let s = &text[*i..end];
                assert_eq!(
                    json_str_literal(s),
                    serde_json::to_string(s).unwrap(),
                    "{s:?}"
                );
            }
        }
        let quiet = "x".repeat(1000);
        assert_eq!(json_str_literal(&quiet), format!("\"{quiet}\""));
        let noisy = "\"\\\n\u{1}".repeat(100);
        assert_eq!(
            json_str_literal(&noisy),
            serde_json::to_string(&noisy).unwrap()
        );
    }

    #[test]
    fn escapes_after_what_is_already_there_and_across_block_ends() {
        // Blocks are stored whole past the output's length: text already in the buffer stays,
        // and characters of two to four bytes split by a block's end come out whole.
        for wide in ["é", "\u{2028}", "\u{1f600}"] {
            for gap in 0..20 {
                let s = format!(
                    "{}\n{}\"{}",
                    wide.repeat(gap),
                    "x".repeat(gap),
                    wide.repeat(9)
                );
                let mut out = String::from("{\"k\":");
                push_json_str(&mut out, &s);
                assert_eq!(
                    out,
                    format!("{{\"k\":{}", serde_json::to_string(&s).unwrap())
                );
            }
        }
    }

    #[test]
    fn the_length_estimate_is_close_for_plain_text() {
        let v = serde_json::json!({"messages": [{"role": "user", "content": "x".repeat(5000)}], "n": 1});
        let exact = to_js_string(&v).unwrap().len();
        let guess = estimated_js_len(&v);
        assert!(
            guess <= exact + 16 && guess + 16 >= exact,
            "{guess} vs {exact}"
        );
    }

    #[test]
    fn long_strings_serialize_through_the_scratch_buffer() {
        // serde_json::to_value parses each fragment back into a string.
        let long = "é\n\"".repeat(100);
        let v = serde_json::json!([long, {"k": long}]);
        assert_eq!(serde_json::to_value(JsValue(&v)).unwrap(), v);
        assert_eq!(value_to_js_string(&v).unwrap(), to_js_string(&v).unwrap());
    }

    #[test]
    fn values_serialize_as_serde_json_does() {
        let long = format!("line\n{}\"q\" \\ \u{7}", "é".repeat(100));
        let v = serde_json::json!({
            "a": [long, "short\n", 1.5, 2, -3, null, true, {}],
            "b": {"c": long.repeat(3), "d": []},
            "e": 1e21,
        });
        assert_eq!(
            to_js_string(&JsValue(&v)).unwrap(),
            to_js_string(&v).unwrap()
        );
        assert_eq!(serde_json::to_value(JsValue(&v)).unwrap(), v);
        assert_eq!(
            crate::json::to_js_string_pretty(&JsValue(&v)).unwrap(),
            crate::json::to_js_string_pretty(&v).unwrap()
        );
    }
}
