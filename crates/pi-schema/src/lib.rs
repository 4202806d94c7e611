//! Tool-call argument validation as Pi does it before a tool runs: pi-ai's
//! `validateToolArguments`, which coerces the arguments towards the tool's JSON Schema and checks
//! them with `@earendil-works/pi-schema` (`compile(schema, { formats, coerce: true,
//! unresolvedRefs: "reject" }).parse(args)`).
//!
//! The error text is what the model sees as the tool result, so it is Pi's to the byte:
//!
//! ```text
//! Validation failed for tool "read":
//!   - path: missing
//!   - limit: expected number, got string
//!
//! Received arguments:
//! { …JSON.stringify(arguments, null, 2)… }
//! ```
//!
//! Where this differs from pi-schema:
//! * Types for values JSON cannot carry (`bigint`, `bytes`, `undefined`) match nothing and
//!   nothing is converted to them.
//! * Without Unicode's tables, `\p{…}` in patterns, `idn-email`, `idn-hostname` and punycode
//!   labels of `hostname` use approximate categories beyond Latin-1, and nothing is
//!   NFC-normalized; `url`, `iri` and `iri-reference` skip IDNA for non-ASCII hosts.
//! * `$dynamicRef` resolves like `$ref` (no dynamic scope).
//! * A root schema that accepts the arguments as a non-object (a root `array` schema wraps
//!   them) leaves them as they came, since tools take an object.
//! * Recursion gives up with JavaScript's "Maximum call stack size exceeded" at a fixed depth
//!   of schema evaluation, not at V8's stack limit.

mod check;
mod coerce;
mod explain;
mod formats;
mod js;
mod regex;
mod schema;
mod uri;

use pi_protocol::tool::Tool;
use schema::{Compile, STACK_OVERFLOW, Schema};
use serde_json::{Map, Value};

/// Validates and coerces the arguments of a call of `tool`: the arguments the tool runs with,
/// or the exact text of the error tool result Pi reports instead.
///
/// `arguments_error` is the tool call's `argumentsError` (arguments that could not be parsed);
/// an empty one counts as none, as in JavaScript.
pub fn validate_tool_arguments(
    tool: &Tool,
    args: &Map<String, Value>,
    arguments_error: Option<&str>,
) -> Result<Map<String, Value>, String> {
    if let Some(error) = arguments_error.filter(|e| !e.is_empty()) {
        return Err(format!(
            "Invalid arguments for tool \"{}\": {error}",
            tool.name
        ));
    }
    let value = Value::Object(args.clone());
    match parse(&tool.parameters, &value)? {
        Ok(Value::Object(coerced)) => Ok(coerced),
        // A root schema that accepts the arguments as another value (never an object schema).
        Ok(_) => Ok(args.clone()),
        Err(failures) => {
            let lines: Vec<String> = failures
                .iter()
                .map(|(path, message)| format!("  - {}: {message}", dotted_path(path)))
                .collect();
            let received = pi_js::json::to_js_string_pretty(args).unwrap_or_default();
            Err(format!(
                "Validation failed for tool \"{}\":\n{}\n\nReceived arguments:\n{received}",
                tool.name,
                lines.join("\n")
            ))
        }
    }
}

/// A validation failure: its JSON Pointer and message.
pub type Failure = (String, String);

/// Schema evaluation recurses once per nested keyword and value level. Values up to this many
/// levels deep are evaluated on the caller's stack (a Tokio worker has 2 MiB), deeper ones on a
/// thread of their own with room for every level the JSON parser admits.
const SHALLOW_NESTING: usize = 64;
const SHALLOW_MAX_DEPTH: usize = 1_000;
const DEEP_MAX_DEPTH: usize = 20_000;
const DEEP_STACK_BYTES: usize = 256 << 20;

/// pi-schema's `parse()` of `value` against `schema` with coercion: the coerced value, or the
/// failures of the coerced value. The outer `Err` is what compiling the schema (or evaluating
/// it, for a schema that recurses without end) throws.
pub fn parse(schema: &Value, value: &Value) -> Result<Result<Value, Vec<Failure>>, String> {
    if nesting(value) <= SHALLOW_NESTING {
        return parse_within(schema, value, SHALLOW_MAX_DEPTH);
    }
    std::thread::scope(|scope| {
        let deep = std::thread::Builder::new()
            .name("pi-validate".into())
            .stack_size(DEEP_STACK_BYTES)
            .spawn_scoped(scope, || parse_within(schema, value, DEEP_MAX_DEPTH));
        match deep {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: evaluate here, within the caller's stack.
            Err(_) => parse_within(schema, value, SHALLOW_MAX_DEPTH),
        }
    })
}

