//! One session entry as HTML: messages of every role, summaries, and the small events (model
//! and thinking-level changes, context edits, renames). Bookkeeping entries (labels, extension
//! state, usage records) render as nothing; labels show on the entry they name instead.

use crate::escape::{push_escaped, push_notes};
use crate::markdown::render_markdown;
use crate::parts::{blocks_text, pretty_json, push_images, push_output, push_time};
use crate::system::push_system;
use crate::tool::{push_orphan_result, push_tool_call};
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserContent};
use pi_protocol::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use pi_protocol::session_entry::SessionEntry;
use pi_protocol::usage::StopReason;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// What rendering one entry needs to know about the others.
pub struct Context<'a> {
    pub entries: &'a [SessionEntry],
    by_id: HashMap<&'a str, usize>,
    /// The first result recorded for each tool call id.
    results: HashMap<&'a str, &'a ToolResultMessage>,
    call_ids: HashSet<&'a str>,
    labels: HashMap<&'a str, &'a str>,
}

impl<'a> Context<'a> {
    pub fn new(entries: &'a [SessionEntry]) -> Context<'a> {
        let mut ctx = Context {
            entries,
            by_id: HashMap::new(),
            results: HashMap::new(),
            call_ids: HashSet::new(),
            labels: HashMap::new(),
        };
        for (i, entry) in entries.iter().enumerate() {
            if let Some(id) = entry.id() {
                ctx.by_id.insert(id, i);
            }
            match entry {
                SessionEntry::Message(m) => match &*m.message {
                    AgentMessage::ToolResult(r) => {
                        ctx.results.entry(r.tool_call_id.as_str()).or_insert(r);
                    }
                    AgentMessage::Assistant(a) => {
                        for block in &a.content {
                            if let AssistantBlock::ToolCall(c) = block {
                                ctx.call_ids.insert(&c.id);
                            }
                        }
                    }
                    _ => {}
                },
                SessionEntry::Label(l) => match l.label.as_deref().filter(|s| !s.is_empty()) {
                    Some(label) => {
                        ctx.labels.insert(&l.target_id, label);
                    }
                    None => {
                        ctx.labels.remove(l.target_id.as_str());
                    }
                },
                _ => {}
            }
        }
        ctx
    }

    /// Whether a system message at entry `index` is the first on its branch (then it holds
    /// the whole prompt; later ones are updates).
    fn is_leading_system(&self, index: usize) -> bool {
        let mut seen = HashSet::new();
        let mut cursor = self.entries[index].parent_id();
        while let Some(&i) = cursor.and_then(|id| self.by_id.get(id)) {
            if !seen.insert(i) {
                break;
            }
            match &self.entries[i] {
                SessionEntry::Message(m) if matches!(*m.message, AgentMessage::System(_)) => {
                    return false;
                }
                SessionEntry::Compaction(c) if c.system_message.is_some() => return false,
                _ => {}
            }
            cursor = self.entries[i].parent_id();
        }
        true
    }
}

/// Appends entry `index`.
pub fn push_entry(out: &mut String, ctx: &Context, index: usize) {
    let entry = &ctx.entries[index];
    let meta = Meta {
        id: entry.id(),
        time: entry.timestamp(),
        label: entry.id().and_then(|id| ctx.labels.get(id).copied()),
    };
    match entry {
        SessionEntry::Message(m) => push_message(out, ctx, index, &m.message, &meta),
        SessionEntry::Compaction(c) => push_compaction(out, &meta, &c.summary, c.tokens_before),
        SessionEntry::BranchSummary(b) => push_branch_summary(out, &meta, &b.summary),
        SessionEntry::CustomMessage(c) => {
            push_custom(out, &meta, &c.custom_type, &c.content, c.display);
        }
        SessionEntry::ModelChange(c) => {
            push_event(
                out,
                &meta,
                "Model",
                &format!("{}/{}", c.provider, c.model_id),
            );
        }
        SessionEntry::ThinkingLevelChange(c) => {
            push_event(out, &meta, "Thinking level", &c.thinking_level);
        }
        SessionEntry::ContextEdit(c) => {
            let what = if c.replacement.is_some() {
                "replaced"
            } else {
                "removed from context"
            };
            push_event(out, &meta, &format!("Context edit ({what})"), &c.target_id);
        }
        SessionEntry::SessionInfo(s) => match &s.name {
            Some(name) => push_event(out, &meta, "Session renamed", name),
            None => push_event(out, &meta, "Session name", "cleared"),
        },
        SessionEntry::Label(_)
        | SessionEntry::Custom(_)
        | SessionEntry::Usage(_)
        | SessionEntry::Other(_) => {}
    }
}

struct Meta<'a> {
    id: Option<&'a str>,
    time: Option<&'a str>,
    label: Option<&'a str>,
}

