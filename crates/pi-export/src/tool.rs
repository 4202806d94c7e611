//! A tool call and its result, rendered together: a head line saying what the call did (the
//! command, the path, the pattern), its arguments, and the output the model got back.

use crate::escape::push_escaped;
use crate::parts::{blocks_text, pretty_json, push_images, push_output};
use pi_protocol::content::ToolCall;
use pi_protocol::message::ToolResultMessage;
use serde_json::{Map, Value};

/// Appends the section for `call`, with `result` when one was recorded.
pub fn push_tool_call(out: &mut String, call: &ToolCall, result: Option<&ToolResultMessage>) {
    let status = match result {
        None => "pending",
        Some(r) if r.is_error => "failed",
        Some(_) => "ok",
    };
    out.push_str(&format!("<section class=\"tool {status}\" id=\"tool-"));
    push_escaped(out, &call.id);
    out.push_str("\">\n<div class=\"tool-head\"><span class=\"tool-name\">");
    push_escaped(out, &call.name);
    out.push_str("</span>");
    let args = &call.arguments;
    if let Some(target) = target(&call.name, args) {
        out.push_str("<code class=\"tool-target\">");
        push_escaped(out, &target);
        out.push_str("</code>");
    }
    out.push_str("<span class=\"tool-status\">");
    out.push_str(match status {
        "pending" => "no result",
        "failed" => "error",
        _ => "done",
    });
    if let Some(ms) = result.and_then(|r| r.duration_ms) {
        out.push_str(&format!(" · {}", duration(ms)));
    }
    out.push_str("</span></div>\n");

    if let Some(error) = &call.arguments_error {
        out.push_str("<p class=\"error\">Invalid arguments: ");
        push_escaped(out, error);
        out.push_str("</p>\n");
    }
    push_arguments(out, &call.name, args);
    if let Some(result) = result {
        push_result(out, &call.name, result);
    }
    out.push_str("</section>\n");
}

/// A tool result whose call is not in the session: shown on its own.
pub fn push_orphan_result(out: &mut String, result: &ToolResultMessage) {
    let status = if result.is_error { "failed" } else { "ok" };
    out.push_str(&format!(
        "<section class=\"tool {status}\"><div class=\"tool-head\"><span class=\"tool-name\">"
    ));
    push_escaped(out, &result.tool_name);
    out.push_str("</span><span class=\"tool-status\">result of an unrecorded call <code>");
    push_escaped(out, &result.tool_call_id);
    out.push_str("</code></span></div>\n");
    push_result(out, &result.tool_name, result);
    out.push_str("</section>\n");
}

fn str_arg<'a>(args: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
}

/// The one-line summary of what a built-in tool call does.
fn target(name: &str, args: &Map<String, Value>) -> Option<String> {
    let path = || str_arg(args, &["path", "file_path"]);
    match name {
        // bash shows its command in full below the head instead.
        "read" => {
            let path = path()?;
            let offset = args.get("offset").and_then(Value::as_u64);
            let limit = args.get("limit").and_then(Value::as_u64);
            Some(match (offset, limit) {
                (None, None) => path.to_string(),
                (start, Some(limit)) => {
                    let start = start.unwrap_or(1);
                    format!("{path}:{start}-{}", (start + limit).saturating_sub(1))
                }
                (Some(start), None) => format!("{path}:{start}"),
            })
        }
        "write" | "edit" => path().map(str::to_string),
        "ls" => Some(path().unwrap_or(".").to_string()),
        "grep" | "find" => {
            let pattern = str_arg(args, &["pattern"])?;
            Some(match path() {
                Some(p) => format!("{pattern}  in {p}"),
                None => pattern.to_string(),
            })
        }
        _ => None,
    }
}

fn push_arguments(out: &mut String, name: &str, args: &Map<String, Value>) {
    let only = |keys: &[&str]| args.keys().all(|k| keys.contains(&k.as_str()));
    match name {
        "bash" if args.get("command").is_some_and(Value::is_string) => {
            let command = str_arg(args, &["command"]).unwrap_or("");
            out.push_str("<pre class=\"command\">$ ");
            push_escaped(out, command);
            out.push_str("</pre>\n");
            if !only(&["command"]) {
                push_args_details(out, args);
            }
        }
        "write" if args.get("content").is_some_and(Value::is_string) => {
            push_output(out, str_arg(args, &["content"]).unwrap_or(""), "file");
        }
        "read" | "ls" | "grep" | "find" | "edit" => push_args_details(out, args),
        _ if args.is_empty() => {}
        _ => {
            out.push_str("<div class=\"args\">");
            push_output(out, &pretty_json(&Value::Object(args.clone())), "json");
            out.push_str("</div>\n");
        }
    }
}

