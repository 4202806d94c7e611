//! `JSON.parse` as Node 22 (V8) does it: the same accepted language, the same resulting value,
//! and on failure the exact `SyntaxError.message`.
//!
//! Pi answers an unparsable RPC line with `Failed to parse command: <message>`, so the message
//! text is part of the wire protocol. The messages follow V8's rules:
//!
//! * `Unexpected end of JSON input` when a value, a literal or an escape runs into the end.
//! * `<what> [in JSON] at position P (line L column C)` for errors tied to a position. `P` counts
//!   UTF-16 code units of the JavaScript string, lines end at `\n`, `\r` or `\r\n`, and columns
//!   are UTF-16 units from the line start, counted from 1.
//! * `Unexpected token 'c', "<source>" is not valid JSON` for a character that cannot appear
//!   where a value (or the rest of a literal) is expected, or that follows a backslash in a string
//!   and lies above U+00FF (lower ones give `Bad escaped character`). Sources longer than 20
//!   UTF-16 units are cut to the 10 units before the character and the 10 from it on; `...`
//!   marks a cut end (and, as in V8, a start exactly 10 units before the character).
//! * `"undefined" is not valid JSON` (likewise `NaN`, `Infinity`, `[object Object]`) when the
//!   whole source is one of those strings.
//! * `Unexpected number` / `Unexpected string` (with a position) when a literal such as `true`
//!   is interrupted by a digit, `-` or `"`, or when a leading `0` is followed by a digit.
//!
//! Rust strings cannot hold what JavaScript strings can, and `serde_json::Value` has no
//! Infinity, so a few results are the closest faithful rendering instead of an exact copy:
//!
//! * **Lone surrogates.** `"\ud800"` is valid JSON and JavaScript keeps the lone surrogate; we
//!   decode every unpaired surrogate escape to U+FFFD (as `String::from_utf16_lossy` would).
//!   Two object keys that differ only in their lone surrogates therefore merge (last wins).
//!   Error messages that quote a lone surrogate (a token that is half of a surrogate pair, or a
//!   context snippet cut inside one) get U+FFFD in its place too; on the wire Pi would print the
//!   surrogate as a `\udXXX` escape instead.
//! * **Numbers out of range.** `1e400` parses to `Infinity` in JavaScript, which
//!   `JSON.stringify` writes as `null`; we produce `Value::Null`. Underflow gives `0` / `-0` as
//!   in JavaScript.
//! * **Numbers are canonical.** JavaScript has one number type, so `1.0`, `1e0` and `1` are all
//!   the integer `1` here (an `i64`/`u64` whenever the value is an integer of magnitude at most
//!   2^53), every other value is the correctly rounded `f64` (`12345678901234567890` becomes
//!   `1.2345678901234567e19`, printed by [`crate::json`] as `12345678901234567000`, exactly like
//!   JavaScript), and `-0` stays the float `-0.0`.
//! * **Key order.** Objects keep JavaScript's property order: keys that are array indices
//!   (canonical decimal integers below 2^32 - 1) come first in ascending numeric order, then the
//!   other keys in first-insertion order. A duplicate key keeps its first position and takes the
//!   last value.
//! * **Nesting depth.** V8 parses arbitrarily deep input (its parser is iterative), but every
//!   consumer of a `serde_json::Value` (drop, clone, serialization) recurses. Our parser is
//!   iterative too and never overflows the stack, but it refuses values nested deeper than
//!   [`MAX_DEPTH`] arrays/objects with the message [`TOO_DEEP_MESSAGE`] — unless the input also
//!   has a syntax error, in which case V8's message for that error wins, as it would in Node.
//!
//! The parser is a single left-to-right pass over the UTF-8 bytes that builds the value as it
//! goes (as fast as `serde_json::from_str` on megabyte lines); positions are only converted to
//! UTF-16 when an error is rendered. It does not delegate valid input to `serde_json`'s parser
//! because that one (without its `float_roundtrip` feature) misrounds some decimals, e.g.
//! `123456789012345680000` and `2.2250738585072011e-308` come out one ulp off, and it would need
//! a second pass for the number and key-order rules above anyway.

