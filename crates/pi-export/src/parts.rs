//! Small HTML pieces shared by the entry and tool renderers: long text with a collapsed tail,
//! images, JSON, timestamps and number formats.

use crate::escape::{image_data_url, push_escaped};
use pi_protocol::content::{ImageContent, TextContent, UserBlock};
use serde_json::Value;

/// Lines of tool output and other long text shown before the rest is folded away.
pub const PREVIEW_LINES: usize = 12;
/// Output up to this many lines longer than the preview is shown whole.
const FOLD_SLACK: usize = 4;

/// Appends `text` as preformatted output: the first `PREVIEW_LINES` lines, and the rest
/// inside a closed `<details>` (no script needed to expand it).
pub fn push_output(out: &mut String, text: &str, class: &str) {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').collect();
    // Folding away only a few lines would hide more than it saves.
    let shown = if lines.len() > PREVIEW_LINES + FOLD_SLACK {
        PREVIEW_LINES
    } else {
        lines.len()
    };
    let (head, tail) = lines.split_at(shown);
    out.push_str(&format!("<pre class=\"{class}\">"));
    push_escaped(out, &head.join("\n"));
    out.push_str("</pre>");
    if !tail.is_empty() {
        let n = tail.len();
        let noun = if n == 1 { "line" } else { "lines" };
        out.push_str(&format!(
            "<details class=\"more\"><summary>{n} more {noun}</summary><pre class=\"{class} rest\">"
        ));
        push_escaped(out, &tail.join("\n"));
        out.push_str("</pre></details>");
    }
    out.push('\n');
}

/// Appends an inline image, or a note when its type or data is not allowed.
pub fn push_image(out: &mut String, image: &ImageContent) {
    match image_data_url(&image.mime_type, &image.data) {
        Some(url) => {
            out.push_str("<img class=\"image\" src=\"");
            // Only base64 characters and an allowlisted type: nothing to escape, but be uniform.
            push_escaped(out, &url);
            out.push_str("\" alt=\"");
            push_escaped(out, &image.mime_type);
            out.push_str(" image\">");
        }
        None => {
            out.push_str("<p class=\"image-omitted\">Image omitted (type ");
            push_escaped(out, &format!("{:?}", image.mime_type));
            out.push_str(" is not shown inline)</p>");
        }
    }
}

/// Appends the images among `blocks`, in a wrapping row.
pub fn push_images(out: &mut String, blocks: &[UserBlock]) {
    let images: Vec<&ImageContent> = blocks
        .iter()
        .filter_map(|b| match b {
            UserBlock::Image(i) => Some(i),
            UserBlock::Text(_) => None,
        })
        .collect();
    if images.is_empty() {
        return;
    }
    out.push_str("<div class=\"images\">");
    for image in images {
        push_image(out, image);
    }
    out.push_str("</div>\n");
}

/// The text blocks among `blocks`, joined by newlines.
pub fn blocks_text(blocks: &[UserBlock]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(TextContent { text, .. }) => Some(text.as_str()),
            UserBlock::Image(_) => None,
        })
        .collect();
    texts.join("\n")
}

/// `value` as `JSON.stringify(value, null, 2)` would print it.
pub fn pretty_json(value: &Value) -> String {
    pi_js::json::to_js_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Appends a `<time>` for an ISO 8601 timestamp: the time of day, the full value on hover.
pub fn push_time(out: &mut String, iso: Option<&str>) {
    let Some(iso) = iso.filter(|t| !t.is_empty()) else {
        return;
    };
    let shown = iso
        .get(11..19)
        .filter(|_| iso.as_bytes().get(10) == Some(&b'T'));
    out.push_str("<time title=\"");
    push_escaped(out, iso);
    out.push_str("\">");
    push_escaped(out, shown.unwrap_or(iso));
    out.push_str("</time>");
}

/// `2025-01-02T03:04:05.678Z` as `2025-01-02 03:04:05 UTC`; other text unchanged.
pub fn readable_timestamp(iso: &str) -> String {
    match (iso.get(..10), iso.get(11..19), iso.ends_with('Z')) {
        (Some(date), Some(time), true) if iso.as_bytes().get(10) == Some(&b'T') => {
            format!("{date} {time} UTC")
        }
        _ => iso.to_string(),
    }
}

/// Token counts the way Pi's export header shows them (`950`, `1.2k`, `34k`, `1.5M`).
pub fn format_tokens(count: u64) -> String {
    let n = count as f64;
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{:.1}k", n / 1_000.0),
        10_000..1_000_000 => format!("{}k", (n / 1_000.0).round()),
        _ => format!("{:.1}M", n / 1_000_000.0),
    }
}

/// A short, single-line excerpt of `text` (for branch and tool summaries).
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let cut: String = flat.chars().take(max_chars).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_folds_its_tail() {
        let text: Vec<String> = (1..=17).map(|i| format!("<{i}>")).collect();
        let mut out = String::new();
        push_output(&mut out, &text.join("\n"), "out");
        assert!(out.starts_with("<pre class=\"out\">&lt;1&gt;\n"));
        assert!(
            out.contains("&lt;12&gt;</pre><details class=\"more\"><summary>5 more lines</summary>")
        );
        assert!(out.ends_with("&lt;16&gt;\n&lt;17&gt;</pre></details>\n"));
        let mut out = String::new();
        push_output(&mut out, &text[..16].join("\n"), "out");
        assert!(!out.contains("<details") && out.ends_with("&lt;16&gt;</pre>\n"));
    }

    #[test]
    fn number_and_time_formats() {
        let tokens: Vec<String> = [0, 999, 1_234, 34_567, 1_500_000]
            .into_iter()
            .map(format_tokens)
            .collect();
        assert_eq!(tokens, ["0", "999", "1.2k", "35k", "1.5M"]);
        assert_eq!(
            readable_timestamp("2025-01-02T03:04:05.678Z"),
            "2025-01-02 03:04:05 UTC"
        );
        assert_eq!(readable_timestamp("yesterday"), "yesterday");
        assert_eq!(excerpt("  a\n b  c ", 10), "a b c");
        assert_eq!(excerpt("abcdefghijkl", 4), "abcd…");
    }
}
