//! Pure helpers of `@earendil-works/pi-coding-agent` that extensions import and the host routes
//! to pi (the sync `js` call): pi answers with its own implementation, so an extension gets the
//! same result the runtime would compute.

use crate::resources::yaml::Yaml;
use pi_protocol::message::AgentMessage;
use serde_json::{Map, Value, json};

/// The helpers pi provides; others fail with a clear message naming the function.
pub(crate) fn call(function: &str, args: &[Value]) -> Result<Value, String> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    let text = |i: usize| arg(i).as_str().unwrap_or("").to_string();
    match function {
        "parseFrontmatter" => {
            let parsed =
                crate::resources::frontmatter::parse(&text(0)).map_err(|e| e.to_string())?;
            Ok(json!({ "frontmatter": yaml_value(&parsed.frontmatter), "body": parsed.body }))
        }
        "stripFrontmatter" => crate::resources::frontmatter::strip(&text(0))
            .map(Value::String)
            .map_err(|e| e.to_string()),
        "convertToLlm" => {
            let messages = messages(arg(0))?;
            let shared: Vec<_> = messages
                .into_iter()
                .map(pi_protocol::SharedMessage::new)
                .collect();
            serde_json::to_value(crate::messages::convert_to_llm(&shared))
                .map_err(|e| e.to_string())
        }
        "serializeConversation" => {
            let messages = messages(arg(0))?;
            Ok(json!(crate::compaction::serialize_conversation(&messages)))
        }
        "estimateTokens" => {
            let message: AgentMessage =
                serde_json::from_value(arg(0)).map_err(|e| format!("invalid message: {e}"))?;
            Ok(json!(crate::compaction::estimate_tokens(&message)))
        }
        "calculateContextTokens" => {
            let usage =
                serde_json::from_value(arg(0)).map_err(|e| format!("invalid usage: {e}"))?;
            Ok(json!(crate::compaction::calculate_context_tokens(&usage)))
        }
        "shouldCompact" => {
            let settings = arg(2);
            let tokens = arg(0).as_u64().unwrap_or(0);
            let window = arg(1).as_u64().unwrap_or(0);
            let enabled = settings
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let reserve = settings
                .get("reserveTokens")
                .and_then(Value::as_u64)
                .unwrap_or(16_384);
            Ok(json!(crate::compaction::should_compact(
                tokens, window, enabled, reserve
            )))
        }
        other => Err(format!(
            "pi in Rust does not provide `{other}` to extensions"
        )),
    }
}

fn messages(value: Value) -> Result<Vec<AgentMessage>, String> {
    serde_json::from_value(value).map_err(|e| format!("invalid messages: {e}"))
}

/// A YAML value as JSON (what Pi's `yaml` package hands out).
fn yaml_value(y: &Yaml) -> Value {
    match y {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => json!(b),
        Yaml::Number(n) => pi_js::json::js_number_value(*n),
        Yaml::String(s) => json!(s),
        Yaml::Seq(items) => Value::Array(items.iter().map(yaml_value).collect()),
        Yaml::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), yaml_value(v)))
                .collect::<Map<String, Value>>(),
        ),
    }
}
