//! Block-level markdown: fenced and indented code, headings, rules, block quotes, lists, pipe
//! tables and paragraphs. A small, predictable subset of CommonMark/GFM, enough for chat text;
//! anything it does not recognise is shown as text. Raw HTML blocks are not a construct here.

use crate::escape::push_escaped;
use crate::inline::render_inline;

/// Nesting of quotes and lists beyond which the rest is shown as plain text.
const MAX_DEPTH: usize = 12;

/// Appends the rendering of markdown `text`.
pub fn render_markdown(out: &mut String, text: &str) {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    render_blocks(out, &lines, 0, false);
}

/// Renders `lines`; `tight` list items put paragraph text directly into the `<li>`.
fn render_blocks(out: &mut String, lines: &[&str], depth: usize, tight: bool) {
    if depth > MAX_DEPTH {
        out.push_str(r#"<p class="plain">"#);
        push_escaped(out, &lines.join("\n"));
        out.push_str("</p>");
        return;
    }
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            i += 1;
        } else if let Some(fence) = fence_open(line) {
            i = code_fence(out, lines, i, &fence);
        } else if indent(line) >= 4 {
            i = indented_code(out, lines, i);
        } else if let Some((level, text)) = heading(line) {
            out.push_str(&format!("<h{level}>"));
            render_inline(out, text);
            out.push_str(&format!("</h{level}>\n"));
            i += 1;
        } else if is_rule(line) {
            out.push_str("<hr>\n");
            i += 1;
        } else if quote_line(line).is_some() {
            let mut inner = Vec::new();
            while let Some(rest) = lines.get(i).and_then(|l| quote_line(l)) {
                inner.push(rest);
                i += 1;
            }
            out.push_str("<blockquote>\n");
            render_blocks(out, &inner, depth + 1, false);
            out.push_str("</blockquote>\n");
        } else if let Some(marker) = list_marker(line) {
            i = list(out, lines, i, marker, depth);
        } else if let Some(columns) = table_start(lines, i) {
            i = table(out, lines, i, &columns);
        } else {
            let start = i;
            i += 1;
            while i < lines.len() && !interrupts_paragraph(lines[i]) {
                i += 1;
            }
            let text: Vec<&str> = lines[start..i].iter().map(|l| l.trim()).collect();
            if !tight {
                out.push_str("<p>");
            }
            render_inline(out, &text.join("\n"));
            out.push_str(if tight { "\n" } else { "</p>\n" });
        }
    }
}

fn indent(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// `line` without up to `n` leading spaces.
fn dedent(line: &str, n: usize) -> &str {
    &line[indent(line).min(n)..]
}

fn interrupts_paragraph(line: &str) -> bool {
    line.trim().is_empty()
        || fence_open(line).is_some()
        || heading(line).is_some()
        || is_rule(line)
        || quote_line(line).is_some()
        || list_marker(line).is_some_and(|m| m.interrupts)
}

struct Fence {
    ch: u8,
    len: usize,
    indent: usize,
    lang: String,
}

fn fence_open(line: &str) -> Option<Fence> {
    let ind = indent(line);
    let rest = &line[ind..];
    let ch = *rest.as_bytes().first()?;
    if ind > 3 || (ch != b'`' && ch != b'~') {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    let info = rest[len..].trim();
    if len < 3 || (ch == b'`' && info.contains('`')) {
        return None;
    }
    // The language only becomes a class name: keep it to safe characters.
    let lang = info
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '#' | '.'))
        .take(32)
        .collect();
    Some(Fence {
        ch,
        len,
        indent: ind,
        lang,
    })
}

fn code_fence(out: &mut String, lines: &[&str], start: usize, fence: &Fence) -> usize {
    let mut i = start + 1;
    let mut body = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        let rest = line.trim_start_matches(' ');
        let run = rest.bytes().take_while(|&b| b == fence.ch).count();
        if indent(line) <= 3 && run >= fence.len && rest[run..].trim().is_empty() {
            i += 1;
            break;
        }
        body.push(dedent(line, fence.indent));
        i += 1;
    }
    push_code(out, &body.join("\n"), &fence.lang);
    i
}

