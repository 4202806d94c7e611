//! Tool-call argument text: the final parse (with Pi's repair of sloppy string literals and its
//! `argumentsError` text) and the lenient parse of an unfinished text, which is what a response
//! cut off mid-call keeps as its `arguments`.

use pi_js::parse::parse_js_json;
use serde_json::{Map, Value};

/// Escapes raw control characters inside string literals and doubles backslashes that start no
/// valid escape (Pi's `repairJson`).
pub fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 8);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            in_string = c == '"';
            i += 1;
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.get(i + 1) {
                None => out.push_str("\\\\"),
                Some('u')
                    if chars.len() >= i + 6
                        && chars[i + 2..i + 6].iter().all(char::is_ascii_hexdigit) =>
                {
                    out.extend(&chars[i..i + 6]);
                    i += 5;
                }
                Some(&n) if matches!(n, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push('\\');
                    out.push(n);
                    i += 1;
                }
                Some(_) => out.push_str("\\\\"),
            },
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// `JSON.parse`, retried once on the repaired text when repair changes it (the retry's error
/// wins then, as in Pi's `parseJsonWithRepair`).
pub fn parse_json_with_repair(json: &str) -> Result<Value, String> {
    match parse_js_json(json) {
        Ok(v) => Ok(v),
        Err(e) => {
            let repaired = repair_json(json);
            if repaired != json {
                parse_js_json(&repaired)
            } else {
                Err(e)
            }
        }
    }
}

/// The arguments of a finished tool call: the parsed object, or `{}` with Pi's `argumentsError`
/// (`<JSON.parse message>\n\nReceived arguments:\n<text>`) when the text is not a JSON object.
pub fn parse_tool_call_arguments(text: &str) -> (Map<String, Value>, Option<String>) {
    if pi_js::trim(text).is_empty() {
        return (Map::new(), None);
    }
    let message = match parse_json_with_repair(text) {
        Ok(Value::Object(map)) => return (map, None),
        Ok(_) => "Tool arguments must be a JSON object".to_string(),
        Err(e) => e,
    };
    (
        Map::new(),
        Some(format!("{message}\n\nReceived arguments:\n{text}")),
    )
}

