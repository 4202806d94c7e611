//! The protocol schema (`pi schema`) against what is actually sent: every stdout record and
//! every session-file line of every conformance golden — Pi 1.6.0's recordings, the hand-written
//! goldens of deviations, Pi's own `.pi.golden`s and our additions' goldens — must validate, in
//! strict mode (a key the schema does not declare is an error). So the schema cannot drift from
//! the wire.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_protocol::schema::protocol_schema;
use pi_test_support::json_schema::Validator;
use serde_json::Value;
use std::path::PathBuf;

/// Records of Pi 1.6.0 itself (`.pi.golden`) that break the protocol where Pi is broken (see
/// DEVIATIONS.md): `golden:line` and why.
const PI_DEVIATIONS: &[(&str, &str)] = &[(
    "queue_mode_invalid.pi.golden:5",
    "Pi stores and reports invalid queue modes (`steeringMode: \"bogus\"`)",
)];

/// The normalizer turns wall-clock numbers into strings; a number stands in for them again.
fn denormalize(value: &mut Value) {
    match value {
        Value::String(s) if s == "<ts>" || s == "<duration>" => *value = Value::from(1u64),
        Value::Array(items) => items.iter_mut().for_each(denormalize),
        Value::Object(map) => map.values_mut().for_each(denormalize),
        _ => {}
    }
}

/// The `data` of every `tool_approval` custom entry in `value` (custom data is open in the
/// protocol; the approvals' own shape is `ToolApprovalRecord`).
fn approval_records<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("custom")
                && map.get("customType").and_then(Value::as_str) == Some("tool_approval")
                && let Some(data) = map.get("data")
            {
                out.push(data);
            }
            map.values().for_each(|v| approval_records(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| approval_records(v, out)),
        _ => {}
    }
}

fn payload(line: &str) -> Value {
    let (_, json) = line.split_once(' ').unwrap();
    let mut value: Value = serde_json::from_str(json).unwrap();
    denormalize(&mut value);
    value
}

#[test]
fn every_golden_record_validates_against_the_schema() {
    let schema = protocol_schema();
    let validator = Validator::new(&schema);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/goldens");
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "golden"))
        .collect();
    goldens.sort();
    assert!(
        goldens.len() > 100,
        "goldens not found in {}",
        dir.display()
    );
    let (mut records, mut lines, mut failures) = (0usize, 0usize, Vec::new());
    let mut approval_count = 0usize;
    for path in &goldens {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let all: Vec<&str> = text.lines().collect();
        let mut checks: Vec<(usize, &str)> = Vec::new();
        for (n, line) in all.iter().enumerate() {
            if line.starts_with("stdout {") {
                checks.push((n, "#/$defs/StdoutRecord"));
            } else if line.starts_with("file ") && line.ends_with(".jsonl") {
                // A session file starts with its header; other JSONL fixtures are not checked.
                let body = all[n + 1..].iter().take_while(|l| l.starts_with("jsonl "));
                if all
                    .get(n + 1)
                    .is_some_and(|l| l.starts_with("jsonl {\"type\":\"session\""))
                {
                    checks.extend(
                        (n + 1..n + 1 + body.count()).map(|i| (i, "#/$defs/SessionFileLine")),
                    );
                }
            }
        }
        for (n, pointer) in checks {
            if pointer.ends_with("StdoutRecord") {
                records += 1;
            } else {
                lines += 1;
            }
            let at = format!("{name}:{}", n + 1);
            if PI_DEVIATIONS.iter().any(|(known, _)| *known == at) {
                continue;
            }
            let value = payload(all[n]);
            let mut approvals = Vec::new();
            approval_records(&value, &mut approvals);
            approval_count += approvals.len();
            let checked = std::iter::once((pointer, &value)).chain(
                approvals
                    .into_iter()
                    .map(|d| ("#/$defs/ToolApprovalRecord", d)),
            );
            for (pointer, value) in checked {
                if let Err(errors) = validator.validate(pointer, value) {
                    failures.push(format!(
                        "{at}: {}\n    {}",
                        &all[n][..all[n].len().min(200)],
                        errors.join("\n    ")
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {records} stdout records and {lines} session lines do not validate:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The additions' goldens record approvals; their data must be checked, not skipped.
    assert!(
        approval_count >= 4,
        "{approval_count} tool_approval records"
    );
    eprintln!(
        "schema: {records} stdout records and {lines} session-file lines of {} goldens validate",
        goldens.len()
    );
}
