//! The `response` record: exactly one per command, correlated by the echoed `id`.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// What a command handler produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// `success:true` with no `data` key (Pi's handler passed `undefined`).
    Ok,
    /// `success:true` with `data` (which may serialize to `null`, as for `cycle_model`).
    Data(T),
    /// `success:false` with `error`.
    Error(String),
}

/// `{id?, type:"response", command?, success, data?|error?}` in Pi's key order.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcResponse<T> {
    pub id: Option<Value>,
    /// Absent only for inputs without a usable `type` (Pi's `command: undefined`).
    pub command: Option<Value>,
    pub outcome: Outcome<T>,
}

impl<T> RpcResponse<T> {
    pub fn new(id: Option<Value>, command: &str, outcome: Outcome<T>) -> Self {
        RpcResponse {
            id,
            command: Some(Value::String(command.to_string())),
            outcome,
        }
    }
}

impl RpcResponse<Value> {
    /// The record Pi writes for a line that is not valid JSON: no `id`, `command:"parse"`.
    pub fn parse_error(message: &str) -> Self {
        RpcResponse::new(
            None,
            "parse",
            Outcome::Error(format!("Failed to parse command: {message}")),
        )
    }
}

/// The bytes of a successful response up to its `data` value: `{"id":…,"type":"response",
/// "command":…,"success":true,"data":`. A large `data` is then written straight to the output
/// and the record closed with `}` (see [`RpcResponse`] for the key order).
pub fn data_prefix(id: Option<&Value>, command: &str) -> String {
    let mut out = String::from("{");
    if let Some(id) = id {
        out.push_str("\"id\":");
        out.push_str(&pi_js::json::to_js_string(id).unwrap_or_else(|_| "null".into()));
        out.push(',');
    }
    out.push_str("\"type\":\"response\",\"command\":");
    out.push_str(&pi_js::json::to_js_string(command).unwrap_or_else(|_| "null".into()));
    out.push_str(",\"success\":true,\"data\":");
    out
}

impl<T: Serialize> Serialize for RpcResponse<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        if let Some(command) = &self.command {
            map.serialize_entry("command", command)?;
        }
        match &self.outcome {
            Outcome::Ok => map.serialize_entry("success", &true)?,
            Outcome::Data(data) => {
                map.serialize_entry("success", &true)?;
                map.serialize_entry("data", data)?;
            }
            Outcome::Error(error) => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use serde_json::json;

    #[test]
    fn data_prefix_is_the_start_of_the_record() {
        for id in [
            None,
            Some(json!("a\"b")),
            Some(json!(7)),
            Some(json!({"k": [1]})),
        ] {
            let whole = RpcResponse::new(id.clone(), "get_tree", Outcome::Data(json!([1])));
            let streamed = format!("{}[1]}}", data_prefix(id.as_ref(), "get_tree"));
            assert_eq!(streamed, to_js_string(&whole).unwrap());
        }
    }

    #[test]
    fn shapes_match_pi() {
        let ok: RpcResponse<Value> = RpcResponse::new(Some(json!("x")), "abort", Outcome::Ok);
        assert_eq!(
            to_js_string(&ok).unwrap(),
            r#"{"id":"x","type":"response","command":"abort","success":true}"#
        );
        let null = RpcResponse::new(None, "cycle_model", Outcome::Data(Value::Null));
        assert_eq!(
            to_js_string(&null).unwrap(),
            r#"{"type":"response","command":"cycle_model","success":true,"data":null}"#
        );
        let err: RpcResponse<Value> = RpcResponse::new(
            Some(json!(1)),
            "set_model",
            Outcome::Error("Model not found: a/b".into()),
        );
        assert_eq!(
            to_js_string(&err).unwrap(),
            r#"{"id":1,"type":"response","command":"set_model","success":false,"error":"Model not found: a/b"}"#
        );
        let unknown: RpcResponse<Value> = RpcResponse {
            id: None,
            command: None,
            outcome: Outcome::Error("Unknown command: undefined".into()),
        };
        assert_eq!(
            to_js_string(&unknown).unwrap(),
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#
        );
        assert_eq!(
            to_js_string(&RpcResponse::parse_error("Unexpected end of JSON input")).unwrap(),
            r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: Unexpected end of JSON input"}"#
        );
    }
}
