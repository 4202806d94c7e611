//! Replays the corpus recorded from Pi itself (tests/validate_corpus.mjs: pi-ai's
//! `validateToolArguments` over pi-schema) against `pi_schema`: for every schema and
//! argument object, the same coerced arguments or the same error text, byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_js::json::{to_js_string, to_js_string_pretty};
use pi_js::parse::parse_js_json;
use pi_protocol::tool::Tool;
use pi_schema::validate_tool_arguments;
use serde_json::{Value, json};

fn corpus() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/validate_corpus.jsonl"
    );
    std::fs::read_to_string(path).expect("the corpus fixture is readable")
}

fn tool(name: &str, parameters: &Value) -> Tool {
    serde_json::from_value(json!({ "name": name, "description": "", "parameters": parameters }))
        .expect("a tool declaration")
}

/// What Pi recorded for a case, in the form `outcome` prints.
fn expected(case: &Value, name: &str, args: &Value) -> String {
    let json = |v: &Value| to_js_string(v).expect("json");
    if let Some(Value::String(text)) = case.get("error") {
        return format!("error {text}");
    }
    if let Some(Value::String(failures)) = case.get("failures") {
        let received = to_js_string_pretty(args).expect("json");
        return format!(
            "error Validation failed for tool \"{name}\":\n{failures}\n\nReceived arguments:\n{received}"
        );
    }
    match case.get("ok") {
        // Pi hands the tool whatever value a root schema accepts; ours are always an object,
        // so a root schema that turns the arguments into another value (a root `array` schema
        // wraps them) leaves them as they came.
        Some(ok) if ok.is_object() => format!("ok {}", json(ok)),
        _ => format!("ok {}", json(args)),
    }
}

fn outcome(result: Result<serde_json::Map<String, Value>, String>) -> String {
    match result {
        Ok(map) => format!("ok {}", to_js_string(&Value::Object(map)).expect("json")),
        Err(text) => format!("error {text}"),
    }
}

#[test]
fn every_recorded_case_validates_exactly_as_pi_does() {
    let text = corpus();
    let mut lines = text.lines();
    let header = parse_js_json(lines.next().expect("a header line")).expect("JSON header");
    let schemas = header["schemas"].as_array().expect("schemas").clone();
    let mut differences = Vec::new();
    let mut total = 0;
    for line in lines {
        total += 1;
        let case = parse_js_json(line).expect("a JSON case");
        let name = case["n"].as_str().expect("name");
        let index = case["s"].as_u64().expect("schema index") as usize;
        let args_text = case["a"].as_str().expect("args");
        let args = parse_js_json(args_text).expect("JSON args");
        let arguments_error = case.get("argumentsError").and_then(Value::as_str);
        let got = outcome(validate_tool_arguments(
            &tool(name, &schemas[index]),
            args.as_object().expect("object args"),
            arguments_error,
        ));
        let want = expected(&case, name, &args);
        if got != want {
            differences.push(format!(
                "{name} (schema {index}) args {args_text}\n  want: {want}\n  got:  {got}"
            ));
        }
    }
    assert!(total > 10_000, "the corpus has only {total} cases");
    assert!(
        differences.is_empty(),
        "{} of {total} cases differ from Pi:\n\n{}",
        differences.len(),
        differences
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}