use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects that [`parse_js_json`] accepts (`[]` is depth 1).
///
/// Node itself parses any depth but can only `JSON.stringify` about 4,100 levels. The parser
/// here needs no stack per level, but the `Value` it returns is recursive: measured per level of
/// nested objects, `Drop` takes ~0.3 KiB in debug builds (0.07 in release), serialization ~0.5
/// (0.07), `Clone` ~2 (0.5) and `serde_json::from_value` ~2.8 (1). 512 levels keep even the
/// worst of those near 1.4 MiB in a debug build, inside the 2 MiB stack of a test or Tokio
/// worker thread, and far from it in release.
pub const MAX_DEPTH: usize = 512;

/// The error for input nested deeper than [`MAX_DEPTH`] (V8's message for a stack overflow).
pub const TOO_DEEP_MESSAGE: &str = "Maximum call stack size exceeded";

/// Parses `text` the way JavaScript's `JSON.parse(text)` does, returning the value or the exact
/// message of the `SyntaxError` V8 (Node 22) would throw. See the module docs for the few
/// places where a Rust value cannot mirror the JavaScript one.
pub fn parse_js_json(text: &str) -> Result<Value, String> {
    let mut parser = Parser {
        src: text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    parser.run().map_err(|fail| fail.render(text))
}

/// What went wrong, before it is rendered into V8's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `Unexpected end of JSON input`.
    End,
    /// `Unexpected token ...` with a context snippet (or a special-string message).
    Token,
    /// `Unexpected number in JSON at position ...`.
    Number,
    /// `Unexpected string in JSON at position ...`.
    Str,
    /// A fixed message followed by ` at position ...`.
    At(&'static str),
    /// Valid JSON, but deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// A failure at a byte offset of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fail {
    kind: Kind,
    pos: usize,
}

// Everything before ` at position P (line L column C)`.
/// Room reserved for the keys of each object as it is parsed.
const OBJECT_KEYS: usize = 8;
const EXPECTED_PROPERTY_NAME_OR_RBRACE: &str = "Expected property name or '}' in JSON";
const EXPECTED_COMMA_OR_RBRACKET: &str = "Expected ',' or ']' after array element in JSON";
const EXPECTED_COMMA_OR_RBRACE: &str = "Expected ',' or '}' after property value in JSON";
const EXPECTED_COLON: &str = "Expected ':' after property name in JSON";
const EXPECTED_DOUBLE_QUOTED_PROPERTY_NAME: &str = "Expected double-quoted property name in JSON";
const NON_WHITESPACE_AFTER_JSON: &str = "Unexpected non-whitespace character after JSON";
const UNTERMINATED_STRING: &str = "Unterminated string in JSON";
const BAD_CONTROL_CHARACTER: &str = "Bad control character in string literal in JSON";
const BAD_ESCAPED_CHARACTER: &str = "Bad escaped character in JSON";
const BAD_UNICODE_ESCAPE: &str = "Bad Unicode escape in JSON";
const NO_NUMBER_AFTER_MINUS: &str = "No number after minus sign in JSON";
const UNTERMINATED_FRACTION: &str = "Unterminated fractional number in JSON";
const EXPONENT_MISSING_NUMBER: &str = "Exponent part is missing a number in JSON";

/// Sources of at most this many UTF-16 units are quoted whole in `Unexpected token` messages.
const MAX_SOURCE_QUOTED_WHOLE: usize = 20;
/// Otherwise this many units either side of the offending one are quoted.
const CONTEXT_UNITS: usize = 10;

impl Fail {
    fn render(self, src: &str) -> String {
        match self.kind {
            Kind::End => "Unexpected end of JSON input".to_owned(),
            Kind::TooDeep => TOO_DEEP_MESSAGE.to_owned(),
            Kind::Number => positioned("Unexpected number in JSON", src, self.pos),
            Kind::Str => positioned("Unexpected string in JSON", src, self.pos),
            Kind::At(what) => positioned(what, src, self.pos),
            Kind::Token => unexpected_token(src, self.pos),
        }
    }
}

/// The byte offset `pos` of `src` as a UTF-16 offset of the same JavaScript string.
fn utf16_offset(src: &str, pos: usize) -> usize {
    let mut boundary = pos.min(src.len());
    while !src.is_char_boundary(boundary) {
        boundary -= 1;
    }
    src[..boundary].chars().map(char::len_utf16).sum()
}

/// `<what> at position P (line L column C)`.
fn positioned(what: &str, src: &str, pos: usize) -> String {
    let mut end = pos.min(src.len());
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    let before = &src[..end];
    let bytes = before.as_bytes();
    let mut line = 1usize;
    let mut line_start = 0usize; // byte offset
    for (i, &b) in bytes.iter().enumerate() {
        let ends_line = match b {
            b'\n' => true,
            // `\r\n` is one line break, counted at its `\n`.
            b'\r' => src.as_bytes().get(i + 1) != Some(&b'\n'),
            _ => false,
        };
        if ends_line {
            line += 1;
            line_start = i + 1;
        }
    }
    let position = utf16_offset(src, end);
    let column = before[line_start..]
        .chars()
        .map(char::len_utf16)
        .sum::<usize>()
        + 1;
    format!("{what} at position {position} (line {line} column {column})")
}

/// `Unexpected token 'c', "..." is not valid JSON` and its special-string variant.
fn unexpected_token(src: &str, pos: usize) -> String {
    if matches!(src, "undefined" | "NaN" | "Infinity" | "[object Object]") {
        return format!("\"{src}\" is not valid JSON");
    }
    let units: Vec<u16> = src.encode_utf16().collect();
    let at = utf16_offset(src, pos);
    let Some(&unit) = units.get(at) else {
        return "Unexpected end of JSON input".to_owned();
    };
    let token = String::from_utf16_lossy(&[unit]);
    if units.len() <= MAX_SOURCE_QUOTED_WHOLE {
        return format!("Unexpected token '{token}', \"{src}\" is not valid JSON");
    }
    let start = at.saturating_sub(CONTEXT_UNITS);
    let end = (at + CONTEXT_UNITS).min(units.len());
    let snippet = String::from_utf16_lossy(&units[start..end]);
    // V8 marks the start as cut from 10 units on, even though nothing is cut at exactly 10.
    let lead = if at < CONTEXT_UNITS { "" } else { "..." };
    let trail = if end == units.len() { "" } else { "..." };
    format!("Unexpected token '{token}', {lead}\"{snippet}\"{trail} is not valid JSON")
}

/// An array or object under construction.
enum Frame {
    Array(Vec<Value>),
    Object {
        map: Map<String, Value>,
        /// The key whose value is being parsed.
        key: String,
        /// Whether some key is an array index, so the map needs JavaScript's reordering.
        index_keys: bool,
    },
}

impl Frame {
    /// Adds a finished member value.
    fn attach(&mut self, value: Value) {
        match self {
            Frame::Array(items) => items.push(value),
            Frame::Object { map, key, .. } => {
                map.insert(std::mem::take(key), value);
            }
        }
    }

    fn finish(self) -> Value {
        match self {
            Frame::Array(mut items) => {
                // Parsed values may live long (a loaded session): no spare capacity.
                items.shrink_to_fit();
                Value::Array(items)
            }
            Frame::Object {
                map, index_keys, ..
            } => Value::Object(if index_keys { js_key_order(map) } else { map }),
        }
    }
}

/// The array-index value of `key` if JavaScript treats it as an array index.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    // 2^32 - 1 itself is not an array index.
    u32::try_from(n).ok().filter(|&n| n != u32::MAX)
}

