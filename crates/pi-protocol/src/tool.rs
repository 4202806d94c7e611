//! Tool declarations carried by system messages, tool results as tools return them, and the
//! record of nested tool calls.

use crate::content::UserBlock;
use crate::record::record;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// How strictly a `json_schema` constrained-sampling tool must follow its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SchemaStrictness {
    Prefer,
    Require,
}

/// OpenAI grammar encodings of a tool's argument language.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrammarVariants {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_lark: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_regex: Option<String>,
}

/// A constrained-sampling configuration object (`ConstrainedSamplingConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConstrainedSamplingConfig {
    JsonSchema { strict: SchemaStrictness },
    Grammar { variants: GrammarVariants },
}

/// A tool's `constrainedSampling`: `false` or a configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstrainedSampling {
    /// The literal `false`.
    Disabled,
    Config(ConstrainedSamplingConfig),
}

impl Serialize for ConstrainedSampling {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ConstrainedSampling::Disabled => s.serialize_bool(false),
            ConstrainedSampling::Config(c) => c.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ConstrainedSampling {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(false) => Ok(ConstrainedSampling::Disabled),
            v @ Value::Object(_) => serde_json::from_value(v)
                .map(ConstrainedSampling::Config)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected false or a constrained sampling config, got {other}"
            ))),
        }
    }
}

record! {
    /// A tool declaration (`Tool` in pi-ai): `parameters` is any JSON Schema object, shared
    /// (every request and transcript step copies the declarations; a schema is never edited in
    /// place).
    pub struct Tool {
        req name: String = "name";
        req description: String = "description";
        req parameters: Arc<Value> = "parameters";
        opt constrained_sampling: ConstrainedSampling = "constrainedSampling";
    }
}

record! {
    /// Names a tool that stops being available (`ToolReference`).
    pub struct ToolReference {
        req name: String = "name";
    }
}

record! {
    /// What a tool returns (`AgentToolResult`): the `result` of `tool_execution_end` and the
    /// `partialResult` of `tool_execution_update`. `details` and `structuredContent` are
    /// tool-defined JSON; a bash tool result has `structuredContent`
    /// `{"output","truncated","full_output_path"?,"exit_code","wall_time_seconds"}`.
    pub struct AgentToolResult {
        req content: Vec<UserBlock> = "content";
        any details: Value = "details";
        any structured_content: Value = "structuredContent";
        opt usage: Usage = "usage";
        opt is_error: bool = "isError";
        opt terminate: bool = "terminate";
    }
}

impl AgentToolResult {
    /// A result with only `content`.
    pub fn new(content: Vec<UserBlock>) -> AgentToolResult {
        AgentToolResult {
            content,
            details: None,
            structured_content: None,
            usage: None,
            is_error: None,
            terminate: None,
            rest: Default::default(),
        }
    }
}

/// How a nested tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NestedCallStatus {
    Ok,
    Error,
    /// Still running when the calling tool finished.
    Unfinished,
}

record! {
    /// One call a tool made to another tool (`NestedToolCallRecord`).
    pub struct NestedToolCallRecord {
        req id: String = "id";
        req name: String = "name";
        opt arguments: Map<String, Value> = "arguments";
        opt arguments_bytes: u64 = "argumentsBytes" via crate::num::de_u64;
        req status: NestedCallStatus = "status";
        opt duration_ms: u64 = "durationMs" via crate::num::de_u64;
        opt error: String = "error";
    }
}

record! {
    /// The bounded record of the calls a tool made (`NestedToolCalls`).
    pub struct NestedToolCalls {
        req calls: Vec<NestedToolCallRecord> = "calls";
        req complete: bool = "complete";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn tool_declarations_round_trip() {
        for s in [
            r#"{"name":"bash","description":"d","parameters":{"type":"object","required":["command"],"properties":{}},"constrainedSampling":{"type":"json_schema","strict":"prefer"}}"#,
            r#"{"name":"x","description":"","parameters":{},"constrainedSampling":false}"#,
            r#"{"name":"g","description":"","parameters":{},"constrainedSampling":{"type":"grammar","variants":{"openai_lark":"start: x"}}}"#,
        ] {
            let t: Tool = serde_json::from_str(s).unwrap();
            assert_eq!(to_js_string(&t).unwrap(), s);
        }
        let s = r#"{"content":[{"type":"text","text":"hi\n"}],"structuredContent":{"output":"hi\n","truncated":false,"exit_code":0,"wall_time_seconds":0}}"#;
        let r: AgentToolResult = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&r).unwrap(), s);
        let s = r#"{"calls":[{"id":"a/1","name":"read","argumentsBytes":9000,"status":"unfinished"}],"complete":false}"#;
        let n: NestedToolCalls = serde_json::from_str(s).unwrap();
        assert_eq!(to_js_string(&n).unwrap(), s);
    }
}
