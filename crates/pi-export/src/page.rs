//! The page around the entries: document head with its Content-Security-Policy, the session
//! header with totals, the active branch, and the other branches folded at their fork points.

use crate::ExportOptions;
use crate::entry::{Context, push_entry};
use crate::escape::push_escaped;
use crate::parts::{excerpt, format_tokens, readable_timestamp};
use crate::system::push_prompt;
use crate::tree::{Layout, Segment, layout};
use pi_protocol::content::{AssistantBlock, StringOrBlocks};
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::{SessionEntry, SessionHeader};

/// Our stylesheet; the only non-content text in the page besides the markup.
const STYLE: &str = include_str!("../template/page.css");

/// No script runs (there is none), nothing loads but inline data images, and forms or a
/// `<base>` cannot redirect anything.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

pub fn render_page(
    header: &SessionHeader,
    entries: &[SessionEntry],
    leaf: Option<&str>,
    options: &ExportOptions,
) -> String {
    let layout = layout(entries, leaf);
    let ctx = Context::new(entries);
    let name = session_name(entries);
    let mut out = String::with_capacity(STYLE.len() + entries.len() * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n"
    ));
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<meta name=\"generator\" content=\"pi\">\n<title>");
    match &name {
        Some(name) => push_escaped(&mut out, &format!("{name} · pi session")),
        None if header.id.is_empty() => out.push_str("pi session"),
        None => push_escaped(&mut out, &format!("pi session {}", header.id)),
    }
    out.push_str("</title>\n<style>\n");
    out.push_str(STYLE);
    out.push_str(&crate::theme::css(&options.theme));
    out.push_str("</style>\n</head>\n<body>\n<div class=\"page\">\n");

    push_header(&mut out, header, entries, name.as_deref(), &layout);
    let has_system = entries.iter().any(
        |e| matches!(e, SessionEntry::Message(m) if matches!(*m.message, AgentMessage::System(_))),
    );
    // Sessions that record their prompt show it in place; older ones get the exporter's.
    if !has_system && (options.system_prompt.is_some() || !options.tools.is_empty()) {
        out.push_str("<div class=\"msg system\">");
        let prompt = options.system_prompt.as_deref().unwrap_or("");
        push_prompt(&mut out, "System prompt", prompt, &options.tools);
        out.push_str("</div>\n");
    }

    out.push_str("<main class=\"conversation\">\n");
    push_branches(&mut out, &ctx, &layout, None);
    for &index in &layout.path {
        push_entry(&mut out, &ctx, index);
        push_branches(&mut out, &ctx, &layout, Some(index));
    }
    if entries.is_empty() {
        out.push_str("<p class=\"empty\">This session has no entries yet.</p>\n");
    }
    out.push_str("</main>\n<footer>Exported from a pi session file. This page runs no scripts and loads nothing from the network.</footer>\n");
    out.push_str("</div>\n</body>\n</html>\n");
    out
}

/// The latest `session_info` name (an entry without a name clears it).
fn session_name(entries: &[SessionEntry]) -> Option<String> {
    let mut name = None;
    for entry in entries {
        if let SessionEntry::SessionInfo(info) = entry {
            name = info.name.clone().filter(|n| !n.trim().is_empty());
        }
    }
    name
}

fn push_header(
    out: &mut String,
    header: &SessionHeader,
    entries: &[SessionEntry],
    name: Option<&str>,
    layout: &Layout,
) {
    let stats = Stats::of(entries);
    out.push_str("<header class=\"page-head\">\n<p class=\"kicker\">pi session</p>\n<h1>");
    push_escaped(out, name.unwrap_or("Session export"));
    out.push_str("</h1>\n<dl class=\"facts\">\n");
    let mut fact = |label: &str, value: &str, code: bool| {
        if value.is_empty() {
            return;
        }
        out.push_str("<div><dt>");
        push_escaped(out, label);
        out.push_str(if code { "</dt><dd><code>" } else { "</dt><dd>" });
        push_escaped(out, value);
        out.push_str(if code {
            "</code></dd></div>\n"
        } else {
            "</dd></div>\n"
        });
    };
    fact("Session", &header.id, true);
    fact("Started", &readable_timestamp(&header.timestamp), false);
    fact("Directory", &header.cwd, true);
    fact(
        "Forked from",
        header.parent_session.as_deref().unwrap_or(""),
        true,
    );
    fact("Models", &stats.models.join(", "), false);
    fact("Messages", &stats.messages(), false);
    fact("Tool calls", &stats.tool_calls.to_string(), false);
    fact("Tokens", &stats.tokens(), false);
    fact("Cost", &format!("${:.3}", stats.cost), false);
    let branches = match (layout.other_branch_count(), layout.path.is_empty()) {
        (0, _) => String::new(),
        (1, false) => "the active branch is shown; 1 other branch is folded where it forks".into(),
        (n, false) => {
            format!("the active branch is shown; {n} other branches are folded where they fork")
        }
        (1, true) => "no active branch; 1 branch is folded below".into(),
        (n, true) => format!("no active branch; {n} branches are folded below"),
    };
    fact("Branches", &branches, false);
    out.push_str("</dl>\n</header>\n");
}

