//! Replaying the system messages of a transcript into one: the prompt state a compaction entry
//! stores so that the compacted context still starts with the full prompt and tool loadout.
//!
//! Later `content` is appended to the earlier (joined by a blank line), `sections` are patched by
//! name (`null` removes one), tools are removed and (re)declared by name. Map semantics follow
//! JavaScript's `Map`: an updated key keeps its place, a removed and re-added key moves last.

use indexmap::IndexMap;
use pi_protocol::content::{StringOrBlocks, SystemContent};
use pi_protocol::message::{AgentMessage, SystemMessage};
use pi_protocol::record::{OrderedMap, Rest};
use pi_protocol::tool::Tool;

fn content_text(content: &SystemContent) -> String {
    match content {
        StringOrBlocks::Text(s) => s.clone(),
        StringOrBlocks::Blocks(blocks) => blocks
            .iter()
            .map(|b| b.text.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The system message equivalent to every system message of `messages` replayed in order;
/// `None` when there is neither a system message nor a tool.
pub fn current_system_message<'a>(
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> Option<SystemMessage> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: IndexMap<String, String> = IndexMap::new();
    let mut tools: IndexMap<String, Tool> = IndexMap::new();
    let mut timestamp = None;
    for m in messages {
        let AgentMessage::System(s) = m else {
            continue;
        };
        timestamp.get_or_insert(s.timestamp);
        let text = content_text(&s.content);
        if !text.is_empty() {
            content.push(text);
        }
        for (name, value) in s.sections.iter().flat_map(|sec| sec.iter()) {
            match value {
                Some(v) => {
                    sections.insert(name.to_owned(), v.clone());
                }
                None => {
                    sections.shift_remove(name);
                }
            }
        }
        for t in s.tools_removed.iter().flatten() {
            tools.shift_remove(&t.name);
        }
        for t in s.tools_added.iter().flatten() {
            tools.insert(t.name.clone(), t.clone());
        }
    }
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: StringOrBlocks::Text(content.join("\n\n")),
        sections: (!sections.is_empty())
            .then(|| OrderedMap(sections.into_iter().map(|(k, v)| (k, Some(v))).collect())),
        tools_added: (!tools.is_empty()).then(|| tools.into_values().collect()),
        tools_removed: None,
        timestamp: timestamp.unwrap_or(0),
        rest: Rest::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn sys(json: &str) -> AgentMessage {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn replays_sections_content_and_tools() {
        let msgs = [
            sys(
                r#"{"role":"system","content":"","sections":{"a":"A","b":"B"},"timestamp":5,"toolsAdded":[{"name":"read","description":"r","parameters":{}},{"name":"bash","description":"b","parameters":{}}]}"#,
            ),
            serde_json::from_str(r#"{"role":"user","content":"x","timestamp":6}"#).unwrap(),
            sys(
                r#"{"role":"system","content":"extra","sections":{"a":null,"c":"C","b":"B2"},"toolsRemoved":[{"name":"read"}],"toolsAdded":[{"name":"read","description":"r2","parameters":{}}],"timestamp":7}"#,
            ),
        ];
        let sm = current_system_message(&msgs).unwrap();
        assert_eq!(
            to_js_string(&sm).unwrap(),
            r#"{"role":"system","content":"extra","sections":{"b":"B2","c":"C"},"toolsAdded":[{"name":"bash","description":"b","parameters":{}},{"name":"read","description":"r2","parameters":{}}],"timestamp":5}"#
        );
        assert!(current_system_message(&msgs[1..2]).is_none());
    }
}