/// Reorders `map` the way V8 enumerates an object's own properties: array indices ascending,
/// then the remaining keys in insertion order.
fn js_key_order(map: Map<String, Value>) -> Map<String, Value> {
    let mut indexed: Vec<(u32, String, Value)> = Vec::new();
    let mut named: Vec<(String, Value)> = Vec::with_capacity(map.len());
    for (k, v) in map {
        match array_index(&k) {
            Some(n) => indexed.push((n, k, v)),
            None => named.push((k, v)),
        }
    }
    indexed.sort_by_key(|(n, _, _)| *n);
    let mut out = Map::with_capacity(indexed.len() + named.len());
    for (_, k, v) in indexed {
        out.insert(k, v);
    }
    for (k, v) in named {
        out.insert(k, v);
    }
    out
}

/// 2^53: integers up to this magnitude are exact in an `f64`.
const MAX_SAFE_MAGNITUDE: f64 = 9_007_199_254_740_992.0;

/// The canonical `Value` for a JavaScript number.
fn number_value(v: f64) -> Value {
    if !v.is_finite() {
        // JSON.parse gives ±Infinity; JSON.stringify writes it as null.
        return Value::Null;
    }
    if v.fract() == 0.0 && v.abs() <= MAX_SAFE_MAGNITUDE && !(v == 0.0 && v.is_sign_negative()) {
        // Exact: |v| <= 2^53 and integral.
        return if v >= 0.0 {
            Value::Number(Number::from(v as u64))
        } else {
            Value::Number(Number::from(v as i64))
        };
    }
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// What follows a `[` or `{` once it has been consumed.
enum Opened {
    /// `[]` or `{}`: the value is complete.
    Empty(Value),
    /// A member value must be parsed next.
    Member,
}

impl Parser<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn at(&self, what: &'static str, pos: usize) -> Fail {
        Fail {
            kind: Kind::At(what),
            pos,
        }
    }

    /// The error for an unexpected character (or the end) at `pos`, classified like V8's
    /// tokens: `"` starts a string, `-` and digits a number.
    fn unexpected(&self, pos: usize) -> Fail {
        let kind = match self.bytes.get(pos) {
            None => Kind::End,
            Some(b'"') => Kind::Str,
            Some(b'-' | b'0'..=b'9') => Kind::Number,
            Some(_) => Kind::Token,
        };
        Fail { kind, pos }
    }

    fn run(&mut self) -> Result<Value, Fail> {
        // Open containers, innermost last: `b'['` or `b'{'`.
        let mut kinds: Vec<u8> = Vec::new();
        // Containers being built; empty once the input proved too deep (then we only validate).
        let mut frames: Vec<Frame> = Vec::new();
        let mut building = true;

        'value: loop {
            // Parse one value; containers push a frame and go round again for their first member.
            self.skip_ws();
            let mut value = match self.peek() {
                None => return Err(self.unexpected(self.pos)),
                Some(b'"') => Value::String(self.string(building)?),
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => {
                    self.literal(b"true")?;
                    Value::Bool(true)
                }
                Some(b'f') => {
                    self.literal(b"false")?;
                    Value::Bool(false)
                }
                Some(b'n') => {
                    self.literal(b"null")?;
                    Value::Null
                }
                Some(open @ (b'[' | b'{')) => {
                    if kinds.len() >= MAX_DEPTH && building {
                        building = false;
                        frames.clear();
                    }
                    match self.open(open, building, &mut kinds, &mut frames)? {
                        Opened::Empty(value) => value,
                        Opened::Member => continue 'value,
                    }
                }
                Some(_) => return Err(self.unexpected(self.pos)),
            };

            // Hand the value to its container, closing every container that ends here.
            loop {
                let Some(&kind) = kinds.last() else {
                    self.skip_ws();
                    if self.pos < self.bytes.len() {
                        return Err(self.at(NON_WHITESPACE_AFTER_JSON, self.pos));
                    }
                    return if building {
                        Ok(value)
                    } else {
                        Err(Fail {
                            kind: Kind::TooDeep,
                            pos: self.pos,
                        })
                    };
                };
                if let Some(frame) = frames.last_mut() {
                    // `frames` is empty once we stopped building.
                    frame.attach(value);
                }
                self.skip_ws();
                let (close, missing) = if kind == b'[' {
                    (b']', EXPECTED_COMMA_OR_RBRACKET)
                } else {
                    (b'}', EXPECTED_COMMA_OR_RBRACE)
                };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if kind == b'{' {
                            self.skip_ws();
                            if self.peek() != Some(b'"') {
                                return Err(self.at(EXPECTED_DOUBLE_QUOTED_PROPERTY_NAME, self.pos));
                            }
                            self.key(building, &mut frames)?;
                        }
                        continue 'value;
                    }
                    Some(b) if b == close => {
                        self.pos += 1;
                        kinds.pop();
                        value = match frames.pop() {
                            Some(frame) if building => frame.finish(),
                            _ => Value::Null,
                        };
                    }
                    _ => return Err(self.at(missing, self.pos)),
                }
            }
        }
    }

    /// Consumes `[` or `{` (at the current position) and, for a non-empty object, its first key
    /// and colon.
    fn open(
        &mut self,
        open: u8,
        building: bool,
        kinds: &mut Vec<u8>,
        frames: &mut Vec<Frame>,
    ) -> Result<Opened, Fail> {
        self.pos += 1;
        self.skip_ws();
        if open == b'[' {
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(Opened::Empty(Value::Array(Vec::new())));
            }
            kinds.push(b'[');
            if building {
                frames.push(Frame::Array(Vec::new()));
            }
            return Ok(Opened::Member);
        }
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                Ok(Opened::Empty(Value::Object(Map::new())))
            }
            Some(b'"') => {
                kinds.push(b'{');
                if building {
                    frames.push(Frame::Object {
                        // Most objects have a few keys: no rehashing while they are added.
                        map: Map::with_capacity(OBJECT_KEYS),
                        key: String::new(),
                        index_keys: false,
                    });
                }
                self.key(building, frames)?;
                Ok(Opened::Member)
            }
            _ => Err(self.at(EXPECTED_PROPERTY_NAME_OR_RBRACE, self.pos)),
        }
    }

    /// Parses a property name (the current byte is `"`) and the colon after it, storing the
    /// name in the innermost frame.
    fn key(&mut self, building: bool, frames: &mut [Frame]) -> Result<(), Fail> {
        let name = self.string(building)?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.at(EXPECTED_COLON, self.pos));
        }
        self.pos += 1;
        if let Some(Frame::Object {
            key, index_keys, ..
        }) = frames.last_mut()
        {
            if !*index_keys && name.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                *index_keys = array_index(&name).is_some();
            }
            *key = name;
        }
        Ok(())
    }

    /// Checks the rest of a `true`/`false`/`null` literal whose first byte is current.
    fn literal(&mut self, word: &[u8]) -> Result<(), Fail> {
        for (i, &want) in word.iter().enumerate().skip(1) {
            if self.bytes.get(self.pos + i) != Some(&want) {
                return Err(self.unexpected(self.pos + i));
            }
        }
        self.pos += word.len();
        Ok(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    /// Parses a number starting at the current byte (`-` or a digit).
    fn number(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.at(NO_NUMBER_AFTER_MINUS, self.pos));
            }
        }
        if self.peek() == Some(b'0') {
            self.pos += 1;
            if let Some(b'0'..=b'9') = self.peek() {
                return Err(Fail {
                    kind: Kind::Number,
                    pos: self.pos,
                });
            }
        } else {
            self.digits();
        }
        let int_end = self.pos;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.at(UNTERMINATED_FRACTION, self.pos));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.at(EXPONENT_MISSING_NUMBER, self.pos));
            }
            self.digits();
        }
        let digits_start = start + usize::from(negative);
        // Up to 15 digits is below 2^53: exact as an integer, no float parsing needed.
        if integer && int_end - digits_start <= 15 {
            let mut n: u64 = 0;
            for &d in &self.bytes[digits_start..int_end] {
                n = n * 10 + u64::from(d - b'0');
            }
            return Ok(match (negative, n) {
                (false, n) => Value::Number(Number::from(n)),
                (true, 0) => number_value(-0.0),
                // n < 10^15, so it fits an i64.
                (true, n) => Value::Number(Number::from(-(n as i64))),
            });
        }
        // Rust's float parsing is correctly rounded and gives ±inf on overflow, like V8.
        let v = self.src[start..self.pos].parse::<f64>().unwrap_or(f64::NAN);
        Ok(number_value(v))
    }

    /// Parses a string starting at the current `"`, returning its contents (empty when not
    /// `building`).
    fn string(&mut self, building: bool) -> Result<String, Fail> {
        self.pos += 1;
        // One allocation of the final size (escapes only shorten): growing by pushes and then
        // shrinking cost more than parsing on large session files.
        let mut out = if building {
            String::with_capacity(string_extent(&self.bytes[self.pos..]))
        } else {
            String::new()
        };
        let mut run_start = self.pos;
        loop {
            // Find the next byte that needs attention; everything else is copied verbatim.
            let Some(offset) = find_special(&self.bytes[self.pos..]) else {
                return Err(self.at(UNTERMINATED_STRING, self.bytes.len()));
            };
            self.pos += offset;
            let b = self.bytes[self.pos];
            if b < 0x20 {
                return Err(self.at(BAD_CONTROL_CHARACTER, self.pos));
            }
            if building {
                out.push_str(&self.src[run_start..self.pos]);
            }
            if b == b'"' {
                self.pos += 1;
                // Escapes made the text shorter than the room reserved for it.
                out.shrink_to_fit();
                return Ok(out);
            }
            // A backslash.
            let escape = self.pos + 1;
            let Some(&c) = self.bytes.get(escape) else {
                return Err(Fail {
                    kind: Kind::End,
                    pos: escape,
                });
            };
            let decoded = match c {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let unit = self.hex4(escape + 1)?;
                    self.pos = escape + 5;
                    self.unicode_escape(unit)
                }
                // Characters above U+00FF (lead bytes from 0xC4 on) are not in V8's escape
                // table at all and count as an unexpected token.
                0xC4.. => return Err(self.unexpected(escape)),
                _ => return Err(self.at(BAD_ESCAPED_CHARACTER, escape)),
            };
            if c != b'u' {
                self.pos = escape + 1;
            }
            if building {
                out.push(decoded);
            }
            run_start = self.pos;
        }
    }

    /// Reads the four hex digits of a `\u` escape starting at `pos`.
    fn hex4(&self, pos: usize) -> Result<u16, Fail> {
        let mut unit: u16 = 0;
        for p in pos..pos + 4 {
            let digit = self
                .bytes
                .get(p)
                .and_then(|&b| char::from(b).to_digit(16))
                .ok_or_else(|| self.at(BAD_UNICODE_ESCAPE, p))?;
            unit = (unit << 4) | digit as u16;
        }
        Ok(unit)
    }

    /// Turns the UTF-16 unit of a `\u` escape (already consumed) into a char, pairing a high
    /// surrogate with an immediately following `\u` low surrogate. Unpaired surrogates become
    /// U+FFFD.
    fn unicode_escape(&mut self, unit: u16) -> char {
        if (0xD800..0xDC00).contains(&unit)
            && self.bytes.get(self.pos) == Some(&b'\\')
            && self.bytes.get(self.pos + 1) == Some(&b'u')
            && let Ok(low @ 0xDC00..=0xDFFF) = self.hex4(self.pos + 2)
        {
            self.pos += 6;
            let high = u32::from(unit) - 0xD800;
            let code = 0x10000 + (high << 10) + (u32::from(low) - 0xDC00);
            return char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
        }
        char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)
    }
}