/// Other branches are folded, not dropped: the reader sees the conversation as it stands and
/// can still open what was tried and abandoned (Pi's page offers the same via its tree view).
fn push_branches(out: &mut String, ctx: &Context, layout: &Layout, anchor: Option<usize>) {
    for segment in layout.branches.get(&anchor).into_iter().flatten() {
        push_segment(out, ctx, segment);
    }
}

fn push_segment(out: &mut String, ctx: &Context, segment: &Segment) {
    let n = segment.entries.len();
    let mut summary = if segment.nested {
        "Other branch, forking off the one above".to_string()
    } else if segment.fork.is_none() {
        "Other branch from the start".to_string()
    } else {
        "Other branch from here".to_string()
    };
    summary.push_str(&format!(
        " · {n} {}",
        if n == 1 { "entry" } else { "entries" }
    ));
    let first_text = segment
        .entries
        .iter()
        .find_map(|&i| entry_text(&ctx.entries[i]));
    out.push_str("<details class=\"branch\"><summary>");
    push_escaped(out, &summary);
    if let Some(text) = first_text {
        out.push_str(" · <q>");
        push_escaped(out, &excerpt(&text, 80));
        out.push_str("</q>");
    }
    out.push_str("</summary>\n<div class=\"branch-body\">\n");
    for &i in &segment.entries {
        push_entry(out, ctx, i);
    }
    out.push_str("</div></details>\n");
}

/// The text a branch opens with, for its folded summary.
fn entry_text(entry: &SessionEntry) -> Option<String> {
    let SessionEntry::Message(m) = entry else {
        return None;
    };
    let text = match &*m.message {
        AgentMessage::User(u) => match &u.content {
            StringOrBlocks::Text(t) => t.clone(),
            StringOrBlocks::Blocks(b) => crate::parts::blocks_text(b),
        },
        AgentMessage::Assistant(a) => a
            .content
            .iter()
            .find_map(|b| match b {
                AssistantBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// Totals over every entry of the file, all branches included (as Pi's header counts).
#[derive(Default)]
struct Stats {
    user: usize,
    assistant: usize,
    tool_results: usize,
    custom: usize,
    compactions: usize,
    branch_summaries: usize,
    tool_calls: usize,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    models: Vec<String>,
}

impl Stats {
    fn of(entries: &[SessionEntry]) -> Stats {
        let mut s = Stats::default();
        for entry in entries {
            match entry {
                SessionEntry::Message(m) => match &*m.message {
                    AgentMessage::User(_) => s.user += 1,
                    AgentMessage::ToolResult(_) => s.tool_results += 1,
                    AgentMessage::Assistant(a) => {
                        s.assistant += 1;
                        let model = format!("{}/{}", a.provider, a.model);
                        if !s.models.contains(&model) {
                            s.models.push(model);
                        }
                        s.input += a.usage.input;
                        s.output += a.usage.output;
                        s.cache_read += a.usage.cache_read;
                        s.cache_write += a.usage.cache_write;
                        s.cost += a.usage.cost.total;
                        s.tool_calls += a
                            .content
                            .iter()
                            .filter(|b| matches!(b, AssistantBlock::ToolCall(_)))
                            .count();
                    }
                    _ => {}
                },
                SessionEntry::Compaction(_) => s.compactions += 1,
                SessionEntry::BranchSummary(_) => s.branch_summaries += 1,
                SessionEntry::CustomMessage(_) => s.custom += 1,
                _ => {}
            }
        }
        s
    }

    fn messages(&self) -> String {
        let parts: Vec<String> = [
            (self.user, "user"),
            (self.assistant, "assistant"),
            (self.tool_results, "tool results"),
            (self.custom, "custom"),
            (self.compactions, "compactions"),
            (self.branch_summaries, "branch summaries"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "0".to_string()
        } else {
            parts.join(", ")
        }
    }

    fn tokens(&self) -> String {
        let parts: Vec<String> = [
            (self.input, "↑"),
            (self.output, "↓"),
            (self.cache_read, "R"),
            (self.cache_write, "W"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, mark)| format!("{mark}{}", format_tokens(*n)))
        .collect();
        if parts.is_empty() {
            "0".to_string()
        } else {
            parts.join(" ")
        }
    }
}