fn indented_code(out: &mut String, lines: &[&str], start: usize) -> usize {
    let mut end = start;
    let mut i = start;
    while i < lines.len() && (indent(lines[i]) >= 4 || lines[i].trim().is_empty()) {
        if !lines[i].trim().is_empty() {
            end = i + 1;
        }
        i += 1;
    }
    let body: Vec<&str> = lines[start..end].iter().map(|l| dedent(l, 4)).collect();
    push_code(out, &body.join("\n"), "");
    end
}

fn push_code(out: &mut String, code: &str, lang: &str) {
    if lang.is_empty() {
        out.push_str("<pre class=\"code\"><code>");
    } else {
        out.push_str("<pre class=\"code\" data-lang=\"");
        push_escaped(out, lang);
        out.push_str("\"><code>");
    }
    push_escaped(out, code);
    out.push_str("</code></pre>\n");
}

fn heading(line: &str) -> Option<(usize, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let rest = line.trim_start();
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    let text = &rest[level..];
    if !(1..=6).contains(&level) || !(text.is_empty() || text.starts_with([' ', '\t'])) {
        return None;
    }
    // A closing run of `#` only counts after a space.
    let text = text.trim();
    let stripped = text.trim_end_matches('#');
    let text = if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        stripped.trim_end()
    } else {
        text
    };
    Some((level, text))
}

fn is_rule(line: &str) -> bool {
    if indent(line) > 3 {
        return false;
    }
    let chars: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    chars.len() >= 3 && matches!(chars[0], '-' | '*' | '_') && chars.iter().all(|&c| c == chars[0])
}

fn quote_line(line: &str) -> Option<&str> {
    if indent(line) > 3 {
        return None;
    }
    let rest = line.trim_start().strip_prefix('>')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

#[derive(Clone, Copy)]
struct Marker {
    /// `Some(start)` for an ordered list.
    start: Option<u64>,
    /// The marker character (`-`, `*`, `+`, `.` or `)`), so `-` and `*` lists stay apart.
    ch: u8,
    /// Column where the item's content starts.
    content: usize,
    /// Whether it may interrupt a paragraph (non-empty, and ordered lists start at 1).
    interrupts: bool,
}

fn list_marker(line: &str) -> Option<Marker> {
    let ind = indent(line);
    let rest = &line[ind..];
    let bytes = rest.as_bytes();
    let (start, ch, width) = match bytes.first()? {
        b'-' | b'*' | b'+' => (None, bytes[0], 1),
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            let ch = *bytes.get(digits)?;
            if digits > 9 || !matches!(ch, b'.' | b')') {
                return None;
            }
            (rest[..digits].parse().ok(), ch, digits + 1)
        }
        _ => return None,
    };
    let after = &rest[width..];
    let spaces = after.bytes().take_while(|&b| b == b' ').count();
    if !after.is_empty() && spaces == 0 {
        return None;
    }
    let empty = after.trim().is_empty();
    let gap = if spaces > 4 || empty { 1 } else { spaces };
    Some(Marker {
        start,
        ch,
        content: ind + width + gap,
        interrupts: !empty && start.is_none_or(|n| n == 1),
    })
}