/// Opens `<article>` with its role line: who, extra detail (pre-escaped HTML), label, time.
fn open_article(out: &mut String, class: &str, who: &str, detail_html: &str, meta: &Meta) {
    out.push_str(&format!("<article class=\"msg {class}\""));
    if let Some(id) = meta.id {
        out.push_str(" id=\"entry-");
        push_escaped(out, id);
        out.push('"');
    }
    out.push_str(">\n<header class=\"meta\"><span class=\"who\">");
    push_escaped(out, who);
    out.push_str("</span>");
    out.push_str(detail_html);
    if let Some(label) = meta.label {
        out.push_str("<span class=\"label\">");
        push_escaped(out, label);
        out.push_str("</span>");
    }
    push_time(out, meta.time);
    out.push_str("</header>\n");
}

fn detail(text: &str) -> String {
    let mut html = String::from("<span class=\"detail\">");
    push_escaped(&mut html, text);
    html.push_str("</span>");
    html
}

fn push_message(
    out: &mut String,
    ctx: &Context,
    index: usize,
    message: &AgentMessage,
    meta: &Meta,
) {
    match message {
        AgentMessage::User(u) => {
            open_article(out, "user", "User", "", meta);
            push_user_content(out, &u.content);
            out.push_str("</article>\n");
        }
        AgentMessage::Assistant(a) => push_assistant(out, ctx, a, meta),
        AgentMessage::ToolResult(r) => {
            // Shown inside its call; only a result without a recorded call stands alone.
            if !ctx.call_ids.contains(r.tool_call_id.as_str()) {
                open_article(out, "tool-result", "Tool result", "", meta);
                push_orphan_result(out, r);
                out.push_str("</article>\n");
            }
        }
        AgentMessage::BashExecution(b) => {
            let status = match (b.cancelled, b.exit_code) {
                (true, _) => "cancelled".to_string(),
                (false, Some(0)) => "exit 0".to_string(),
                (false, Some(code)) => format!("exit {code}"),
                (false, None) => String::new(),
            };
            let failed = b.cancelled || b.exit_code.is_some_and(|c| c != 0);
            open_article(
                out,
                if failed { "shell failed" } else { "shell" },
                "Shell",
                &detail(&status),
                meta,
            );
            out.push_str("<pre class=\"command\">$ ");
            push_escaped(out, &b.command);
            out.push_str("</pre>\n");
            if !b.output.is_empty() {
                push_output(out, &b.output, "output");
            }
            let mut notes = Vec::new();
            if b.truncated {
                notes.push(match &b.full_output_path {
                    Some(p) => format!("output truncated; full output in {p}"),
                    None => "output truncated".to_string(),
                });
            }
            if b.exclude_from_context == Some(true) {
                notes.push("not sent to the model".to_string());
            }
            push_notes(out, &notes);
            out.push_str("</article>\n");
        }
        AgentMessage::Custom(c) => push_custom(out, meta, &c.custom_type, &c.content, c.display),
        AgentMessage::BranchSummary(b) => push_branch_summary(out, meta, &b.summary),
        AgentMessage::CompactionSummary(c) => {
            push_compaction(out, meta, &c.summary, c.tokens_before)
        }
        AgentMessage::System(s) => {
            open_article(out, "system", "System", "", meta);
            push_system(out, s, ctx.is_leading_system(index));
            out.push_str("</article>\n");
        }
        AgentMessage::Other(map) => {
            let role = map.get("role").and_then(Value::as_str).unwrap_or("unknown");
            open_article(out, "other", &format!("Message ({role})"), "", meta);
            out.push_str("<details class=\"args\"><summary>message as recorded</summary>");
            push_output(out, &pretty_json(&Value::Object(map.clone())), "json");
            out.push_str("</details>\n</article>\n");
        }
    }
}

/// Text as markdown, images after it; a leading `<skill …>` block (how Pi inlines an
/// invoked skill) is folded away.
fn push_user_content(out: &mut String, content: &UserContent) {
    let (text, blocks) = match content {
        StringOrBlocks::Text(t) => (t.clone(), &[][..]),
        StringOrBlocks::Blocks(b) => (blocks_text(b), b.as_slice()),
    };
    let rest = match parse_skill(&text) {
        Some((name, body, rest)) => {
            out.push_str("<details class=\"skill\"><summary>Skill: ");
            push_escaped(out, name);
            out.push_str("</summary><div class=\"md\">");
            render_markdown(out, body);
            out.push_str("</div></details>\n");
            rest
        }
        None => &text,
    };
    if !rest.trim().is_empty() {
        out.push_str("<div class=\"md\">");
        render_markdown(out, rest);
        out.push_str("</div>\n");
    }
    push_images(out, blocks);
}

/// `<skill name="…" location="…">\n…\n</skill>` then optionally `\n\n` and the user's text.
fn parse_skill(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.strip_prefix("<skill name=\"")?;
    let (name, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" location=\"")?;
    let (_location, rest) = rest.split_once("\">\n")?;
    let (body, after) = rest.split_once("\n</skill>")?;
    let user = match after {
        "" => "",
        _ => after.strip_prefix("\n\n")?,
    };
    Some((name, body, user))
}