/// Arguments the head line already summarises, folded away but still there.
fn push_args_details(out: &mut String, args: &Map<String, Value>) {
    out.push_str("<details class=\"args\"><summary>arguments</summary><pre class=\"json\">");
    push_escaped(out, &pretty_json(&Value::Object(args.clone())));
    out.push_str("</pre></details>\n");
}

fn push_result(out: &mut String, name: &str, result: &ToolResultMessage) {
    let diff = (name == "edit")
        .then(|| result.details.as_ref()?.get("diff")?.as_str())
        .flatten();
    let class = if result.is_error {
        "output error-output"
    } else {
        "output"
    };
    if let Some(diff) = diff.filter(|_| !result.is_error) {
        push_diff(out, diff);
    } else {
        let text = blocks_text(&result.content);
        if !text.trim().is_empty() {
            push_output(out, &text, class);
        }
    }
    push_images(out, &result.content);
    if let Some(nested) = &result.nested_calls {
        let mut lines = Vec::new();
        for call in &nested.calls {
            let args = match (&call.arguments, call.arguments_bytes) {
                (Some(a), _) => Value::Object(a.clone()).to_string(),
                (None, Some(bytes)) => format!("[arguments omitted, {bytes} bytes]"),
                (None, None) => String::new(),
            };
            let mark = match call.status {
                pi_protocol::tool::NestedCallStatus::Ok => "✓",
                pi_protocol::tool::NestedCallStatus::Error => "✗",
                pi_protocol::tool::NestedCallStatus::Unfinished => "…",
            };
            lines.push(format!("{mark} {} {args}", call.name));
            if let Some(error) = &call.error {
                lines.push(format!("    {}", error.replace('\n', "\n    ")));
            }
        }
        let incomplete = if nested.complete {
            ""
        } else {
            " (incomplete record)"
        };
        out.push_str(&format!(
            "<details class=\"args\"><summary>{} nested call{}{incomplete}</summary>",
            nested.calls.len(),
            if nested.calls.len() == 1 { "" } else { "s" }
        ));
        push_output(out, &lines.join("\n"), "json");
        out.push_str("</details>\n");
    }
}

/// A unified diff with added and removed lines marked (classes only; colours are CSS).
fn push_diff(out: &mut String, diff: &str) {
    out.push_str("<pre class=\"diff\">");
    for line in diff.split('\n') {
        let class = if line.starts_with("+++ ") || line.starts_with("--- ") {
            "file"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            match line.as_bytes().first() {
                Some(b'+') => "add",
                Some(b'-') => "del",
                _ => "ctx",
            }
        };
        out.push_str(&format!("<span class=\"{class}\">"));
        push_escaped(out, line);
        out.push_str("\n</span>");
    }
    out.push_str("</pre>\n");
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(json: &str) -> ToolCall {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn read_calls_summarise_their_range() {
        let c = call(
            r#"{"type":"toolCall","id":"1","name":"read","arguments":{"path":"src/<a>.rs","offset":10,"limit":5}}"#,
        );
        let mut out = String::new();
        push_tool_call(&mut out, &c, None);
        assert!(
            out.contains("<code class=\"tool-target\">src/&lt;a&gt;.rs:10-14</code>"),
            "{out}"
        );
        assert!(out.contains("<section class=\"tool pending\" id=\"tool-1\">"));
    }

    #[test]
    fn unknown_tools_show_escaped_json_arguments() {
        let c = call(
            r#"{"type":"toolCall","id":"x\"><script>","name":"<b>","arguments":{"q":"</pre><script>"}}"#,
        );
        let mut out = String::new();
        push_tool_call(&mut out, &c, None);
        assert!(!out.contains("<script>") && !out.contains("<b>"), "{out}");
        assert!(out.contains("id=\"tool-x&quot;&gt;&lt;script&gt;\""));
        assert!(out.contains("&quot;q&quot;: &quot;&lt;/pre&gt;&lt;script&gt;&quot;"));
    }
}
