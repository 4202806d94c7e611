//! An MCP server tool as an agent tool: `mcp__<server>__<tool>` with the server's input schema,
//! its `CallToolResult` turned into model content (text over 20 KB cut in the middle, the full
//! text in a temp file), the whole result kept as `structuredContent` for scripts.

use crate::connection::Connection;
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{ImageContent, TextContent, UserBlock};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Model-facing text beyond this is cut in the middle.
pub const MCP_OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// Finds the connection a call needs, or Pi's error for why there is none.
pub trait ConnectionSource: Send + Sync {
    fn connection_for(&self, server: &str, tool: &str) -> Result<Arc<Connection>, String>;
    /// Whether `read_mcp_resource` can read this server's resources.
    fn readable_resources(&self, server: &str) -> bool;
}

pub struct McpTool {
    pub server: String,
    pub tool: String,
    declaration: Tool,
    source: Arc<dyn ConnectionSource>,
}

/// The input schema as an object schema with `properties` (other keywords kept in place).
pub fn normalize_input_schema(schema: &Value) -> Value {
    let mut out = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if !out.contains_key("type") {
        out.insert("type".into(), json!("object"));
    }
    if !out.contains_key("properties") {
        out.insert("properties".into(), json!({}));
    }
    Value::Object(out)
}

/// The description the model reads: the server's, else the title, else a generated one.
pub fn tool_description(server: &str, tool: &Value) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .map(pi_js::trim)
        .filter(|d| !d.is_empty());
    let title = tool
        .get("title")
        .or_else(|| tool.pointer("/annotations/title"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    description
        .or(title)
        .map(str::to_string)
        .unwrap_or_else(|| format!("MCP tool {name} from server {server}"))
}

impl McpTool {
    pub fn new(
        name: String,
        server: &str,
        tool: &Value,
        source: Arc<dyn ConnectionSource>,
    ) -> McpTool {
        let tool_name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        McpTool {
            declaration: Tool {
                name,
                description: tool_description(server, tool),
                parameters: normalize_input_schema(tool.get("inputSchema").unwrap_or(&Value::Null))
                    .into(),
                constrained_sampling: None,
                rest: Default::default(),
            },
            server: server.to_string(),
            tool: tool_name,
            source,
        }
    }
}

impl AgentTool for McpTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, inv: ToolInvocation) -> ToolFuture {
        let (server, tool, source) = (
            self.server.clone(),
            self.tool.clone(),
            Arc::clone(&self.source),
        );
        Box::pin(async move {
            let conn = source.connection_for(&server, &tool).map_err(ToolError)?;
            let updates = inv.updates.clone();
            let (s, t) = (server.clone(), tool.clone());
            let on_progress: Arc<dyn Fn(&Value) + Send + Sync> = Arc::new(move |p: &Value| {
                let total = p
                    .get("total")
                    .map(|t| format!("/{}", js_number(t)))
                    .unwrap_or_default();
                let text = p
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        format!(
                            "Progress {}{total}",
                            js_number(p.get("progress").unwrap_or(&Value::Null))
                        )
                    });
                let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
                r.details = Some(json!({"server": s, "tool": t}));
                updates(r);
            });
            let args = Value::Object(inv.args);
            let result = conn
                .call_tool(&tool, args, &inv.cancel, Some(on_progress))
                .await
                .map_err(ToolError)?;
            let readable = source.readable_resources(&server);
            Ok(convert_result(&server, &tool, result, readable))
        })
    }
}

fn js_number(v: &Value) -> String {
    match v.as_f64() {
        Some(f) => pi_js::number_to_string(f),
        None => v.to_string(),
    }
}

/// One content block as the model sees it (Pi's `toLlmContent` plus resource links).
fn block_to_content(server: &str, block: &Value, readable: bool) -> UserBlock {
    let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
    let text = |t: String| UserBlock::Text(TextContent::new(t));
    match s("type") {
        "text" => text(s("text").to_string()),
        "image" => UserBlock::Image(ImageContent {
            data: s("data").into(),
            mime_type: s("mimeType").into(),
        }),
        "audio" => text(format!("[audio {} omitted]", s("mimeType"))),
        "resource_link" => {
            let mut details = Vec::new();
            if let Some(m) = block.get("mimeType").and_then(Value::as_str) {
                details.push(m.to_string());
            }
            if let Some(size) = block.get("size").and_then(Value::as_u64) {
                details.push(format_size(size));
            }
            let read = if readable {
                format!(". Read it with read_mcp_resource (server \"{server}\")")
            } else {
                String::new()
            };
            let description = block
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let title = block
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or(s("name"));
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" ({})", details.join(", "))
            };
            text(format!(
                "[Resource {} \"{title}\"{details}{description}{read}]",
                s("uri")
            ))
        }
        "resource" => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let rs = |k: &str| r.get(k).and_then(Value::as_str);
            if let Some(t) = rs("text") {
                return text(t.to_string());
            }
            let mime = rs("mimeType");
            if mime.is_some_and(|m| m.starts_with("image/")) {
                return UserBlock::Image(ImageContent {
                    data: rs("blob").unwrap_or("").into(),
                    mime_type: mime.unwrap_or("").into(),
                });
            }
            text(format!(
                "[binary resource {} ({}) omitted]",
                rs("uri").unwrap_or(""),
                mime.unwrap_or("unknown type")
            ))
        }
        other => text(format!("[unsupported MCP content {other}]")),
    }
}

