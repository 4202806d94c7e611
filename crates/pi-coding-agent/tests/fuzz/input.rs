//! The input side of RPC mode under arbitrary bytes: a generator of mutated command lines and
//! the checks one line must pass in-process (framing, `JSON.parse`, command decoding, the error
//! response). Shared by the stable test slice (`tests/fuzz_input.rs`), the process-level run
//! against the real binary, and the coverage-guided libFuzzer target (`fuzz/`), so all three
//! hold the code to the same invariants.
//!
//! The framing module is included by path by each user (it lives in the binary crate).

use pi_js::json::to_js_line;
use pi_js::parse::parse_js_json;
use pi_protocol::{Incoming, Outcome, RpcResponse, decode_command};
use serde_json::Value;

/// A small deterministic generator: runs must be reproducible from their seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Well-formed commands of every type, the starting points of mutation. Nothing in them may
/// reach outside the process's own temporary directory or the loopback (paths are relative,
/// shell commands harmless), since a mutated line can still be a valid command.
pub const SEEDS: &[&str] = &[
    r#"{"id":"1","type":"prompt","message":"hello"}"#,
    r#"{"id":2,"type":"prompt","message":"hi","images":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}"#,
    r#"{"id":"3","type":"prompt","message":"x","streamingBehavior":"steer"}"#,
    r#"{"id":"4","type":"steer","message":"go left"}"#,
    r#"{"id":"5","type":"follow_up","message":"then right"}"#,
    r#"{"id":"6","type":"abort"}"#,
    r#"{"id":"7","type":"clear_queue"}"#,
    r#"{"id":"8","type":"get_state"}"#,
    r#"{"id":"9","type":"set_model","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
    r#"{"id":"10","type":"cycle_model"}"#,
    r#"{"id":"11","type":"get_available_models"}"#,
    r#"{"id":"12","type":"set_thinking_level","level":"high"}"#,
    r#"{"id":"13","type":"cycle_thinking_level"}"#,
    r#"{"id":"14","type":"get_available_thinking_levels"}"#,
    r#"{"id":"15","type":"set_steering_mode","mode":"all"}"#,
    r#"{"id":"16","type":"set_follow_up_mode","mode":"one-at-a-time"}"#,
    r#"{"id":"17","type":"compact","customInstructions":"short"}"#,
    r#"{"id":"18","type":"set_auto_compaction","enabled":false}"#,
    r#"{"id":"19","type":"set_auto_retry","enabled":true}"#,
    r#"{"id":"20","type":"abort_retry"}"#,
    r#"{"id":"21","type":"bash","command":"true"}"#,
    r#"{"id":"22","type":"abort_bash"}"#,
    r#"{"id":"23","type":"get_session_stats"}"#,
    r#"{"id":"24","type":"get_fork_messages"}"#,
    r#"{"id":"25","type":"get_entries","since":"00000000"}"#,
    r#"{"id":"26","type":"get_tree"}"#,
    r#"{"id":"27","type":"get_last_assistant_text"}"#,
    r#"{"id":"28","type":"get_messages"}"#,
    r#"{"id":"29","type":"get_commands"}"#,
    r#"{"id":"30","type":"set_session_name","name":"n"}"#,
    r#"{"id":"31","type":"fork","entryId":"abcd1234"}"#,
    r#"{"id":"32","type":"extension_ui_response","id":"u1","value":"yes"}"#,
    r#"{"type":"extension_ui_response","id":"u2","confirmed":true}"#,
    r#"{"id":"33","type":"switch_session","sessionPath":"missing.jsonl"}"#,
    r#"{"id":"34","type":"nope"}"#,
    r#"{"id":"35","type":"new_session"}"#,
    r#"{"id":"36","type":"clone"}"#,
    r#"{"id":null,"type":"get_state","extra":[1,2,{"a":"b"}]}"#,
    r#"[1,2,3]"#,
    r#""get_state""#,
    r#"null"#,
];

