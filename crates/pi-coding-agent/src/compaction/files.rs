//! Which files the summarized part of the conversation read and changed. The lists go into the
//! compaction entry's `details` and are appended to the summary, so the model keeps knowing
//! about files whose tool calls were compacted away.

use pi_protocol::content::AssistantBlock;
use pi_protocol::message::AgentMessage;
use pi_protocol::results::CompactionDetails;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Paths seen in `read`, `write` and `edit` calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: BTreeSet<String>,
    pub written: BTreeSet<String>,
    pub edited: BTreeSet<String>,
}

impl FileOps {
    fn add(&mut self, tool: &str, args: Option<&Map<String, Value>>) {
        let Some(path) = args
            .and_then(|a| a.get("path"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            return;
        };
        let set = match tool {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_string());
    }

    /// Records the tool calls of an assistant message, or the nested calls a tool made.
    pub fn add_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant(a) => {
                for block in &a.content {
                    if let AssistantBlock::ToolCall(call) = block {
                        self.add(&call.name, Some(&call.arguments));
                    }
                }
            }
            AgentMessage::ToolResult(t) => {
                for call in t.nested_calls.iter().flat_map(|n| &n.calls) {
                    self.add(&call.name, call.arguments.as_ref());
                }
            }
            AgentMessage::Other(m)
                if m.get("role").and_then(Value::as_str) == Some("assistant") =>
            {
                let blocks = m.get("content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("toolCall")
                        && let Some(name) = block.get("name").and_then(Value::as_str)
                    {
                        self.add(name, block.get("arguments").and_then(Value::as_object));
                    }
                }
            }
            _ => {}
        }
    }

    /// Adds the lists of an earlier compaction's `details`: read files stay read, modified
    /// files count as edited.
    pub fn add_details(&mut self, details: &Value) {
        let strings = |key: &str| -> Vec<String> {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        self.read.extend(strings("readFiles"));
        self.edited.extend(strings("modifiedFiles"));
    }

    /// The final lists: files only read, and files written or edited; each sorted as
    /// JavaScript's default sort does (by UTF-16 code units).
    pub fn lists(&self) -> CompactionDetails {
        let mut modified_files: Vec<String> = self.edited.union(&self.written).cloned().collect();
        modified_files.sort_by(|a, b| js_cmp(a, b));
        let mut read_files: Vec<String> = self
            .read
            .iter()
            .filter(|f| !self.edited.contains(*f) && !self.written.contains(*f))
            .cloned()
            .collect();
        read_files.sort_by(|a, b| js_cmp(a, b));
        CompactionDetails {
            read_files,
            modified_files,
        }
    }
}

fn js_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The blocks appended to the summary (empty when both lists are).
pub fn summary_suffix(lists: &CompactionDetails) -> String {
    let mut blocks = Vec::new();
    if !lists.read_files.is_empty() {
        blocks.push(format!(
            "<read-files>\n{}\n</read-files>",
            lists.read_files.join("\n")
        ));
    }
    if !lists.modified_files.is_empty() {
        blocks.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            lists.modified_files.join("\n")
        ));
    }
    if blocks.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", blocks.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::ToolCall;
    use pi_protocol::message::AssistantMessage;
    use pi_protocol::usage::StopReason;
    use serde_json::json;

    fn calls(list: &[(&str, Value)]) -> AgentMessage {
        let mut a = AssistantMessage::new("api", "p", "m", StopReason::ToolUse, 1);
        for (i, (name, args)) in list.iter().enumerate() {
            let args = args.as_object().cloned().unwrap_or_default();
            a.content.push(AssistantBlock::ToolCall(ToolCall::new(
                format!("c{i}"),
                *name,
                args,
            )));
        }
        AgentMessage::Assistant(a)
    }

    #[test]
    fn read_only_files_exclude_modified_ones_and_lists_are_sorted() {
        let mut ops = FileOps::default();
        ops.add_message(&calls(&[
            ("read", json!({"path": "b.txt"})),
            ("read", json!({"path": "a.txt"})),
            ("read", json!({"path": "g.txt"})),
            ("write", json!({"path": "g.txt", "content": "x"})),
            ("edit", json!({"path": "c.txt"})),
            ("bash", json!({"path": "ignored"})),
            ("read", json!({"path": 3})),
        ]));
        let lists = ops.lists();
        assert_eq!(
            lists,
            CompactionDetails {
                read_files: vec!["a.txt".into(), "b.txt".into()],
                modified_files: vec!["c.txt".into(), "g.txt".into()],
            }
        );
        assert_eq!(
            summary_suffix(&lists),
            "\n\n<read-files>\na.txt\nb.txt\n</read-files>\n\n<modified-files>\nc.txt\ng.txt\n</modified-files>"
        );
        assert_eq!(
            pi_js::json::to_js_string(&lists).unwrap(),
            r#"{"readFiles":["a.txt","b.txt"],"modifiedFiles":["c.txt","g.txt"]}"#
        );
    }

    #[test]
    fn previous_details_carry_over_with_modified_as_edited() {
        let mut ops = FileOps::default();
        ops.add_details(&json!({"readFiles": ["r"], "modifiedFiles": ["m"]}));
        ops.add_message(&calls(&[("read", json!({"path": "m"}))]));
        assert_eq!(
            ops.lists(),
            CompactionDetails {
                read_files: vec!["r".into()],
                modified_files: vec!["m".into()],
            }
        );
        assert_eq!(summary_suffix(&CompactionDetails::default()), "");
    }

    #[test]
    fn sorting_follows_utf16_units() {
        // U+FF01 sorts after U+1F600 by code point but before it by UTF-16 units.
        let mut ops = FileOps::default();
        ops.add_message(&calls(&[
            ("read", json!({"path": "\u{1F600}"})),
            ("read", json!({"path": "\u{FF01}"})),
        ]));
        assert_eq!(
            ops.lists().read_files,
            vec!["\u{1F600}".to_string(), "\u{FF01}".to_string()]
        );
    }
}