fn list(out: &mut String, lines: &[&str], start: usize, first: Marker, depth: usize) -> usize {
    let mut items: Vec<Vec<&str>> = Vec::new();
    let mut marker = first;
    let mut i = start;
    let mut loose = false;
    loop {
        // The item's first line, then its continuation lines.
        let line = lines[i];
        let mut item = vec![line.get(marker.content..).unwrap_or("").trim_start()];
        i += 1;
        let mut pending_blank = false;
        while i < lines.len() {
            let line = lines[i];
            if line.trim().is_empty() {
                pending_blank = true;
                item.push("");
            } else if indent(line) >= marker.content {
                if pending_blank {
                    loose = true;
                }
                pending_blank = false;
                item.push(dedent(line, marker.content));
            } else if !pending_blank && !interrupts_paragraph(line) && list_marker(line).is_none() {
                item.push(line.trim_start()); // lazy continuation of a paragraph
            } else {
                break;
            }
            i += 1;
        }
        while item.last().is_some_and(|l| l.is_empty()) {
            item.pop();
        }
        items.push(item);
        match lines.get(i).and_then(|l| list_marker(l)) {
            Some(next) if next.ch == marker.ch && next.start.is_some() == first.start.is_some() => {
                loose |= pending_blank;
                marker = next;
            }
            _ => break,
        }
    }
    match first.start {
        None => out.push_str("<ul>\n"),
        Some(1) => out.push_str("<ol>\n"),
        Some(n) => out.push_str(&format!("<ol start=\"{n}\">\n")),
    }
    for item in &mut items {
        out.push_str("<li>");
        if let Some(first) = item.first_mut() {
            *first = push_task_mark(out, first);
        }
        render_blocks(out, item, depth + 1, !loose);
        out.push_str("</li>\n");
    }
    out.push_str(if first.start.is_some() {
        "</ol>\n"
    } else {
        "</ul>\n"
    });
    i
}

/// A GFM task item (`[ ] text`, `[x] text`) gets a box; returns the text after the mark.
fn push_task_mark<'a>(out: &mut String, line: &'a str) -> &'a str {
    let (mark, rest) = match line.get(..4) {
        Some("[ ] ") => ("<span class=\"task\">☐</span> ", &line[4..]),
        Some("[x] " | "[X] ") => ("<span class=\"task done\">☑</span> ", &line[4..]),
        _ => return line,
    };
    out.push_str(mark);
    rest
}

#[derive(Clone, Copy, PartialEq)]
enum Align {
    None,
    Left,
    Center,
    Right,
}

/// The column alignments when `lines[i]` starts a pipe table (a row, then a delimiter row).
fn table_start(lines: &[&str], i: usize) -> Option<Vec<Align>> {
    let head = lines[i];
    let delim = lines.get(i + 1)?;
    if !head.contains('|') || !delim.contains('|') && !delim.contains('-') {
        return None;
    }
    let cells = split_row(delim);
    let aligns: Option<Vec<Align>> = cells
        .iter()
        .map(|c| {
            let c = c.trim();
            let dashes = c.trim_matches(':');
            (!dashes.is_empty() && dashes.bytes().all(|b| b == b'-')).then(|| {
                match (c.starts_with(':'), c.ends_with(':')) {
                    (true, true) => Align::Center,
                    (false, true) => Align::Right,
                    (true, false) => Align::Left,
                    (false, false) => Align::None,
                }
            })
        })
        .collect();
    let aligns = aligns?;
    (split_row(head).len() == aligns.len()).then_some(aligns)
}

fn split_row(line: &str) -> Vec<&str> {
    let trimmed = line.trim();
    let trimmed = trimmed.strip_prefix('|').unwrap_or(trimmed);
    let trimmed = match trimmed.strip_suffix('|') {
        Some(t) if !t.ends_with('\\') => t,
        _ => trimmed,
    };
    let mut cells = Vec::new();
    let bytes = trimmed.as_bytes();
    let mut start = 0;
    for (j, &b) in bytes.iter().enumerate() {
        if b == b'|' && (j == 0 || bytes[j - 1] != b'\\') {
            cells.push(&trimmed[start..j]);
            start = j + 1;
        }
    }
    cells.push(&trimmed[start..]);
    cells
}