/// Values that stress a decoder when put where another value was.
const ODD_VALUES: &[&str] = &[
    "null",
    "true",
    "-0",
    "1e309",
    "-1e309",
    "1e-400",
    "123456789012345678901234567890",
    "9007199254740993",
    "0.1e1",
    "[]",
    "{}",
    "\"\"",
    "\"\\ud800\"",
    "\"\\udfff\\ud800\"",
    "\"\\u0000\"",
    "\"a\\nb\"",
    "\"\u{2028}\u{2029}\"",
    "\"extension_ui_response\"",
    "[\"extension_ui_response\"]",
    "\"prompt\"",
    "{\"type\":\"prompt\"}",
];

/// Byte strings spliced in at random places.
const ODD_BYTES: &[&[u8]] = &[
    b"\0",
    b"\r",
    b"\r\r",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
    b"\\u",
    b"\\ud800",
    b"\"",
    b"\\",
    b",",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\t",
    b" ",
    "\u{feff}".as_bytes(),
    "\u{2028}".as_bytes(),
];

/// One mutated line, without its LF (an LF inside would make it two lines; `split_lf` in the
/// process-level test counts what the process really sees).
pub fn mutated_line(rng: &mut Rng) -> Vec<u8> {
    let mut line = rng.pick(SEEDS).as_bytes().to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        mutate(rng, &mut line);
    }
    line.retain(|&b| b != b'\n');
    line
}

fn mutate(rng: &mut Rng, line: &mut Vec<u8>) {
    let at = rng.below(line.len() + 1);
    match rng.below(14) {
        0 => {
            if !line.is_empty() {
                let i = rng.below(line.len());
                line[i] ^= 1 << rng.below(8);
            }
        }
        1 => line.insert(at, rng.next() as u8),
        2 => {
            let end = (at + rng.below(8)).min(line.len());
            line.drain(at..end);
        }
        3 => {
            let end = (at + rng.below(16)).min(line.len());
            let copy = line[at..end].to_vec();
            line.splice(at..at, copy);
        }
        4 | 5 => {
            let odd = rng.pick(ODD_BYTES);
            line.splice(at..at, odd.iter().copied());
        }
        // Replace one JSON value (after a colon) with an odd one: wrong types, huge numbers.
        6 | 7 => {
            if let Some(colon) = line[at..]
                .iter()
                .position(|&b| b == b':')
                .map(|p| p + at + 1)
            {
                let end = value_end(line, colon);
                let odd = rng.pick(ODD_VALUES);
                line.splice(colon..end, odd.bytes());
            }
        }
        // Deep nesting around a value, sometimes past the parser's limit.
        8 => {
            let depth = *rng.pick(&[2, 64, 511, 512, 513, 5000]);
            let (open, close) = if rng.below(2) == 0 {
                ("[".repeat(depth), "]".repeat(depth))
            } else {
                ("{\"a\":".repeat(depth), "}".repeat(depth))
            };
            if let Some(colon) = line.iter().position(|&b| b == b':').map(|p| p + 1) {
                let end = value_end(line, colon);
                let inner = line[colon..end].to_vec();
                let mut v = open.into_bytes();
                v.extend_from_slice(&inner);
                v.extend_from_slice(close.as_bytes());
                line.splice(colon..end, v);
            }
        }
        // A long string field (up to a few hundred KB; the process-level run adds longer lines).
        9 => {
            let len = *rng.pick(&[100, 4096, 65_537, 300_000]);
            let pad = format!(",\"pad\":\"{}\"", "\u{e9}x".repeat(len / 3));
            if let Some(close) = line.iter().rposition(|&b| b == b'}') {
                line.splice(close..close, pad.bytes());
            }
        }
        10 => line.truncate(at),
        // Duplicate keys: JSON.parse keeps the last.
        11 => {
            if let Some(close) = line.iter().rposition(|&b| b == b'}') {
                let dup = *rng.pick(&[
                    ",\"type\":\"get_state\"",
                    ",\"id\":\"dup\"",
                    ",\"type\":7",
                    ",\"message\":[]",
                ]);
                line.splice(close..close, dup.bytes());
            }
        }
        12 => {
            if rng.below(2) == 0 {
                line.push(b'\r');
            } else {
                line.splice(
                    0..0,
                    rng.pick(&[&b" "[..], b"\xef\xbb\xbf", b"\t", b"\r"])
                        .iter()
                        .copied(),
                );
            }
        }
        _ => {
            // Splice two seeds together.
            let other = rng.pick(SEEDS).as_bytes();
            let cut = rng.below(other.len() + 1);
            line.truncate(at);
            line.extend_from_slice(&other[cut..]);
        }
    }
}