/// Pi's `formatSize`.
pub fn format_size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// A `CallToolResult` as a tool result: model content, `details {server, tool}`, the result
/// without `_meta` as `structuredContent`, and `isError` results as error results.
pub fn convert_result(server: &str, tool: &str, result: Value, readable: bool) -> AgentToolResult {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut content: Vec<UserBlock> = blocks
        .iter()
        .map(|b| block_to_content(server, b, readable))
        .collect();
    if content.is_empty()
        && let Some(sc) = result.get("structuredContent")
    {
        let text = pi_js::json::to_js_string_pretty(sc).unwrap_or_default();
        content.push(UserBlock::Text(TextContent::new(text)));
    }
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    let all_text: String = content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if is_error && all_text.is_empty() {
        content.push(UserBlock::Text(TextContent::new(format!(
            "MCP tool {server}/{tool} returned an error"
        ))));
    }
    let (content, full_path) = limit_content(content);
    let mut details = json!({"server": server, "tool": tool});
    if let Some(p) = full_path {
        details["fullOutputPath"] = json!(p);
    }
    let mut script = match result {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    script.remove("_meta");
    let mut out = AgentToolResult::new(content);
    out.details = Some(details);
    out.structured_content = Some(Value::Object(script));
    if is_error {
        out.is_error = Some(true);
    }
    out
}

/// Text beyond [`MCP_OUTPUT_MAX_BYTES`] becomes one block with its middle cut out and the full
/// text saved to a temp file; images follow it.
fn limit_content(content: Vec<UserBlock>) -> (Vec<UserBlock>, Option<String>) {
    let combined: String = content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let Some((cut, total_bytes, total_lines)) = truncate_middle(&combined, MCP_OUTPUT_MAX_BYTES)
    else {
        return (content, None);
    };
    let (path, where_) = match write_output_file("pi-mcp", ".txt", combined.as_bytes()) {
        Ok(p) => {
            let w = format!("\n\n[Full output: {p} (read it with offset/limit)]");
            (Some(p), w)
        }
        Err(e) => (None, format!("\n\n[Could not save the full output: {e}]")),
    };
    let tokens = total_bytes.div_ceil(4);
    let text = format!(
        "Warning: truncated output (original token count: {tokens})\nTotal output lines: {total_lines}\n\n{cut}{where_}"
    );
    let mut out = vec![UserBlock::Text(TextContent::new(text))];
    out.extend(
        content
            .into_iter()
            .filter(|b| matches!(b, UserBlock::Image(_))),
    );
    (out, path)
}

/// Head and tail, half of `max` bytes each, around `…N chars truncated…`.
fn truncate_middle(text: &str, max: usize) -> Option<(String, usize, usize)> {
    let bytes = text.len();
    if bytes <= max {
        return None;
    }
    let mut head_end = max / 2;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = bytes - (max - max / 2);
    while tail_start < bytes && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = text[head_end..tail_start].chars().count();
    let lines = text.split('\n').count() - usize::from(text.ends_with('\n'));
    Some((
        format!(
            "{}…{removed} chars truncated…{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        bytes,
        lines,
    ))
}

/// A new private file `<tmp>/<prefix>-<16 hex><ext>` (Pi's `writeOutputFile`).
pub fn write_output_file(prefix: &str, ext: &str, data: &[u8]) -> Result<String, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut seed = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut seed);
    }
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    let path = std::env::temp_dir().join(format!("{prefix}-{hex}{ext}"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| e.to_string())?;
    f.write_all(data).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_structured_result_and_mark_errors() {
        let r = convert_result(
            "s",
            "t",
            json!({"content": [], "isError": true, "_meta": {"x": 1}}),
            false,
        );
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(
            v,
            json!({"content": [{"type": "text", "text": "MCP tool s/t returned an error"}],
                "details": {"server": "s", "tool": "t"},
                "structuredContent": {"content": [], "isError": true}, "isError": true})
        );
        let r = convert_result(
            "s",
            "t",
            json!({"content": [], "structuredContent": {"a": 1}}),
            false,
        );
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["content"][0]["text"], json!("{\n  \"a\": 1\n}"));
    }

    #[test]
    fn long_text_is_cut_in_the_middle_and_saved() {
        let long = "x".repeat(30_000);
        let r = convert_result(
            "s",
            "t",
            json!({"content": [{"type": "text", "text": long}]}),
            false,
        );
        let v = serde_json::to_value(&r).unwrap_or_default();
        let text = v["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.starts_with(
            "Warning: truncated output (original token count: 7500)\nTotal output lines: 1\n\n"
        ));
        assert!(text.contains("…9520 chars truncated…"), "{text}");
        let path = v["details"]["fullOutputPath"].as_str().unwrap_or("");
        assert_eq!(
            std::fs::read_to_string(path).map(|s| s.len()).unwrap_or(0),
            30_000
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn schemas_become_object_schemas() {
        assert_eq!(
            normalize_input_schema(&json!({"type": "object"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            normalize_input_schema(&json!({"properties": {"a": {}}, "required": ["a"]})),
            json!({"properties": {"a": {}}, "required": ["a"], "type": "object"})
        );
    }
}