fn table(out: &mut String, lines: &[&str], start: usize, aligns: &[Align]) -> usize {
    out.push_str("<div class=\"table\"><table>\n<thead>");
    table_row(out, lines[start], aligns, "th");
    out.push_str("</thead>\n<tbody>");
    let mut i = start + 2;
    while i < lines.len() && lines[i].contains('|') && !lines[i].trim().is_empty() {
        table_row(out, lines[i], aligns, "td");
        i += 1;
    }
    out.push_str("</tbody>\n</table></div>\n");
    i
}

fn table_row(out: &mut String, line: &str, aligns: &[Align], tag: &str) {
    let cells = split_row(line);
    out.push_str("<tr>");
    for (k, align) in aligns.iter().enumerate() {
        let class = match align {
            Align::None => "",
            Align::Left => " class=\"left\"",
            Align::Center => " class=\"center\"",
            Align::Right => " class=\"right\"",
        };
        out.push_str(&format!("<{tag}{class}>"));
        let cell = cells.get(k).map_or("", |c| c.trim()).replace("\\|", "|");
        render_inline(out, &cell);
        out.push_str(&format!("</{tag}>"));
    }
    out.push_str("</tr>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> String {
        let mut out = String::new();
        render_markdown(&mut out, text);
        out
    }

    #[test]
    fn paragraphs_headings_and_fences() {
        assert_eq!(
            md("# Title\n\nHello <b>x</b>\nworld\n\n```rust title\nfn main() { \"<\" }\n```\n---"),
            concat!(
                "<h1>Title</h1>\n<p>Hello &lt;b&gt;x&lt;/b&gt;<br>\nworld</p>\n",
                "<pre class=\"code\" data-lang=\"rust\"><code>fn main() { &quot;&lt;&quot; }</code></pre>\n",
                "<hr>\n"
            )
        );
    }

    #[test]
    fn fence_language_cannot_break_out_of_its_attribute() {
        assert_eq!(
            md("~~~js\" onmouseover=\"alert(1)\nx\n~~~"),
            "<pre class=\"code\" data-lang=\"js\"><code>x</code></pre>\n"
        );
        assert_eq!(
            md("```\nunclosed <script>"),
            "<pre class=\"code\"><code>unclosed &lt;script&gt;</code></pre>\n"
        );
    }

    #[test]
    fn lists_and_quotes() {
        assert_eq!(
            md("- a\n- b\n  - c\n\n3. x\n4. y\n\n> q\n> > r"),
            concat!(
                "<ul>\n<li>a\n</li>\n<li>b\n<ul>\n<li>c\n</li>\n</ul>\n</li>\n</ul>\n",
                "<ol start=\"3\">\n<li>x\n</li>\n<li>y\n</li>\n</ol>\n",
                "<blockquote>\n<p>q</p>\n<blockquote>\n<p>r</p>\n</blockquote>\n</blockquote>\n"
            )
        );
    }

    #[test]
    fn task_items_get_boxes() {
        assert_eq!(
            md("- [x] done\n- [ ] todo\n- [y] other"),
            concat!(
                "<ul>\n<li><span class=\"task done\">☑</span> done\n</li>\n",
                "<li><span class=\"task\">☐</span> todo\n</li>\n<li>[y] other\n</li>\n</ul>\n"
            )
        );
    }

    #[test]
    fn tables() {
        assert_eq!(
            md("| a | b |\n|:--|--:|\n| `x|y` | <i> |"),
            concat!(
                "<div class=\"table\"><table>\n<thead><tr><th class=\"left\">a</th><th class=\"right\">b</th></tr>\n",
                "</thead>\n<tbody><tr><td class=\"left\">`x</td><td class=\"right\">y`</td></tr>\n",
                "</tbody>\n</table></div>\n"
            )
        );
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let text = format!("{}deep", "> ".repeat(5000));
        let out = md(&text);
        assert!(out.contains("<p class=\"plain\">"));
        let list = format!("{}x", "- ".repeat(5000));
        assert!(md(&list).contains("x"));
    }
}