/// Where the JSON value starting at `start` ends, roughly (to the next `,` or `}` at depth 0).
fn value_end(line: &[u8], start: usize) -> usize {
    let mut depth = 0i32;
    let mut in_str = false;
    let mut escaped = false;
    for (i, &b) in line.iter().enumerate().skip(start) {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return i,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return i,
            _ => {}
        }
    }
    line.len()
}

/// How many response records Pi 1.6.0 writes for one framed line: none for an object whose
/// `type` is exactly the string `extension_ui_response` (an answer to a dialog), one for
/// everything else (a parse error, an unknown or invalid command, or the command's answer).
/// Written from Pi's `handleInputLine`, independently of our decoder.
pub fn expected_answers(line: &str) -> usize {
    match parse_js_json(line) {
        Ok(Value::Object(map))
            if map.get("type") == Some(&Value::String("extension_ui_response".into())) =>
        {
            0
        }
        _ => 1,
    }
}

/// What our decoder makes of one framed line, and the record it answers with when the line is
/// rejected before reaching the runtime. Panics on any broken invariant.
pub fn check_line(line: &str) -> Option<String> {
    let value = match parse_js_json(line) {
        Ok(v) => v,
        Err(message) => {
            let record = to_js_line(&RpcResponse::parse_error(&message)).expect("serializes");
            check_record(&record, None);
            assert_eq!(expected_answers(line), 1);
            return Some(record);
        }
    };
    let id = value.get("id").cloned();
    match decode_command(value) {
        Incoming::ExtensionUiResponse(_) => {
            assert_eq!(
                expected_answers(line),
                0,
                "no answer for a non-dialog line: {line:.200}"
            );
            None
        }
        Incoming::Rejected(r) => {
            assert_eq!(
                expected_answers(line),
                1,
                "a dialog answer was rejected: {line:.200}"
            );
            assert_eq!(r.id, id, "the id is echoed as sent");
            let record = to_js_line(&RpcResponse::<Value> {
                id: r.id,
                command: r.command,
                outcome: Outcome::Error(r.error),
            })
            .expect("serializes");
            check_record(&record, id.as_ref());
            Some(record)
        }
        Incoming::Command { id: got, command } => {
            assert_eq!(
                expected_answers(line),
                1,
                "a dialog answer became a command: {line:.200}"
            );
            assert_eq!(got, id, "the id is kept");
            // A decoded command must name one of Pi's command types.
            assert!(pi_protocol::command::COMMAND_TYPES.contains(&command.type_name()));
            None
        }
    }
}

/// One response record: a single LF-terminated line of valid JSON that `JSON.parse` reads back
/// as a failed response carrying the id.
pub fn check_record(record: &str, id: Option<&Value>) {
    let body = record.strip_suffix('\n').expect("record ends in LF");
    assert!(!body.contains('\n'), "one record per line: {body:.200}");
    let back =
        parse_js_json(body).unwrap_or_else(|e| panic!("record is not JSON ({e}): {body:.200}"));
    assert_eq!(back["type"], "response");
    assert_eq!(back["success"], false);
    assert!(back["error"].is_string());
    if let Some(id) = id {
        // The echoed id reads back as the same value once numbers are JavaScript numbers.
        let js = pi_js::json::to_js_string(id).expect("id serializes");
        assert_eq!(
            back.get("id").map(|v| pi_js::json::to_js_string(v).ok()),
            Some(Some(js))
        );
    }
}
