//! The transcript's system messages: the prompt text they render to, the tool set they declare,
//! and the collapse into one leading system message for APIs without mid-conversation system
//! messages (Pi's `utils/transcript.js` and `utils/text.js`).

use pi_protocol::content::{StringOrBlocks, TextContent, UserBlock};
use pi_protocol::message::{AgentMessage, SystemMessage};
use pi_protocol::record::OrderedMap;
use pi_protocol::tool::Tool;
use std::borrow::{Borrow, Cow};

/// Text blocks joined with `sep` (a plain string as is).
pub fn content_text(content: &StringOrBlocks<TextContent>, sep: &str) -> String {
    match content {
        StringOrBlocks::Text(s) => s.clone(),
        StringOrBlocks::Blocks(b) => b
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(sep),
    }
}

/// The text blocks of a tool result (or user content) joined by newlines; images left out.
pub fn blocks_text(content: &[UserBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            UserBlock::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A system message as a complete prompt: its content, then every non-null section, the
/// non-empty parts joined by a blank line.
pub fn system_text(msg: &SystemMessage) -> String {
    let mut parts = vec![content_text(&msg.content, "\n")];
    if let Some(sections) = &msg.sections {
        parts.extend(sections.iter().filter_map(|(_, v)| v.clone()));
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// A later system message for APIs that take system messages mid-conversation.
pub fn render_system_update(msg: &SystemMessage) -> String {
    let mut parts = Vec::new();
    let text = content_text(&msg.content, "\n");
    if !text.is_empty() {
        parts.push(text);
    }
    for (name, value) in msg.sections.iter().flat_map(|s| s.iter()) {
        parts.push(match value {
            None => format!("Removed system prompt section \"{name}\"."),
            Some(v) => format!("Updated system prompt section \"{name}\":\n\n{v}"),
        });
    }
    parts.join("\n\n")
}

fn systems<M: Borrow<AgentMessage>>(messages: &[M]) -> impl Iterator<Item = &SystemMessage> {
    messages.iter().filter_map(|m| match m.borrow() {
        AgentMessage::System(s) => Some(s),
        _ => None,
    })
}

/// The tools available after replaying every system message's removals and additions.
pub fn current_tools<'a>(systems: impl IntoIterator<Item = &'a SystemMessage>) -> Vec<&'a Tool> {
    let mut tools: Vec<&Tool> = Vec::new();
    for msg in systems {
        for r in msg.tools_removed.iter().flatten() {
            tools.retain(|t| t.name != r.name);
        }
        for t in msg.tools_added.iter().flatten() {
            // A Map keeps the first insertion position on overwrite.
            match tools.iter_mut().find(|x| x.name == t.name) {
                Some(slot) => *slot = t,
                None => tools.push(t),
            }
        }
    }
    tools
}

/// The current tools of a transcript.
pub fn transcript_tools<M: Borrow<AgentMessage>>(messages: &[M]) -> Vec<&Tool> {
    current_tools(systems(messages))
}

/// The leading system message, if the transcript starts with one.
pub fn initial_system<M: Borrow<AgentMessage>>(messages: &[M]) -> Option<&SystemMessage> {
    match messages.first().map(Borrow::borrow) {
        Some(AgentMessage::System(s)) => Some(s),
        _ => None,
    }
}

/// Every system message replayed into one: contents joined by blank lines, sections patched by
/// name, the current tools.
pub fn current_system_message<M: Borrow<AgentMessage>>(messages: &[M]) -> Option<SystemMessage> {
    let mut content = Vec::new();
    let mut sections: OrderedMap<String> = OrderedMap::new();
    let mut timestamp = None;
    for msg in systems(messages) {
        timestamp.get_or_insert(msg.timestamp);
        let text = content_text(&msg.content, "\n");
        if !text.is_empty() {
            content.push(text);
        }
        for (name, value) in msg.sections.iter().flat_map(|s| s.iter()) {
            match value {
                None => {
                    sections.remove(name);
                }
                Some(v) => sections.insert(name.to_string(), v.clone()),
            }
        }
    }
    let tools = transcript_tools(messages);
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    let mut msg = SystemMessage {
        content: StringOrBlocks::Text(content.join("\n\n")),
        sections: None,
        tools_added: None,
        tools_removed: None,
        timestamp: timestamp.unwrap_or(0),
        rest: Default::default(),
    };
    if !sections.is_empty() {
        let mut s = OrderedMap::new();
        for (k, v) in sections.iter() {
            s.insert(k.to_string(), Some(v.clone()));
        }
        msg.sections = Some(s);
    }
    if !tools.is_empty() {
        msg.tools_added = Some(tools.into_iter().cloned().collect());
    }
    Some(msg)
}

/// The transcript with its system messages replaced by one leading replayed system message; the
/// other messages are borrowed.
pub fn collapse_system_messages<M: Borrow<AgentMessage>>(
    messages: &[M],
) -> Vec<Cow<'_, AgentMessage>> {
    let head = current_system_message(messages);
    head.map(|s| Cow::Owned(AgentMessage::System(s)))
        .into_iter()
        .chain(
            messages
                .iter()
                .map(Borrow::borrow)
                .filter(|m| !matches!(m, AgentMessage::System(_)))
                .map(Cow::Borrowed),
        )
        .collect()
}

/// Keeps later system messages when the model accepts them, otherwise collapses them.
pub fn resolve_transcript<M: Borrow<AgentMessage>>(
    messages: &[M],
    mid_convo_system: bool,
) -> Vec<Cow<'_, AgentMessage>> {
    if mid_convo_system {
        messages.iter().map(|m| Cow::Borrowed(m.borrow())).collect()
    } else {
        collapse_system_messages(messages)
    }
}

/// How an API can express tool changes after the first request (`resolveTranscriptTools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSupport {
    None,
    Additions,
    Changes,
}

/// The request-level tool list and how many leading system messages it covers.
pub fn resolve_transcript_tools<M: Borrow<AgentMessage>>(
    messages: &[M],
    support: ToolSupport,
) -> (Vec<&Tool>, usize) {
    let sys: Vec<&SystemMessage> = systems(messages).collect();
    match support {
        ToolSupport::None => (current_tools(sys.iter().copied()), sys.len()),
        ToolSupport::Changes => (Vec::new(), 0),
        ToolSupport::Additions => {
            let mut declared = std::collections::HashSet::new();
            let mut last: isize = -1;
            for (i, m) in sys.iter().enumerate() {
                if m.tools_removed.as_ref().is_some_and(|r| !r.is_empty()) {
                    last = i as isize;
                }
                for t in m.tools_added.iter().flatten() {
                    if !declared.insert(t.name.clone()) {
                        last = i as isize;
                    }
                }
            }
            let lead = usize::from(initial_system(messages).is_some());
            let folded = lead.max((last + 1) as usize);
            (
                current_tools(sys[..folded.min(sys.len())].iter().copied()),
                folded,
            )
        }
    }
}

/// All tool definitions the transcript declares, in first-declaration order (last definition wins).
pub fn declared_tools<M: Borrow<AgentMessage>>(messages: &[M]) -> Vec<&Tool> {
    let mut out: Vec<&Tool> = Vec::new();
    for m in systems(messages) {
        for t in m.tools_added.iter().flatten() {
            match out.iter_mut().find(|x| x.name == t.name) {
                Some(slot) => *slot = t,
                None => out.push(t),
            }
        }
    }
    out
}
