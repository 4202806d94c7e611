//! The edit tool's `details`: a numbered display diff, a unified patch and the first changed
//! line, computed only in windows around the replacements so the cost follows the change, not
//! the file (as Pi does).

use super::apply::Replacement;
use super::line_diff::{Hunk, Part, diff_lines, format_patch, structured_hunks};

/// Unchanged lines diffed on each side of a replacement.
const WINDOW_MARGIN_LINES: usize = 32;
const CONTEXT_LINES: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditDiff {
    pub diff: String,
    pub patch: String,
    pub first_changed_line: Option<usize>,
}

fn count_line_feeds(text: &str, start: usize, end: usize) -> usize {
    text.as_bytes()[start..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

fn count_lines(text: &str) -> usize {
    count_line_feeds(text, 0, text.len()) + 1
}

struct Shown {
    lines: Vec<String>,
    first_changed_line: Option<usize>,
}

fn pad(n: usize, width: usize) -> String {
    format!("{n:>width$}")
}

/// Old and new line numbers while formatting.
struct Numbers {
    old: usize,
    new: usize,
    width: usize,
}

impl Numbers {
    fn context(&mut self, lines: &[&str], out: &mut Vec<String>) {
        for line in lines {
            out.push(format!(" {} {line}", pad(self.old, self.width)));
            self.old += 1;
            self.new += 1;
        }
    }

    fn skip(&mut self, count: usize, marker: &str, out: &mut Vec<String>) {
        if count > 0 {
            out.push(marker.to_string());
            self.old += count;
            self.new += count;
        }
    }
}

/// Formats diff parts as ` <n> line`, `-<n> line`, `+<n> line`, keeping a few context lines
/// around changes and ` <pad> ...` for skipped runs.
fn format_display(parts: &[Part], old_start: usize, new_start: usize, width: usize) -> Shown {
    let mut out = Vec::new();
    let mut n = Numbers {
        old: old_start,
        new: new_start,
        width,
    };
    let mut last_was_change = false;
    let mut first_changed_line = None;
    let skip = format!(" {} ...", " ".repeat(width));
    for (i, part) in parts.iter().enumerate() {
        let raw: Vec<&str> = part
            .lines
            .iter()
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
            .collect();
        if part.is_change() {
            first_changed_line.get_or_insert(n.new);
            for line in raw {
                if part.added {
                    out.push(format!("+{} {line}", pad(n.new, width)));
                    n.new += 1;
                } else {
                    out.push(format!("-{} {line}", pad(n.old, width)));
                    n.old += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(Part::is_change);
        if last_was_change && next_is_change {
            if raw.len() <= CONTEXT_LINES * 2 {
                n.context(&raw, &mut out);
            } else {
                n.context(&raw[..CONTEXT_LINES], &mut out);
                n.skip(raw.len() - 2 * CONTEXT_LINES, &skip, &mut out);
                n.context(&raw[raw.len() - CONTEXT_LINES..], &mut out);
            }
        } else if last_was_change {
            let shown = raw.len().min(CONTEXT_LINES);
            n.context(&raw[..shown], &mut out);
            n.skip(raw.len() - shown, &skip, &mut out);
        } else if next_is_change {
            let skipped = raw.len().saturating_sub(CONTEXT_LINES);
            n.skip(skipped, &skip, &mut out);
            n.context(&raw[skipped..], &mut out);
        } else {
            n.old += raw.len();
            n.new += raw.len();
        }
        last_was_change = false;
    }
    Shown {
        lines: out,
        first_changed_line,
    }
}

/// Start of the line containing `offset`.
fn line_start_before(text: &str, offset: usize) -> usize {
    if offset == 0 {
        return 0;
    }
    text.as_bytes()[..offset]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1)
}

#[derive(Debug)]
struct Window {
    old_start: usize,
    old_end: usize,
    old_line: usize,
    new_start: usize,
    new_end: usize,
    new_line: usize,
}

/// Whole-line windows with margin around sorted, disjoint replacements; overlapping ones merge.
fn diff_windows(base: &str, replacements: &[Replacement]) -> Vec<Window> {
    let bytes = base.as_bytes();
    let mut windows: Vec<Window> = Vec::new();
    let (mut offset_delta, mut line_delta) = (0isize, 0isize);
    let (mut cursor_offset, mut cursor_line) = (0usize, 0usize);
    for r in replacements {
        let match_end = r.match_index + r.match_length;
        let mut start = line_start_before(base, r.match_index);
        for _ in 0..WINDOW_MARGIN_LINES {
            if start == 0 {
                break;
            }
            start = line_start_before(base, start - 1);
        }
        let mut end = match_end;
        for i in 0..=WINDOW_MARGIN_LINES {
            if end >= base.len() {
                break;
            }
            let from = if i == 0 {
                match_end.saturating_sub(1).max(r.match_index)
            } else {
                end
            };
            end = bytes[from..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(base.len(), |p| from + p + 1);
        }
        let r_offset_delta = r.new_text.len() as isize - r.match_length as isize;
        let r_line_delta = count_line_feeds(&r.new_text, 0, r.new_text.len()) as isize
            - count_line_feeds(base, r.match_index, match_end) as isize;
        match windows.last_mut() {
            Some(prev) if start <= prev.old_end => {
                prev.old_end = prev.old_end.max(end);
                prev.new_end = (prev.old_end as isize + offset_delta + r_offset_delta) as usize;
            }
            _ => {
                cursor_line += count_line_feeds(base, cursor_offset, start);
                cursor_offset = start;
                windows.push(Window {
                    old_start: start,
                    old_end: end,
                    old_line: cursor_line,
                    new_start: (start as isize + offset_delta) as usize,
                    new_end: (end as isize + offset_delta + r_offset_delta) as usize,
                    new_line: (cursor_line as isize + line_delta) as usize,
                });
            }
        }
        offset_delta += r_offset_delta;
        line_delta += r_line_delta;
    }
    windows
}

/// The display diff, patch and first changed line of an edit of `base` into `new_content`.
pub fn edit_diff(
    path: &str,
    base: &str,
    new_content: &str,
    replacements: &[Replacement],
) -> EditDiff {
    let width = count_lines(base)
        .max(count_lines(new_content))
        .to_string()
        .len();
    let skip = format!(" {} ...", " ".repeat(width));
    let mut output: Vec<String> = Vec::new();
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut first_changed_line = None;
    for w in diff_windows(base, replacements) {
        let old_text = &base[w.old_start..w.old_end];
        let new_text = &new_content[w.new_start..w.new_end];
        let mut shown = format_display(
            &diff_lines(old_text, new_text),
            w.old_line + 1,
            w.new_line + 1,
            width,
        );
        if first_changed_line.is_none() {
            first_changed_line = shown.first_changed_line;
        }
        // Two windows around one unchanged run both mark it skipped; show one marker.
        if output.last() == Some(&skip) && shown.lines.first() == Some(&skip) {
            shown.lines.remove(0);
        }
        output.extend(shown.lines);
        for mut hunk in structured_hunks(old_text, new_text, CONTEXT_LINES) {
            hunk.old_start += w.old_line;
            hunk.new_start += w.new_line;
            hunks.push(hunk);
        }
    }
    EditDiff {
        diff: output.join("\n"),
        patch: format_patch(path, path, &hunks),
        first_changed_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_of_a_crlf_edit_matches_pi() {
        let base = "one\ntwo\nthree\n";
        let new = "one\nTWO\nTHREE\n";
        let r = Replacement {
            match_index: 4,
            match_length: 9,
            new_text: "TWO\nTHREE".into(),
        };
        let d = edit_diff("crlf.txt", base, new, &[r]);
        assert_eq!(d.diff, " 1 one\n-2 two\n-3 three\n+2 TWO\n+3 THREE");
        assert_eq!(
            d.patch,
            "--- crlf.txt\n+++ crlf.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+TWO\n+THREE\n"
        );
        assert_eq!(d.first_changed_line, Some(2));
    }
}
