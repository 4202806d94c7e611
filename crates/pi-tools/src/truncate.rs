//! Output truncation shared by the tools: keep the head (read, grep, find, ls) or the tail (bash)
//! of a text within a line and a byte limit, and describe what was cut.

use pi_js::utf16_len;
use serde::Serialize;

pub const DEFAULT_MAX_LINES: usize = 2000;
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in UTF-16 code units.
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// JavaScript's `Number.MAX_SAFE_INTEGER`: the "no line limit" of grep, find and ls.
pub const NO_LINE_LIMIT: usize = 9_007_199_254_740_991;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// What a truncation kept (`details.truncation` on the wire, keys in Pi's order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Only the byte limit (grep, find, ls cap their rows themselves).
    pub fn bytes_only() -> Limits {
        Limits {
            max_lines: NO_LINE_LIMIT,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Lines as the limits count them: split on `\n`, a trailing empty piece after a final `\n` is
/// not a line, and the empty text has no lines.
fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

/// `<n>B`, `<n.n>KB` or `<n.n>MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn untruncated(content: &str, total_lines: usize, limits: Limits) -> Truncation {
    Truncation {
        content: content.to_string(),
        truncated: false,
        truncated_by: None,
        total_lines,
        total_bytes: content.len(),
        output_lines: total_lines,
        output_bytes: content.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// Keeps whole lines from the start. If the first line alone is over the byte limit, nothing is
/// kept and `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    let total_bytes = content.len();
    if total_lines <= limits.max_lines && total_bytes <= limits.max_bytes {
        return untruncated(content, total_lines, limits);
    }
    let mut result = Truncation {
        content: String::new(),
        truncated: true,
        truncated_by: Some(TruncatedBy::Bytes),
        total_lines,
        total_bytes,
        output_lines: 0,
        output_bytes: 0,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    };
    if lines[0].len() > limits.max_bytes {
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(limits.max_lines) {
        let line_bytes = line.len() + usize::from(i > 0);
        if bytes + line_bytes > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += line_bytes;
    }
    if kept >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    let output = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = output.len();
    result.content = output;
    result
}

/// Keeps whole lines from the end. If even the last line is over the byte limit, keeps the end
/// of that line (cut at a character boundary) and sets `last_line_partial`.
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let lines = split_lines(content);
    let total_lines = lines.len();
    let total_bytes = content.len();
    if total_lines <= limits.max_lines && total_bytes <= limits.max_bytes {
        return untruncated(content, total_lines, limits);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut last_line_partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= limits.max_lines {
            break;
        }
        let line_bytes = line.len() + usize::from(!kept.is_empty());
        if bytes + line_bytes > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let tail = tail_within_bytes(line, limits.max_bytes);
                bytes = tail.len();
                kept.push(tail);
                last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += line_bytes;
    }
    if kept.len() >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    let output = kept.join("\n");
    Truncation {
        output_lines: kept.len(),
        output_bytes: output.len(),
        content: output,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes,
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// The longest suffix of `text` within `max_bytes` that starts at a character boundary.
pub fn tail_within_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Cuts a grep line to [`GREP_MAX_LINE_LENGTH`] UTF-16 units plus `... [truncated]`, never
/// splitting a surrogate pair. Returns the text and whether it was cut.
pub fn truncate_line(line: &str) -> (String, bool) {
    if utf16_len(line) <= GREP_MAX_LINE_LENGTH {
        return (line.to_string(), false);
    }
    let mut units = 0usize;
    let mut end = 0usize;
    for (i, c) in line.char_indices() {
        let next = units + c.len_utf16();
        if next > GREP_MAX_LINE_LENGTH {
            break;
        }
        units = next;
        end = i + c.len_utf8();
    }
    (format!("{}... [truncated]", &line[..end]), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_format_like_pi() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(60001), "58.6KB");
        assert_eq!(format_size(1024 * 1024 * 3 / 2), "1.5MB");
    }

    #[test]
    fn head_keeps_whole_lines_and_flags_an_oversized_first_line() {
        let t = truncate_head(
            "a\nb\nc\n",
            Limits {
                max_lines: 2,
                max_bytes: 100,
            },
        );
        assert_eq!(
            (t.content.as_str(), t.truncated_by, t.total_lines),
            ("a\nb", Some(TruncatedBy::Lines), 3)
        );
        let t = truncate_head(
            "abcdef\nx",
            Limits {
                max_lines: 10,
                max_bytes: 3,
            },
        );
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_keeps_the_end_of_an_oversized_last_line() {
        let t = truncate_tail(
            "xx\nabcdé",
            Limits {
                max_lines: 10,
                max_bytes: 3,
            },
        );
        assert_eq!(t.content, "dé");
        assert!(t.last_line_partial);
        let t = truncate_tail(
            "1\n2\n3\n",
            Limits {
                max_lines: 2,
                max_bytes: 100,
            },
        );
        assert_eq!(t.content, "2\n3");
    }

    #[test]
    fn grep_lines_are_cut_at_500_utf16_units() {
        let long = "😀".repeat(300);
        let (text, cut) = truncate_line(&long);
        assert!(cut);
        assert_eq!(text, format!("{}... [truncated]", "😀".repeat(250)));
    }
}