/// How many arrays and objects deep `value` nests.
fn nesting(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|x| (x, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|x| (x, depth + 1))),
            _ => {}
        }
    }
    deepest
}

fn parse_within(
    schema: &Value,
    value: &Value,
    max_depth: usize,
) -> Result<Result<Value, Vec<Failure>>, String> {
    let schema = Schema::new(schema, max_depth);
    Compile::run(&schema)?;
    let coerced = coerce::Coercer::new(&schema).coerce(value);
    let v = coerced.as_ref().unwrap_or(value);
    let valid = schema.check(schema.root, &schema.root_base(), v);
    let result = if valid {
        Ok(coerced.unwrap_or_else(|| value.clone()))
    } else {
        Err(schema
            .errors(v)
            .into_iter()
            .map(|f| (f.path, f.message))
            .collect())
    };
    if schema.overflowed() {
        return Err(STACK_OVERFLOW.to_string());
    }
    Ok(result)
}

/// A JSON Pointer as the dotted path the model sees: `/edits/0/oldText` is `edits.0.oldText`,
/// the value itself `root`.
fn dotted_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_string();
    }
    pointer[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(parameters: Value) -> Tool {
        serde_json::from_value(json!({
            "name": "t",
            "description": "",
            "parameters": parameters,
        }))
        .unwrap()
    }

    #[test]
    fn numeric_strings_become_numbers_and_optional_nulls_vanish() {
        let t = tool(json!({
            "type": "object",
            "required": ["path"],
            "properties": {"path": {"type": "string"}, "limit": {"type": "number"}, "offset": {"type": "number"}}
        }));
        let args = json!({"path": "a", "limit": "2", "offset": null});
        let got = validate_tool_arguments(&t, args.as_object().unwrap(), None).unwrap();
        assert_eq!(Value::Object(got), json!({"path": "a", "limit": 2}));
    }

    #[test]
    fn failures_list_dotted_paths_and_the_received_arguments() {
        let t = tool(json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object", "required": ["oldText", "newText"],
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}
                }}
            }
        }));
        let args = json!({"edits": [{"oldText": {}}]});
        let err = validate_tool_arguments(&t, args.as_object().unwrap(), None).unwrap_err();
        assert_eq!(
            err,
            "Validation failed for tool \"t\":\n  - path: missing\n  - edits.0.newText: missing\n  - edits.0.oldText: expected string, got object\n\nReceived arguments:\n{\n  \"edits\": [\n    {\n      \"oldText\": {}\n    }\n  ]\n}"
        );
    }

    #[test]
    fn deeply_nested_arguments_validate_on_their_own_stack() {
        let t = tool(json!({
            "$defs": {"json": {"anyOf": [
                {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
                {"type": "array", "items": {"$ref": "#/$defs/json"}},
                {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}}
            ]}},
            "type": "object",
            "properties": {"data": {"$ref": "#/$defs/json"}}
        }));
        let mut data = json!("leaf");
        for _ in 0..250 {
            data = json!({"a": [data]});
        }
        let args = json!({ "data": data });
        let got = validate_tool_arguments(&t, args.as_object().unwrap(), None).unwrap();
        assert_eq!(Value::Object(got), args);
    }

    #[test]
    fn a_schema_that_recurses_forever_overflows_like_javascript() {
        let t = tool(json!({"$ref": "#"}));
        assert_eq!(
            validate_tool_arguments(&t, &Map::new(), None).unwrap_err(),
            "Maximum call stack size exceeded"
        );
    }

    #[test]
    fn arguments_error_wins_unless_empty() {
        let t = tool(json!({"type": "object"}));
        let args = Map::new();
        assert_eq!(
            validate_tool_arguments(&t, &args, Some("Unexpected end")).unwrap_err(),
            "Invalid arguments for tool \"t\": Unexpected end"
        );
        assert!(validate_tool_arguments(&t, &args, Some("")).is_ok());
    }
}
