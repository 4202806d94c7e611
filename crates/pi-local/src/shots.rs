//! Example exchanges put before the conversation when tools are declared: two questions
//! answered in text and two requests answered with a call to one of the declared tools,
//! alternating.
//!
//! A model of a few hundred million parameters reads a tool declaration but rarely acts on
//! it. Measured with SmolLM2-135M under Pi's system prompt and the `ls` tool, the probability
//! it gives to starting a call is, without examples, about 1% on "List the files in the current
//! directory." (below plain questions at 2%); with these examples it is 10-15% on requests for
//! files and 0.2-3% on questions, jokes or poems, which the threshold of the first-token
//! decision (`samplingParams.toolThreshold`, default 0.05) separates. Larger models can do
//! without: `samplingParams.toolExamples: false`.

use crate::turn::{Role, Turn, render_call};
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};

/// Requests that read naturally for one of Pi's tools, and the one argument (if any) that
/// answers them.
struct Known {
    tool: &'static str,
    requests: [&'static str; 2],
    argument: Option<(&'static str, &'static str)>,
}

/// Tiny models copy the example's arguments; these are harmless when copied (`ls` needs none).
const KNOWN: &[Known] = &[
    Known {
        tool: "ls",
        requests: ["What is in this folder?", "Show me the files here."],
        argument: None,
    },
    Known {
        tool: "read",
        requests: ["Show me the file README.md.", "Open README.md."],
        argument: Some(("path", "README.md")),
    },
    Known {
        tool: "find",
        requests: ["Find the Markdown files.", "Which files end in .md?"],
        argument: Some(("pattern", "*.md")),
    },
    Known {
        tool: "grep",
        requests: ["Search the code for TODO.", "Where does TODO appear?"],
        argument: Some(("pattern", "TODO")),
    },
    Known {
        tool: "bash",
        requests: ["Run date to show the time.", "What does date print?"],
        argument: Some(("command", "date")),
    },
];

/// The example turns for `tools` (empty when there are none).
pub fn example_turns(tools: &[Tool]) -> Vec<Turn> {
    let Some(([first, second], call)) = example_call(tools) else {
        return Vec::new();
    };
    let turn = |role, content: &str| Turn {
        role,
        content: content.into(),
    };
    // Answers and calls alternate, so neither kind is merely "what came last".
    vec![
        turn(Role::User, "What is the capital of Italy?"),
        turn(Role::Assistant, "The capital of Italy is Rome."),
        turn(Role::User, &first),
        turn(Role::Assistant, &call),
        turn(Role::User, "Write a haiku about autumn."),
        turn(
            Role::Assistant,
            "Red leaves drift and fall,\ncool wind hums through empty trees,\nthe year breathes out slow.",
        ),
        turn(Role::User, &second),
        turn(Role::Assistant, &call),
    ]
}

/// Two requests for one of the tools, and the call that answers both.
fn example_call(tools: &[Tool]) -> Option<([String; 2], String)> {
    for known in KNOWN {
        let (name, arg) = (known.tool, known.argument);
        let Some(tool) = tools.iter().find(|t| t.name == name) else {
            continue;
        };
        // Only if that argument exists and nothing else is required.
        let props = tool.parameters.get("properties").and_then(Value::as_object);
        let required = required(&tool.parameters);
        let key = arg.map(|(k, _)| k);
        let fits = key.is_none_or(|k| props.is_some_and(|p| p.contains_key(k)));
        if fits && required.iter().all(|r| Some(r.as_str()) == key) {
            let mut args = Map::new();
            if let Some((k, v)) = arg {
                args.insert(k.into(), json!(v));
            }
            return Some((known.requests.map(String::from), render_call(name, &args)));
        }
    }
    let tool = tools.first()?;
    let args = placeholder_arguments(&tool.parameters);
    Some((
        [
            format!("Use the {} tool.", tool.name),
            format!("Call {} for me.", tool.name),
        ],
        render_call(&tool.name, &args),
    ))
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The required arguments with plain placeholder values of their types.
fn placeholder_arguments(schema: &Value) -> Map<String, Value> {
    let props = schema.get("properties").and_then(Value::as_object);
    required(schema)
        .into_iter()
        .map(|key| {
            let value = props
                .and_then(|p| p.get(&key))
                .map_or(json!("example"), placeholder);
            (key, value)
        })
        .collect()
}

fn placeholder(schema: &Value) -> Value {
    if let Some(v) = schema.get("const") {
        return v.clone();
    }
    if let Some(v) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return v.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.first().and_then(Value::as_str),
        Some(t) => t.as_str(),
        None => None,
    };
    match ty {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => Value::Object(placeholder_arguments(schema)),
        Some("null") => Value::Null,
        _ => json!("example"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "description": "", "parameters": parameters}))
            .unwrap()
    }

    #[test]
    fn a_known_tool_gets_its_natural_request() {
        let tools = [
            tool(
                "write",
                json!({"type": "object", "required": ["path", "content"]}),
            ),
            tool(
                "ls",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
        ];
        let turns = example_turns(&tools);
        assert_eq!(turns.len(), 8);
        assert_eq!(turns[2].content, "What is in this folder?");
        assert_eq!(turns[6].content, "Show me the files here.");
        assert_eq!(turns[7].content, turns[3].content);
        assert_eq!(
            turns[3].content,
            "<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>"
        );
    }

    #[test]
    fn another_tool_gets_placeholder_arguments_that_fit_its_schema() {
        let tools = [tool(
            "deploy",
            json!({"type": "object", "required": ["env", "replicas", "dry"], "properties": {
                "env": {"enum": ["staging", "prod"]}, "replicas": {"type": "integer"},
                "dry": {"type": ["boolean", "null"]}, "note": {"type": "string"}}}),
        )];
        let turns = example_turns(&tools);
        assert_eq!(turns[2].content, "Use the deploy tool.");
        assert_eq!(
            turns[3].content,
            "<tool_call>\n{\"name\": \"deploy\", \"arguments\": {\"env\": \"staging\", \"replicas\": 1, \"dry\": true}}\n</tool_call>"
        );
        assert!(example_turns(&[]).is_empty());
    }
}