/// The offset of the first byte in `bytes` that ends a verbatim run inside a string (`"`, `\`
/// or a control character), looking at eight bytes at a time.
#[inline]
/// The number of bytes before the closing quote of a string body (escapes skipped), or all of
/// `bytes` when there is none.
fn string_extent(bytes: &[u8]) -> usize {
    let mut i = 0;
    while let Some(offset) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
        i += offset;
        if bytes[i] == b'"' {
            return i;
        }
        i += 2;
        if i >= bytes.len() {
            break;
        }
    }
    bytes.len()
}

fn find_special(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break; // unreachable: every chunk has eight bytes
        };
        let x = u64::from_le_bytes(word);
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        // A byte is flagged when it is zero in `quote` or `backslash`, or below 0x20 in `x`.
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (x.wrapping_sub(ONES * 0x20) & !x);
        if flags & HIGHS != 0
            && let Some(i) = chunk.iter().position(|&b| NEEDS_ATTENTION[usize::from(b)])
        {
            return Some(offset + i);
        }
        offset += 8;
    }
    bytes[offset..]
        .iter()
        .position(|&b| NEEDS_ATTENTION[usize::from(b)])
        .map(|i| offset + i)
}

/// Bytes that end a verbatim run inside a string: `"`, `\` and control characters.
static NEEDS_ATTENTION: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = true;
        i += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::to_js_string;

    fn err(text: &str) -> String {
        parse_js_json(text).unwrap_err()
    }

    fn ok(text: &str) -> String {
        to_js_string(&parse_js_json(text).unwrap()).unwrap()
    }

    #[test]
    fn parses_commands() {
        assert_eq!(
            ok(r#" {"id":"1","type":"get_state"} "#),
            r#"{"id":"1","type":"get_state"}"#
        );
        assert_eq!(ok(r#"[true,false,null,"a\"\\\/\b\f\n\r\t\u00e9"]"#), {
            r#"[true,false,null,"a\"\\/\b\f\n\r\té"]"#
        });
    }

    #[test]
    fn end_of_input() {
        for text in ["", " ", "\r\n", "[", "[1,", "{\"a\":", "tru", "\"ab\\"] {
            assert_eq!(err(text), "Unexpected end of JSON input", "{text:?}");
        }
    }

    #[test]
    fn positioned_messages() {
        let cases = [
            (
                "{this is not json",
                "Expected property name or '}' in JSON at position 1 (line 1 column 2)",
            ),
            (
                "[1 2]",
                "Expected ',' or ']' after array element in JSON at position 3 (line 1 column 4)",
            ),
            (
                "{\"a\":1 \"b\":2}",
                "Expected ',' or '}' after property value in JSON at position 7 (line 1 column 8)",
            ),
            (
                "{\"a\" 1}",
                "Expected ':' after property name in JSON at position 5 (line 1 column 6)",
            ),
            (
                "{\"a\":1,}",
                "Expected double-quoted property name in JSON at position 7 (line 1 column 8)",
            ),
            (
                "\"abc",
                "Unterminated string in JSON at position 4 (line 1 column 5)",
            ),
            (
                "\"a\u{1}b\"",
                "Bad control character in string literal in JSON at position 2 (line 1 column 3)",
            ),
            (
                "\"ab\\x\"",
                "Bad escaped character in JSON at position 4 (line 1 column 5)",
            ),
            (
                "\"\\u12g4\"",
                "Bad Unicode escape in JSON at position 5 (line 1 column 6)",
            ),
            (
                "-x",
                "No number after minus sign in JSON at position 1 (line 1 column 2)",
            ),
            (
                "[1.]",
                "Unterminated fractional number in JSON at position 3 (line 1 column 4)",
            ),
            (
                "1e+",
                "Exponent part is missing a number in JSON at position 3 (line 1 column 4)",
            ),
            (
                "-01",
                "Unexpected number in JSON at position 2 (line 1 column 3)",
            ),
            (
                "[tr\"]",
                "Unexpected string in JSON at position 3 (line 1 column 4)",
            ),
            (
                "\"😀\" x",
                "Unexpected non-whitespace character after JSON at position 5 (line 1 column 6)",
            ),
            (
                "{\r\n\"a\":1,\r\n\"b\" 2}",
                "Expected ':' after property name in JSON at position 15 (line 3 column 5)",
            ),
            (
                "{\"a\"\n\r",
                "Expected ':' after property name in JSON at position 6 (line 3 column 1)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(err(text), want, "{text:?}");
        }
    }

    #[test]
    fn unexpected_token_messages() {
        let cases = [
            ("xyz", "Unexpected token 'x', \"xyz\" is not valid JSON"),
            ("undefined", "\"undefined\" is not valid JSON"),
            ("[object Object]", "\"[object Object]\" is not valid JSON"),
            (
                " undefined",
                "Unexpected token 'u', \" undefined\" is not valid JSON",
            ),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "Unexpected token 'a', \"abcdefghij\"... is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,9,x,1,2,3,4,5,6,7,8,9]",
                "Unexpected token 'x', ...\"5,6,7,8,9,x,1,2,3,4,\"... is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,x]",
                "Unexpected token 'x', ...\"5,6,7,8,9,x]\" is not valid JSON",
            ),
            ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
            (
                "😀",
                "Unexpected token '\u{fffd}', \"😀\" is not valid JSON",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(err(text), want, "{text:?}");
        }
    }

    #[test]
    fn values_follow_javascript() {
        assert_eq!(ok("1.0"), "1");
        assert!(parse_js_json("1.0").unwrap().is_u64());
        assert_eq!(ok("-0"), "0");
        assert_eq!(ok("12345678901234567890"), "12345678901234567000");
        assert_eq!(ok("9007199254740993"), "9007199254740992");
        assert_eq!(ok("0.30000000000000004"), "0.30000000000000004");
        assert_eq!(ok("[1e400,-1e400,1e-400]"), "[null,null,0]");
        assert_eq!(
            ok(r#""\ud800\ud83d\ude00\udc00""#),
            "\"\u{fffd}😀\u{fffd}\""
        );
        assert_eq!(ok(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(
            ok(r#"{"b":1,"2":2,"1":3,"4294967295":4,"01":5,"0":6}"#),
            r#"{"0":6,"1":3,"2":2,"b":1,"4294967295":4,"01":5}"#
        );
    }

    #[test]
    fn nesting_is_bounded_not_overflowing() {
        let ok_depth = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_js_json(&ok_depth).is_ok());
        let objects = "{\"a\":".repeat(MAX_DEPTH) + "1" + &"}".repeat(MAX_DEPTH);
        assert!(parse_js_json(&objects).is_ok());
        let deep = 1_000_000;
        let too_deep = "[".repeat(deep) + &"]".repeat(deep);
        assert_eq!(err(&too_deep), TOO_DEEP_MESSAGE);
        let one_more = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(err(&one_more), TOO_DEEP_MESSAGE);
        // A syntax error anywhere still wins, as it would in Node.
        let broken = "[".repeat(deep) + &"]".repeat(deep - 1) + "}";
        assert!(err(&broken).starts_with("Expected ',' or ']' after array element"));
        let unclosed = "[".repeat(deep);
        assert_eq!(err(&unclosed), "Unexpected end of JSON input");
    }
}