/// The arguments an unfinished argument text shows (Pi's streaming JSON rules): unterminated
/// strings show what arrived, open containers show their members, members whose value has not
/// started are omitted, sloppy text is read leniently. Anything but an object shows as `{}`.
pub fn partial_arguments(text: &str) -> Map<String, Value> {
    let mut p = Partial::default();
    p.run(text);
    match p.snapshot() {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Root,
    Element(usize),
    Member(String),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Key,
    Colon,
    Value,
    Comma,
}

#[derive(Debug)]
enum Container {
    Object(Map<String, Value>),
    Array(Vec<Value>),
}

#[derive(Debug)]
struct Frame {
    container: Container,
    slot: Option<Slot>,
    key: Option<String>,
    phase: Phase,
}

#[derive(Debug)]
struct OpenString {
    is_key: bool,
    slot: Option<Slot>,
    text: String,
    /// `""`, `"\\"` or `"\\u"` plus the hex digits read so far.
    escape: String,
    /// A decoded high surrogate waiting for its low half.
    high: Option<u16>,
}

#[derive(Debug, Default)]
struct Partial {
    root: Option<Value>,
    done: bool,
    stack: Vec<Frame>,
    string: Option<OpenString>,
    scalar: String,
    scalar_slot: Option<Slot>,
}

const MAX_PENDING_SCALAR: usize = 64;

impl Partial {
    fn run(&mut self, text: &str) {
        for c in text.chars() {
            if self.done {
                return;
            }
            if self.string.is_some() {
                self.string_char(c);
            } else if !self.scalar.is_empty() {
                if is_delimiter(c) {
                    self.end_scalar();
                    self.structural(c);
                } else {
                    self.scalar.push(c);
                }
            } else {
                self.structural(c);
            }
        }
    }

    fn structural(&mut self, c: char) {
        if self.done {
            return;
        }
        match c {
            ' ' | '\t' | '\n' | '\r' => {}
            '"' => self.start_string(),
            '{' => self.open(Container::Object(Map::new()), Phase::Key),
            '[' => self.open(Container::Array(Vec::new()), Phase::Value),
            '}' | ']' => self.close(),
            ':' => {
                if let Some(f) = self.stack.last_mut()
                    && matches!(f.container, Container::Object(_))
                    && f.phase == Phase::Colon
                {
                    f.phase = Phase::Value;
                }
            }
            ',' => {
                if let Some(f) = self.stack.last_mut() {
                    f.phase = match f.container {
                        Container::Array(_) => Phase::Value,
                        Container::Object(_) => Phase::Key,
                    };
                }
            }
            c => {
                self.scalar = c.to_string();
                self.scalar_slot = self.value_slot();
            }
        }
    }

    fn value_slot(&self) -> Option<Slot> {
        match self.stack.last() {
            None => self.root.is_none().then_some(Slot::Root),
            Some(f) => match &f.container {
                Container::Array(a) => Some(Slot::Element(a.len())),
                Container::Object(_) => match (&f.key, f.phase) {
                    (Some(k), Phase::Value | Phase::Colon) => Some(Slot::Member(k.clone())),
                    _ => None,
                },
            },
        }
    }

    fn start_string(&mut self) {
        let is_key = matches!(self.stack.last(), Some(f)
            if matches!(f.container, Container::Object(_)) && matches!(f.phase, Phase::Key | Phase::Comma));
        let slot = if is_key { None } else { self.value_slot() };
        if let Some(s) = &slot {
            self.place(s.clone(), Value::String(String::new()));
        }
        self.string = Some(OpenString {
            is_key,
            slot,
            text: String::new(),
            escape: String::new(),
            high: None,
        });
    }

    fn string_char(&mut self, c: char) {
        let Some(s) = self.string.as_mut() else {
            return;
        };
        if !s.escape.is_empty() {
            if s.escape == "\\" {
                let simple = match c {
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '/' => Some('/'),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    _ => None,
                };
                if let Some(d) = simple {
                    s.escape.clear();
                    push_char(s, d);
                    return;
                }
                if c == 'u' {
                    s.escape.push('u');
                    return;
                }
                // Not an escape: the backslash stays as text and `c` is read normally.
                s.escape.clear();
                push_char(s, '\\');
            } else if c.is_ascii_hexdigit() {
                s.escape.push(c);
                if s.escape.len() == 6 {
                    let unit = u16::from_str_radix(&s.escape[2..], 16).unwrap_or(0xfffd);
                    s.escape.clear();
                    push_unit(s, unit);
                }
                return;
            } else {
                let literal = std::mem::take(&mut s.escape);
                for l in literal.chars() {
                    push_char(s, l);
                }
            }
        }
        match c {
            '"' => self.end_string(),
            '\\' => s.escape.push('\\'),
            c => push_char(s, c),
        }
    }

    fn end_string(&mut self) {
        let Some(mut s) = self.string.take() else {
            return;
        };
        flush_high(&mut s);
        if s.is_key {
            if let Some(f) = self.stack.last_mut() {
                f.key = Some(s.text);
                f.phase = Phase::Colon;
            }
            return;
        }
        if let Some(slot) = s.slot {
            self.place(slot, Value::String(s.text));
        }
        self.value_ended();
    }

    fn end_scalar(&mut self) {
        let token = std::mem::take(&mut self.scalar);
        if let (Some(v), Some(slot)) = (scalar_value(&token), self.scalar_slot.take()) {
            self.place(slot, v);
        }
        self.scalar_slot = None;
        self.value_ended();
    }

    fn open(&mut self, container: Container, phase: Phase) {
        let slot = self.value_slot();
        if slot == Some(Slot::Root) {
            // Marks the root as started, so text after it has no slot.
            self.root = Some(Value::Null);
        }
        self.stack.push(Frame {
            container,
            slot,
            key: None,
            phase,
        });
    }

    fn close(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        if let Some(slot) = frame.slot {
            self.place(slot, container_value(frame.container));
        }
        self.value_ended();
    }

    fn value_ended(&mut self) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    self.done = true;
                }
            }
            Some(f) => f.phase = Phase::Comma,
        }
    }

    fn place(&mut self, slot: Slot, value: Value) {
        match slot {
            Slot::Root => self.root = Some(value),
            Slot::Element(i) => {
                if let Some(Frame {
                    container: Container::Array(a),
                    ..
                }) = self.stack.last_mut()
                {
                    if i < a.len() {
                        a[i] = value;
                    } else {
                        a.push(value);
                    }
                }
            }
            Slot::Member(k) => {
                if let Some(Frame {
                    container: Container::Object(m),
                    ..
                }) = self.stack.last_mut()
                {
                    m.insert(k, value);
                }
            }
        }
    }

    /// The value of everything read: open strings, a showing unterminated scalar and the open
    /// containers folded into their parents.
    fn snapshot(mut self) -> Option<Value> {
        if let Some(mut s) = self.string.take()
            && !s.is_key
            && let Some(slot) = s.slot.take()
        {
            flush_high(&mut s);
            self.place(slot, Value::String(s.text));
        }
        if let Some(slot) = self.scalar_slot.take()
            && self.scalar.len() <= MAX_PENDING_SCALAR
            && let Some(v) = pending_scalar_value(&self.scalar)
        {
            self.place(slot, v);
        }
        while let Some(frame) = self.stack.pop() {
            if let Some(slot) = frame.slot {
                self.place(slot, container_value(frame.container));
            }
        }
        self.root.map(js_key_order)
    }
}

fn push_char(s: &mut OpenString, c: char) {
    flush_high(s);
    s.text.push(c);
}

fn push_unit(s: &mut OpenString, unit: u16) {
    match unit {
        0xd800..=0xdbff => {
            flush_high(s);
            s.high = Some(unit);
        }
        0xdc00..=0xdfff => match s.high.take() {
            Some(h) => s.text.push_str(&String::from_utf16_lossy(&[h, unit])),
            None => s.text.push('\u{fffd}'),
        },
        u => push_char(s, char::from_u32(u32::from(u)).unwrap_or('\u{fffd}')),
    }
}

