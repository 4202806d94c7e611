//! System messages: the leading one holds the whole prompt and tool list; later ones patch
//! sections and tools, and are shown as updates naming what changed (as Pi's page does).

use crate::escape::{push_escaped, push_notes};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::SystemMessage;
use pi_protocol::tool::Tool;

/// Appends the folded prompt of `s`; `leading` when it is the first on its branch.
pub fn push_system(out: &mut String, s: &SystemMessage, leading: bool) {
    let instructions = match &s.content {
        StringOrBlocks::Text(t) => t.clone(),
        StringOrBlocks::Blocks(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .map(|t| t.text.as_str())
                .filter(|t| !t.is_empty())
                .collect();
            texts.join("\n")
        }
    };
    let sections = s.sections.as_ref().map_or(&[][..], |m| m.0.as_slice());
    let mut parts = vec![instructions.clone()];
    let title = if leading {
        parts.extend(sections.iter().filter_map(|(_, v)| v.clone()));
        "System prompt".to_string()
    } else {
        parts.extend(sections.iter().map(|(name, value)| match value {
            Some(v) => format!("Updated section \"{name}\":\n\n{v}"),
            None => format!("Removed section \"{name}\"."),
        }));
        format!("System prompt update: {}", changes(s, &instructions))
    };
    let text: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    push_prompt(
        out,
        &title,
        &text.join("\n\n"),
        s.tools_added.as_deref().unwrap_or(&[]),
    );
    if let Some(removed) = s.tools_removed.as_ref().filter(|r| !r.is_empty()) {
        let names: Vec<&str> = removed.iter().map(|t| t.name.as_str()).collect();
        push_notes(out, &[format!("Tools removed: {}", names.join(", "))]);
    }
}

/// What an update changes, e.g. `instructions, skills, -rules, tools +bash -write`.
fn changes(s: &SystemMessage, instructions: &str) -> String {
    let mut changes: Vec<String> = Vec::new();
    if !instructions.is_empty() {
        changes.push("instructions".into());
    }
    for (name, value) in s.sections.iter().flat_map(|m| &m.0) {
        changes.push(if value.is_some() {
            name.clone()
        } else {
            format!("-{name}")
        });
    }
    let added = s
        .tools_added
        .iter()
        .flatten()
        .map(|t| format!("+{}", t.name));
    let removed = s
        .tools_removed
        .iter()
        .flatten()
        .map(|t| format!("-{}", t.name));
    let tools: Vec<String> = added.chain(removed).collect();
    if !tools.is_empty() {
        changes.push(format!("tools {}", tools.join(" ")));
    }
    changes.join(", ")
}

/// A folded system prompt with its tool list.
pub fn push_prompt(out: &mut String, title: &str, text: &str, tools: &[Tool]) {
    out.push_str("<details class=\"prompt\"><summary>");
    push_escaped(out, title);
    match tools.len() {
        0 => {}
        1 => out.push_str(" · 1 tool"),
        n => out.push_str(&format!(" · {n} tools")),
    }
    out.push_str("</summary>\n");
    if !text.is_empty() {
        out.push_str("<pre class=\"prompt-text\">");
        push_escaped(out, text);
        out.push_str("</pre>\n");
    }
    if !tools.is_empty() {
        out.push_str("<ul class=\"tool-list\">\n");
        for tool in tools {
            out.push_str("<li><code>");
            push_escaped(out, &tool.name);
            out.push_str("</code> ");
            push_escaped(out, &tool.description);
            out.push_str("</li>\n");
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_name_their_changes() {
        let s: SystemMessage = serde_json::from_str(
            r#"{"role":"system","content":"","sections":{"skills":"<s>","rules":null},"toolsAdded":[{"name":"bash","description":"d","parameters":{}}],"toolsRemoved":[{"name":"write"}],"timestamp":1}"#,
        )
        .unwrap();
        let mut out = String::new();
        push_system(&mut out, &s, false);
        assert!(out.starts_with(
            "<details class=\"prompt\"><summary>System prompt update: skills, -rules, tools +bash -write · 1 tool</summary>"
        ), "{out}");
        assert!(out.contains(
            "Updated section &quot;skills&quot;:\n\n&lt;s&gt;\n\nRemoved section &quot;rules&quot;."
        ));
        assert!(out.ends_with("<p class=\"note-line\">Tools removed: write</p>\n"));
        let mut out = String::new();
        push_system(&mut out, &s, true);
        assert!(out.contains("<summary>System prompt · 1 tool</summary>\n<pre class=\"prompt-text\">&lt;s&gt;</pre>"), "{out}");
    }
}
