//! What the mock answers: one [`Reply`] per request, written API-neutrally and rendered into the
//! wire format of whichever endpoint the request hit. Deserializable, so scenario files can hold
//! the same script a Rust test builds with the constructors below.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The answer to one request.
///
/// * `status` other than 200 answers with an HTTP error (`body` or a realistic provider body).
/// * `drop_connection` closes the socket without answering.
/// * `raw_sse` serves hand-built SSE frames verbatim (for wire APIs or shapes the renderer lacks).
/// * `json` answers 200 with that JSON body, not streamed (classifier endpoints, image
///   generation over chat completions).
/// * otherwise `text` (shorthand for one text step) or `stream` is rendered as a streaming answer
///   ending with `stop` and `usage`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Extra response headers (e.g. `retry-after`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub headers: Map<String, Value>,
    /// Wait this long before answering at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Do not answer (not even headers) until the named gate is opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub drop_connection: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageSpec>,
    /// Response id (`message.id` / `chunk.id`); default `msg_mock_<n>` / `chatcmpl-mock-<n>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Model name reported by the stream; default: the requested model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw_sse: Vec<RawSseEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One element of a streamed answer. Consecutive steps of the same kind extend one content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Text deltas: one string, or the exact delta split.
    Text(Chunks),
    Thinking(ThinkingStep),
    ToolCall(ToolCallStep),
    /// Pause the stream until the named gate is opened.
    Gate(String),
    DelayMs(u64),
    /// A mid-stream error event (`null` = a realistic default for the API).
    Error(Value),
    /// Close the socket here, without finishing the chunked body.
    Drop(bool),
    /// Close the current content block so that the next step of the same kind opens a new one.
    EndBlock(bool),
}

/// A single string or a list of deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Chunks {
    One(String),
    Many(Vec<String>),
}

impl Chunks {
    pub fn pieces(&self) -> Vec<String> {
        match self {
            Chunks::One(s) => vec![s.clone()],
            Chunks::Many(v) => v.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingStep {
    pub text: Chunks,
    /// Anthropic: the block signature. OpenAI chat: ignored (see `field`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// OpenAI chat: the delta field carrying reasoning (`reasoning_content` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallStep {
    pub id: String,
    pub name: String,
    /// Arguments as a JSON value; serialized compactly and split into `chunks` deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Raw argument deltas (may be invalid JSON); used instead of `args` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_text: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
}

impl ToolCallStep {
    /// The argument deltas to stream.
    pub fn arg_pieces(&self) -> Vec<String> {
        if let Some(t) = &self.args_text {
            return t.clone();
        }
        let text = match &self.args {
            Some(v) => serde_json::to_string(v).unwrap_or_default(),
            None => "{}".to_string(),
        };
        split_evenly(&text, self.chunks.unwrap_or(2).max(1))
    }
}

/// Splits on char boundaries into at most `n` non-empty pieces of similar size.
pub fn split_evenly(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let n = n.min(chars.len());
    let size = chars.len().div_ceil(n);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Token counts reported by the mock. Unset fields are 0, except `input` (10) and `output` (5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

impl UsageSpec {
    pub fn input(&self) -> u64 {
        self.input.unwrap_or(10)
    }
    pub fn output(&self) -> u64 {
        self.output.unwrap_or(5)
    }
    pub fn cache_read(&self) -> u64 {
        self.cache_read.unwrap_or(0)
    }
    pub fn cache_write(&self) -> u64 {
        self.cache_write.unwrap_or(0)
    }
    pub fn reasoning(&self) -> u64 {
        self.reasoning.unwrap_or(0)
    }
}

/// A hand-built SSE event: optional `event:` name and a `data:` payload (a string is sent as is,
/// any other JSON value compactly serialized).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSseEvent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub data: Value,
}

/// The API-neutral stop reasons; any other string is sent to the client verbatim.
pub const STOP: &str = "stop";
pub const LENGTH: &str = "length";
pub const TOOL_USE: &str = "tool_use";

impl Reply {
    /// A plain text answer.
    pub fn text(text: &str) -> Self {
        Reply {
            text: Some(text.to_string()),
            ..Reply::default()
        }
    }

    /// A streamed answer made of `steps`.
    pub fn stream(steps: Vec<Step>) -> Self {
        Reply {
            stream: steps,
            ..Reply::default()
        }
    }

    /// An HTTP error with the provider's realistic body for `status`.
    pub fn http_error(status: u16) -> Self {
        Reply {
            status: Some(status),
            ..Reply::default()
        }
    }

    pub fn with_usage(mut self, usage: UsageSpec) -> Self {
        self.usage = Some(usage);
        self
    }

    pub fn with_stop(mut self, stop: &str) -> Self {
        self.stop = Some(stop.to_string());
        self
    }

    /// The steps to render: `text` shorthand first, then `stream`.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        if let Some(t) = &self.text {
            steps.push(Step::Text(Chunks::One(t.clone())));
        }
        steps.extend(self.stream.iter().cloned());
        steps
    }

    /// The neutral stop reason: explicit, else `tool_use` when a tool call is streamed, else `stop`.
    pub fn stop_reason(&self) -> String {
        if let Some(s) = &self.stop {
            return s.clone();
        }
        if self.stream.iter().any(|s| matches!(s, Step::ToolCall(_))) {
            TOOL_USE.to_string()
        } else {
            STOP.to_string()
        }
    }
}

/// Step constructors for Rust tests.
pub fn text(t: &str) -> Step {
    Step::Text(Chunks::One(t.to_string()))
}

pub fn text_chunks(parts: &[&str]) -> Step {
    Step::Text(Chunks::Many(parts.iter().map(|s| s.to_string()).collect()))
}

pub fn thinking(t: &str, signature: &str) -> Step {
    Step::Thinking(ThinkingStep {
        text: Chunks::One(t.to_string()),
        signature: Some(signature.to_string()),
        field: None,
    })
}

pub fn tool_call(id: &str, name: &str, args: Value) -> Step {
    Step::ToolCall(ToolCallStep {
        id: id.to_string(),
        name: name.to_string(),
        args: Some(args),
        args_text: None,
        chunks: None,
    })
}

pub fn gate(name: &str) -> Step {
    Step::Gate(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scenario_json_parses_into_steps() {
        let r: Reply = serde_json::from_value(json!({
            "stream": [
                {"thinking": {"text": ["a", "b"], "signature": "sig"}},
                {"text": "hi"},
                {"gate": "g1"},
                {"tool_call": {"id": "call_1", "name": "read", "args": {"path": "a.txt"}}},
                {"drop": true}
            ],
            "usage": {"input": 7}
        }))
        .unwrap();
        assert_eq!(r.stream.len(), 5);
        assert_eq!(r.stop_reason(), TOOL_USE);
        assert_eq!(r.usage.unwrap().input(), 7);
        assert_eq!(r.usage.unwrap().output(), 5);
    }

    #[test]
    fn arguments_split_on_char_boundaries() {
        assert_eq!(split_evenly("{\"a\":1}", 2), vec!["{\"a\"", ":1}"]);
        assert_eq!(split_evenly("", 3), vec![""]);
        assert_eq!(split_evenly("ab", 5), vec!["a", "b"]);
    }
}
