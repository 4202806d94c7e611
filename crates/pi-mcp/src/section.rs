//! The `mcp_servers` system-prompt section: the servers whose tools are not declared to the
//! model, how each is reached, and one line about it, within 4096 characters.

/// Characters of one server's summary.
const MAX_SERVER_DESCRIPTION_CHARS: usize = 250;
/// Characters of the whole section.
pub const MAX_SERVERS_SECTION_CHARS: usize = 4096;

pub struct SectionServer {
    pub name: String,
    /// Reached from codemode scripts (else through `tool_search`).
    pub codemode: bool,
    pub summary: String,
}

fn utf16_len(s: &str) -> usize {
    pi_js::utf16_len(s)
}

fn truncate(text: &str, max: usize) -> String {
    if utf16_len(text) <= max {
        return text.to_string();
    }
    if max <= 1 {
        return String::new();
    }
    let mut out = String::new();
    for c in text.chars() {
        if utf16_len(&out) + c.len_utf16() > max - 1 {
            break;
        }
        out.push(c);
    }
    format!("{}…", pi_js::trim_end(&out))
}

/// The section text; `None` when no server is listed. `servers` are sorted by name already.
pub fn render(servers: &[SectionServer]) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    let reaches: Vec<&str> = servers
        .iter()
        .map(|s| {
            if s.codemode {
                "codemode"
            } else {
                "tool_search"
            }
        })
        .collect();
    let mut intro = String::from("MCP servers whose tools are not declared to you.");
    if reaches.contains(&"codemode") {
        intro.push_str(" Call the tools of `codemode` servers from codemode scripts.");
    }
    if reaches.contains(&"tool_search") {
        intro.push_str(" Load the tools of `tool_search` servers with `tool_search`.");
    }
    let heads: Vec<String> = servers
        .iter()
        .zip(&reaches)
        .map(|(s, r)| format!("- {} ({r})", crate::naming::namespace(&s.name)))
        .collect();
    let omitted = |count: usize| -> Vec<String> {
        if count == 0 {
            return Vec::new();
        }
        let plural = if count == 1 { "" } else { "s" };
        vec![format!(
            "- … {count} more server{plural}; find their tools with searchTools()"
        )]
    };
    let size = |kept: usize| -> usize {
        let mut parts = vec![intro.clone()];
        parts.extend(heads[..kept].iter().cloned());
        parts.extend(omitted(servers.len() - kept));
        utf16_len(&parts.join("\n"))
    };
    let mut kept = servers.len();
    while kept > 0 && size(kept) > MAX_SERVERS_SECTION_CHARS {
        kept -= 1;
    }
    // Room per kept server, less the ": " before its summary.
    let per_server = MAX_SERVERS_SECTION_CHARS
        .saturating_sub(size(kept))
        .checked_div(kept)
        .map_or(0, |room| {
            room.saturating_sub(2).min(MAX_SERVER_DESCRIPTION_CHARS)
        });
    let mut lines = vec![intro.clone()];
    for (s, head) in servers.iter().zip(&heads).take(kept) {
        let summary = if per_server > 0 {
            truncate(&s.summary, per_server)
        } else {
            String::new()
        };
        lines.push(if summary.is_empty() {
            head.clone()
        } else {
            format!("{head}: {summary}")
        });
    }
    lines.extend(omitted(servers.len() - kept));
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_explains_only_the_ways_in_use() {
        let servers = [
            SectionServer {
                name: "dev-radius".into(),
                codemode: true,
                summary: "Radius tools".into(),
            },
            SectionServer {
                name: "gh".into(),
                codemode: false,
                summary: String::new(),
            },
        ];
        assert_eq!(
            render(&servers).as_deref(),
            Some(
                "MCP servers whose tools are not declared to you. Call the tools of `codemode` servers from codemode scripts. Load the tools of `tool_search` servers with `tool_search`.\n- mcp__dev_radius (codemode): Radius tools\n- mcp__gh (tool_search)"
            )
        );
        assert_eq!(render(&[]), None);
    }

    #[test]
    fn long_summaries_are_cut_to_250_characters() {
        let servers = [SectionServer {
            name: "a".into(),
            codemode: true,
            summary: "x".repeat(400),
        }];
        let text = render(&servers).unwrap_or_default();
        let line = text.lines().nth(1).unwrap_or("");
        assert_eq!(line.chars().count(), "- mcp__a (codemode): ".len() + 250);
        assert!(line.ends_with('…'));
    }
}