fn flush_high(s: &mut OpenString) {
    if s.high.take().is_some() {
        s.text.push('\u{fffd}');
    }
}

fn container_value(c: Container) -> Value {
    match c {
        Container::Object(m) => Value::Object(m),
        Container::Array(a) => Value::Array(a),
    }
}

fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | '\r' | ',' | ':' | '{' | '}' | '[' | ']' | '"'
    )
}

fn is_json_number(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let s = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let s = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == b.len()
}

fn scalar_value(token: &str) -> Option<Value> {
    match token {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        t if is_json_number(t) => parse_js_json(t).ok(),
        _ => None,
    }
}

fn pending_scalar_value(token: &str) -> Option<Value> {
    for (lit, v) in [
        ("true", Value::Bool(true)),
        ("false", Value::Bool(false)),
        ("null", Value::Null),
    ] {
        if lit.starts_with(token) {
            return Some(v);
        }
    }
    if is_json_number(token) {
        return parse_js_json(token).ok();
    }
    // A mantissa with an exponent marker but no exponent digits yet shows the mantissa.
    let trimmed = token.trim_end_matches(['+', '-']);
    let mantissa = trimmed.strip_suffix(['e', 'E'])?;
    (trimmed.len() + 2 > token.len() && is_json_number(mantissa))
        .then(|| parse_js_json(mantissa).ok())
        .flatten()
}

/// JavaScript property order: array-index keys first in ascending order, then the others in
/// insertion order (applied recursively).
fn js_key_order(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let (mut idx, other): (Vec<_>, Vec<_>) =
                m.into_iter().partition(|(k, _)| array_index(k).is_some());
            idx.sort_by_key(|(k, _)| array_index(k));
            Value::Object(
                idx.into_iter()
                    .chain(other)
                    .map(|(k, v)| (k, js_key_order(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(js_key_order).collect()),
        v => v,
    }
}

fn array_index(k: &str) -> Option<u32> {
    if k.is_empty() || (k.len() > 1 && k.starts_with('0')) || !k.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    k.parse::<u32>().ok().filter(|n| *n < u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn partial(text: &str) -> String {
        to_js_string(&partial_arguments(text)).unwrap()
    }

    #[test]
    fn unfinished_text_shows_what_arrived() {
        assert_eq!(partial(r#"{"path":"f"#), r#"{"path":"f"}"#);
        assert_eq!(partial(r#"{"path":"#), r#"{}"#);
        assert_eq!(
            partial(r#"{"a":1,"b":[1,2,{"c":tr"#),
            r#"{"a":1,"b":[1,2,{"c":true}]}"#
        );
        assert_eq!(partial(r#"{"n":-12.5e"#), r#"{"n":-12.5}"#);
        assert_eq!(partial(r#"{"n":-"#), r#"{}"#);
        assert_eq!(partial(r#"{"s":"a\n\u00e9\u"#), "{\"s\":\"a\\né\"}");
        assert_eq!(partial(r#"{"s":"a\d"#), r#"{"s":"a\\d"}"#);
        assert_eq!(partial(r#"{"a" 1 "b": 2"#), r#"{"a":1,"b":2}"#);
        assert_eq!(partial(r#"{"b":1,"2":2,"1":{"#), r#"{"1":{},"2":2,"b":1}"#);
        assert_eq!(partial(r#"[1,2"#), r#"{}"#);
        assert_eq!(partial(r#"{"a":1} trailing {"#), r#"{"a":1}"#);
        assert_eq!(partial(r#"{"x":"\ud83d\ude00"#), r#"{"x":"😀"}"#);
    }

    #[test]
    fn finished_text_parses_or_reports_like_pi() {
        let (args, err) = parse_tool_call_arguments(r#"{"path":"f.txt"}"#);
        assert_eq!(to_js_string(&args).unwrap(), r#"{"path":"f.txt"}"#);
        assert_eq!(err, None);
        let (args, err) = parse_tool_call_arguments(r#"{"path":"f"#);
        assert!(args.is_empty());
        assert_eq!(
            err.unwrap(),
            "Unterminated string in JSON at position 10 (line 1 column 11)\n\nReceived arguments:\n{\"path\":\"f"
        );
        let (_, err) = parse_tool_call_arguments("[1]");
        assert_eq!(
            err.unwrap(),
            "Tool arguments must be a JSON object\n\nReceived arguments:\n[1]"
        );
        assert_eq!(parse_tool_call_arguments("  "), (Map::new(), None));
        // A raw newline inside a string is repaired.
        let (args, err) = parse_tool_call_arguments("{\"a\":\"x\ny\"}");
        assert_eq!(to_js_string(&args).unwrap(), r#"{"a":"x\ny"}"#);
        assert_eq!(err, None);
    }

    #[test]
    fn repair_escapes_controls_and_lone_backslashes() {
        assert_eq!(
            repair_json("{\"a\":\"\t\\q\\u00zz\"}"),
            "{\"a\":\"\\t\\\\q\\\\u00zz\"}"
        );
        assert_eq!(repair_json("{\"a\":\"ok\\n\"}"), "{\"a\":\"ok\\n\"}");
    }
}
