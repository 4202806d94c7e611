//! Golden transcripts: one normalized record per line, `<tag> <payload>`, in this order:
//!
//! ```text
//! stdout {...}                       every stdout record, in order
//! request POST /v1/... {...}         every LLM request: headers of interest and body
//! file <path>                        a file written or changed (sessions, workdir, agent dir)
//! jsonl {...} | json {...} | text "..."   its content (one `jsonl` line per JSONL record)
//! deleted <path>                     a fixture file that disappeared
//! stderr "..."                       each stderr line, only for scenarios with `"stderr": true`
//! exit 0                             how the process ended
//! ```

use std::path::Path;

use serde_json::Value;

pub fn read(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.lines().map(str::to_string).collect())
}

pub fn write(path: &Path, lines: &[String]) -> Result<(), String> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The tag of a golden line.
pub fn tag(line: &str) -> &str {
    line.split(' ').next().unwrap_or("")
}

/// Compares two transcripts; `None` when equal, else a readable account of the first difference.
pub fn compare(expected: &[String], actual: &[String]) -> Option<String> {
    let first = expected
        .iter()
        .zip(actual.iter())
        .position(|(e, a)| e != a)
        .or_else(|| (expected.len() != actual.len()).then(|| expected.len().min(actual.len())))?;
    Some(describe_difference(expected, actual, first))
}

/// Explains the difference at line index `i` (0-based).
pub fn describe_difference(expected: &[String], actual: &[String], i: usize) -> String {
    let mut out = String::new();
    let exp = expected.get(i);
    let act = actual.get(i);
    let where_ = exp
        .or(act)
        .map(|l| position_label(expected, actual, i, l))
        .unwrap_or_default();
    out.push_str(&format!(
        "first difference at golden line {} ({where_}):\n",
        i + 1
    ));
    out.push_str(&format!(
        "  expected: {}\n",
        exp.map(|l| clip(l, 600))
            .unwrap_or_else(|| "<end of transcript>".into())
    ));
    out.push_str(&format!(
        "  actual:   {}\n",
        act.map(|l| clip(l, 600))
            .unwrap_or_else(|| "<end of transcript>".into())
    ));
    if let (Some(e), Some(a)) = (exp, act) {
        let diffs = json_diff(payload(e), payload(a));
        if !diffs.is_empty() {
            out.push_str("  differing fields:\n");
            for d in diffs.iter().take(12) {
                out.push_str(&format!("    {d}\n"));
            }
            if diffs.len() > 12 {
                out.push_str(&format!("    ... and {} more\n", diffs.len() - 12));
            }
        }
    }
    out
}

fn position_label(expected: &[String], actual: &[String], i: usize, line: &str) -> String {
    let t = tag(line);
    let lines = if i < expected.len() { expected } else { actual };
    let nth = lines[..i].iter().filter(|l| tag(l) == t).count() + 1;
    format!("{t} #{nth}")
}

/// The JSON payload of a line, if it has one (the text after the last header token).
fn payload(line: &str) -> Option<Value> {
    let start = line.find(['{', '[', '"'])?;
    serde_json::from_str(&line[start..]).ok()
}

/// Paths at which two JSON values differ, with both values.
fn json_diff(e: Option<Value>, a: Option<Value>) -> Vec<String> {
    let (Some(e), Some(a)) = (e, a) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    diff_at("", &e, &a, &mut out);
    out
}

fn diff_at(path: &str, e: &Value, a: &Value, out: &mut Vec<String>) {
    match (e, a) {
        (Value::Object(em), Value::Object(am)) => {
            for (k, ev) in em {
                let p = format!("{path}/{k}");
                match am.get(k) {
                    Some(av) => diff_at(&p, ev, av, out),
                    None => out.push(format!(
                        "{p}: expected {}, missing",
                        clip(&ev.to_string(), 200)
                    )),
                }
            }
            for (k, av) in am {
                if !em.contains_key(k) {
                    out.push(format!(
                        "{path}/{k}: unexpected {}",
                        clip(&av.to_string(), 200)
                    ));
                }
            }
            let ek: Vec<_> = em.keys().filter(|k| am.contains_key(*k)).collect();
            let ak: Vec<_> = am.keys().filter(|k| em.contains_key(*k)).collect();
            if ek != ak {
                out.push(format!("{path}: key order {ek:?} != {ak:?}"));
            }
        }
        (Value::Array(ea), Value::Array(aa)) => {
            for (i, (ev, av)) in ea.iter().zip(aa.iter()).enumerate() {
                diff_at(&format!("{path}/{i}"), ev, av, out);
            }
            if ea.len() != aa.len() {
                out.push(format!(
                    "{path}: expected {} items, got {}",
                    ea.len(),
                    aa.len()
                ));
            }
        }
        (Value::String(es), Value::String(as_)) if es != as_ => diff_strings(path, es, as_, out),
        _ if e != a => out.push(format!(
            "{}: expected {}, got {}",
            if path.is_empty() { "/" } else { path },
            clip(&e.to_string(), 200),
            clip(&a.to_string(), 200)
        )),
        _ => {}
    }
}

/// Strings that hold JSON (an extension's notify text) are compared as JSON; others are shown
/// from the first character that differs, so a long text's difference is visible.
fn diff_strings(path: &str, e: &str, a: &str, out: &mut Vec<String>) {
    let parsed = |s: &str| {
        serde_json::from_str::<Value>(s)
            .ok()
            .filter(|v| v.is_object() || v.is_array())
    };
    if let (Some(ev), Some(av)) = (parsed(e), parsed(a)) {
        return diff_at(&format!("{path}(json)"), &ev, &av, out);
    }
    let at = e
        .char_indices()
        .zip(a.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or(e.len().min(a.len()));
    let from = e[..at].char_indices().rev().nth(40).map_or(0, |(i, _)| i);
    out.push(format!(
        "{}: strings differ at char {}: expected …{}, got …{}",
        if path.is_empty() { "/" } else { path },
        e[..at].chars().count(),
        clip(&Value::String(e[from..].to_string()).to_string(), 160),
        clip(
            &Value::String(a[from.min(a.len())..].to_string()).to_string(),
            160
        )
    ));
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({} chars)", s.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn equal_transcripts_have_no_difference() {
        let a = lines(&["stdout {\"type\":\"agent_start\"}", "exit 0"]);
        assert_eq!(compare(&a, &a), None);
    }

    #[test]
    fn the_first_difference_names_the_record_and_fields() {
        let e = lines(&[
            "stdout {\"type\":\"agent_start\"}",
            "stdout {\"type\":\"response\",\"success\":true,\"data\":{\"a\":1}}",
        ]);
        let a = lines(&[
            "stdout {\"type\":\"agent_start\"}",
            "stdout {\"type\":\"response\",\"success\":false,\"error\":\"x\"}",
        ]);
        let d = compare(&e, &a).unwrap();
        assert!(d.contains("golden line 2 (stdout #2)"), "{d}");
        assert!(d.contains("/success: expected true, got false"), "{d}");
        assert!(d.contains("/data: expected {\"a\":1}, missing"), "{d}");
        assert!(d.contains("/error: unexpected \"x\""), "{d}");
    }

    #[test]
    fn a_shorter_transcript_differs_at_its_end() {
        let e = lines(&["stdout {}", "exit 0"]);
        let a = lines(&["stdout {}"]);
        let d = compare(&e, &a).unwrap();
        assert!(d.contains("golden line 2 (exit #1)"), "{d}");
        assert!(d.contains("actual:   <end of transcript>"), "{d}");
    }
}
