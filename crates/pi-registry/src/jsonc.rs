//! The "JSON with comments" Pi accepts in `models.json`: `//` line comments and trailing commas,
//! removed by two regex passes (`utils/json.js`). Block comments are *not* stripped, so they stay
//! a parse error, as in Pi. Both passes skip string literals exactly as the regex
//! `"(?:\\.|[^"\\])*"` does: a quote that starts no complete literal is an ordinary character.

/// Removes `//` comments, then commas that only whitespace separates from a `}` or `]`.
pub(crate) fn strip_json_comments(input: &str) -> String {
    let without_comments = strip_line_comments(input);
    strip_trailing_commas(&without_comments)
}

/// End (exclusive, byte offset) of the string literal starting at `start` (a `"`), if the
/// literal regex matches there. `\\.` cannot consume a line terminator, `[^"\\]` can.
fn literal_end(s: &str, start: usize) -> Option<usize> {
    let mut chars = s[start + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some(start + 1 + i + 1),
            '\\' => match chars.next() {
                Some((_, n)) if !is_line_terminator(n) => {}
                _ => return None,
            },
            _ => {}
        }
    }
    None
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// JavaScript's `\s`.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

fn strip_line_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with('"') {
            if let Some(end) = literal_end(s, i) {
                out.push_str(&s[i..end]);
                i = end;
                continue;
            }
        } else if rest.starts_with("//") {
            // `[^\n]*`: only `\n` ends the comment.
            i += rest.find('\n').unwrap_or(rest.len());
            continue;
        }
        let c = rest.chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

fn strip_trailing_commas(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with('"') {
            if let Some(end) = literal_end(s, i) {
                out.push_str(&s[i..end]);
                i = end;
                continue;
            }
        } else if let Some(after) = rest.strip_prefix(',') {
            let space = after.len() - after.trim_start_matches(is_js_space).len();
            if matches!(after[space..].chars().next(), Some('}' | ']')) {
                // Drop the comma, keep the whitespace; the bracket is copied next round.
                out.push_str(&after[..space]);
                i += 1 + space;
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or('\0');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_json_comments as strip;

    #[test]
    fn removes_line_comments_outside_strings() {
        assert_eq!(
            strip("{\"a\": \"x//y\", // note\n\"b\": 1}"),
            "{\"a\": \"x//y\", \n\"b\": 1}"
        );
    }

    #[test]
    fn removes_trailing_commas_before_closers_only() {
        assert_eq!(strip("[1, 2, ]"), "[1, 2 ]");
        assert_eq!(strip("{\"a\": [1,],\n}"), "{\"a\": [1]\n}");
        assert_eq!(strip("{\"a\": \",]\"}"), "{\"a\": \",]\"}");
        assert_eq!(strip("[1,,2]"), "[1,,2]");
    }

    #[test]
    fn comment_after_trailing_comma_is_removed_first() {
        assert_eq!(strip("[1, // c\n]"), "[1 \n]");
    }

    #[test]
    fn escaped_quotes_stay_inside_strings() {
        assert_eq!(strip(r#"{"a": "q\"//x"}"#), r#"{"a": "q\"//x"}"#);
    }

    #[test]
    fn unterminated_quote_is_an_ordinary_character() {
        assert_eq!(strip("\"abc // x"), "\"abc ");
    }

    #[test]
    fn block_comments_are_kept() {
        assert_eq!(strip("/* x */{}"), "/* x */{}");
    }
}