fn push_assistant(out: &mut String, ctx: &Context, a: &AssistantMessage, meta: &Meta) {
    let mut detail_html = detail(&format!("{}/{}", a.provider, a.model));
    let u = &a.usage;
    if u.input + u.output + u.cache_read + u.cache_write > 0 {
        let mut tokens = format!(
            "↑{} ↓{}",
            crate::parts::format_tokens(u.input),
            crate::parts::format_tokens(u.output)
        );
        if u.cache_read > 0 {
            tokens.push_str(&format!(" R{}", crate::parts::format_tokens(u.cache_read)));
        }
        detail_html.push_str(&detail(&tokens));
    }
    open_article(out, "assistant", "Assistant", &detail_html, meta);
    for block in &a.content {
        match block {
            AssistantBlock::Text(t) if !t.text.trim().is_empty() => {
                out.push_str("<div class=\"md\">");
                render_markdown(out, &t.text);
                out.push_str("</div>\n");
            }
            AssistantBlock::Text(_) => {}
            AssistantBlock::Thinking(t) if t.redacted == Some(true) => {
                out.push_str(
                    "<p class=\"thinking-redacted\">Thinking (redacted by the provider)</p>\n",
                );
            }
            AssistantBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                out.push_str("<details class=\"thinking\"><summary>Thinking</summary><div class=\"thinking-text\">");
                push_escaped(out, t.thinking.trim());
                out.push_str("</div></details>\n");
            }
            AssistantBlock::Thinking(_) => {}
            AssistantBlock::ToolCall(c) => {
                push_tool_call(out, c, ctx.results.get(c.id.as_str()).copied());
            }
        }
    }
    match a.stop_reason {
        StopReason::Error => {
            out.push_str("<p class=\"error\">Error: ");
            push_escaped(out, a.error_message.as_deref().unwrap_or("Unknown error"));
            out.push_str("</p>\n");
        }
        StopReason::Aborted => out.push_str("<p class=\"error\">Aborted</p>\n"),
        StopReason::Length => {
            out.push_str("<p class=\"note-line\">Stopped at the output token limit</p>\n")
        }
        _ => {}
    }
    out.push_str("</article>\n");
}

fn push_custom(
    out: &mut String,
    meta: &Meta,
    custom_type: &str,
    content: &UserContent,
    display: bool,
) {
    let hidden = if display {
        String::new()
    } else {
        detail("hidden in the terminal")
    };
    open_article(
        out,
        "extension",
        &format!("Extension · {custom_type}"),
        &hidden,
        meta,
    );
    if display {
        push_user_content(out, content);
    } else {
        out.push_str("<details class=\"hidden-content\"><summary>content</summary>");
        push_user_content(out, content);
        out.push_str("</details>\n");
    }
    out.push_str("</article>\n");
}

fn push_branch_summary(out: &mut String, meta: &Meta, summary: &str) {
    open_article(out, "summary", "Branch summary", "", meta);
    out.push_str("<div class=\"md\">");
    render_markdown(out, summary);
    out.push_str("</div>\n</article>\n");
}

fn push_compaction(out: &mut String, meta: &Meta, summary: &str, tokens_before: u64) {
    let what = format!(
        "context of {} tokens summarised",
        group_digits(tokens_before)
    );
    open_article(out, "compaction", "Compaction", &detail(&what), meta);
    out.push_str("<details class=\"summary-text\"><summary>summary</summary><div class=\"md\">");
    render_markdown(out, summary);
    out.push_str("</div></details>\n</article>\n");
}

/// `12345` as `12,345` (Pi uses `toLocaleString`; the export must not depend on a locale).
fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn push_event(out: &mut String, meta: &Meta, what: &str, value: &str) {
    out.push_str("<div class=\"event\"");
    if let Some(id) = meta.id {
        out.push_str(" id=\"entry-");
        push_escaped(out, id);
        out.push('"');
    }
    out.push_str("><span>");
    push_escaped(out, what);
    out.push_str("</span> <code>");
    push_escaped(out, value);
    out.push_str("</code>");
    push_time(out, meta.time);
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_blocks_split_from_the_user_text() {
        assert_eq!(
            parse_skill(
                "<skill name=\"git\" location=\"/s/git.md\">\nUse git.\n</skill>\n\nCommit it"
            ),
            Some(("git", "Use git.", "Commit it"))
        );
        assert_eq!(
            parse_skill("<skill name=\"a\" location=\"b\">\nx\n</skill>"),
            Some(("a", "x", ""))
        );
        assert_eq!(parse_skill("hello"), None);
        assert_eq!(group_digits(1234567), "1,234,567");
        assert_eq!(group_digits(12), "12");
    }
}
