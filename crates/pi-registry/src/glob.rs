//! The part of `minimatch` (with `nocase`) that `--models` / `enabledModels` patterns use:
//! `*`, `?`, `[...]` classes, `**` path segments, `{a,b}` / `{1..3}` braces, a leading `!` to
//! negate, and minimatch's rule that wildcards do not match a segment starting with `.`.
//! Extended globs (`+(a|b)`) are not supported and match literally.

/// Whether `path` (e.g. `anthropic/claude-opus`) matches `pattern`, ignoring case.
pub(crate) fn glob_match(path: &str, pattern: &str) -> bool {
    if pattern.starts_with('#') {
        return false;
    }
    let bangs = pattern.chars().take_while(|c| *c == '!').count();
    let negate = bangs % 2 == 1;
    let pattern = &pattern[bangs..];
    let path = path.to_lowercase();
    let path_segments: Vec<&str> = path.split('/').collect();
    let matched = expand_braces(&pattern.to_lowercase()).iter().any(|p| {
        let segments: Vec<&str> = p.split('/').collect();
        match_segments(&path_segments, &segments)
    });
    matched != negate
}

fn match_segments(path: &[&str], pattern: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => {
            // `**` takes zero or more segments, none of them dot-segments.
            for skip in 0..=path.len() {
                if match_segments(&path[skip..], rest) {
                    return true;
                }
                if skip < path.len() && path[skip].starts_with('.') {
                    return false;
                }
            }
            false
        }
        Some((seg, rest)) => match path.split_first() {
            Some((p, prest)) => match_segment(p, seg) && match_segments(prest, rest),
            None => false,
        },
    }
}

#[derive(Debug)]
enum Token {
    Char(char),
    Star,
    One,
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

fn parse_segment(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                tokens.push(Token::Char(chars[i + 1]));
                i += 2;
            }
            '*' => {
                if !matches!(tokens.last(), Some(Token::Star)) {
                    tokens.push(Token::Star);
                }
                i += 1;
            }
            '?' => {
                tokens.push(Token::One);
                i += 1;
            }
            '[' => match parse_class(&chars, i) {
                Some((token, next)) => {
                    tokens.push(token);
                    i = next;
                }
                None => {
                    tokens.push(Token::Char('['));
                    i += 1;
                }
            },
            c => {
                tokens.push(Token::Char(c));
                i += 1;
            }
        }
    }
    tokens
}

/// A `[...]` class starting at `start`; `None` if it is not closed.
fn parse_class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            return Some((Token::Class { negated, items }, i + 1));
        }
        first = false;
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|e| *e != ']') {
            items.push((c, chars[i + 2]));
            i += 3;
        } else {
            items.push((c, c));
            i += 1;
        }
    }
    None
}

fn match_segment(text: &str, pattern: &str) -> bool {
    let tokens = parse_segment(pattern);
    // Wildcards never match a leading dot; only a literal `.` does.
    if text.starts_with('.') && !matches!(tokens.first(), Some(Token::Char('.'))) {
        return false;
    }
    let text: Vec<char> = text.chars().collect();
    match_tokens(&text, &tokens)
}

fn match_tokens(text: &[char], tokens: &[Token]) -> bool {
    match tokens.split_first() {
        None => text.is_empty(),
        Some((Token::Star, rest)) => (0..=text.len()).any(|skip| match_tokens(&text[skip..], rest)),
        Some((token, rest)) => match text.split_first() {
            None => false,
            Some((c, trest)) => {
                let ok = match token {
                    Token::Char(p) => p == c,
                    Token::One => true,
                    Token::Class { negated, items } => {
                        items.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated
                    }
                    Token::Star => false,
                };
                ok && match_tokens(trest, rest)
            }
        },
    }
}

/// Brace expansion: `a{b,c}d` → `abd`, `acd`; `{1..3}` and `{a..c}` ranges; nested braces.
fn expand_braces(pattern: &str) -> Vec<String> {
    let Some((open, close)) = find_brace(pattern) else {
        return vec![pattern.to_string()];
    };
    let pre = &pattern[..open];
    let body = &pattern[open + 1..close];
    let post = &pattern[close + 1..];
    let alternatives = match split_top_level(body) {
        parts if parts.len() > 1 => parts,
        _ => match expand_range(body) {
            Some(range) => range,
            // `{a}` is literal; keep expanding what follows.
            None => {
                return expand_braces(post)
                    .into_iter()
                    .map(|p| format!("{pre}{{{body}}}{p}"))
                    .collect();
            }
        },
    };
    let mut out = Vec::new();
    for alt in alternatives {
        for rest in expand_braces(&format!("{alt}{post}")) {
            out.push(format!("{pre}{rest}"));
        }
    }
    out
}

/// The first `{` with its matching `}` (byte offsets).
fn find_brace(s: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut open = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return open.map(|o| (o, i));
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(body: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

fn expand_range(body: &str) -> Option<Vec<String>> {
    let (a, b) = body.split_once("..")?;
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let range: Vec<i64> = if x <= y {
            (x..=y).collect()
        } else {
            (y..=x).rev().collect()
        };
        return Some(range.into_iter().map(|n| n.to_string()).collect());
    }
    let (mut ca, mut cb) = (a.chars(), b.chars());
    match (ca.next(), ca.next(), cb.next(), cb.next()) {
        (Some(x), None, Some(y), None) => {
            let (lo, hi) = (x as u32, y as u32);
            let codes: Vec<u32> = if lo <= hi {
                (lo..=hi).collect()
            } else {
                (hi..=lo).rev().collect()
            };
            Some(
                codes
                    .into_iter()
                    .filter_map(char::from_u32)
                    .map(String::from)
                    .collect(),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::glob_match as m;

    #[test]
    fn star_stays_within_a_segment() {
        assert!(m("anthropic/claude-sonnet-4", "anthropic/*"));
        assert!(m("claude-sonnet-4", "*sonnet*"));
        assert!(!m("anthropic/claude-sonnet-4", "*sonnet*"));
        assert!(!m("openrouter/anthropic/claude", "openrouter/*"));
        assert!(m("openrouter/anthropic/claude", "openrouter/**"));
        assert!(m("OpenAI/GPT-5", "openai/gpt-?"));
    }

    #[test]
    fn classes_braces_and_negation() {
        assert!(m("p/m1", "p/m[0-9]"));
        assert!(!m("p/mx", "p/m[!a-z]"));
        assert!(m("p/b", "p/{a,b}"));
        assert!(m("p/m2", "p/m{1..3}"));
        assert!(!m("p/a", "!p/a"));
        assert!(m("p/b", "!p/a"));
        assert!(m("p/bracketed-model[1m", "p/bracketed-model[1m"));
    }

    #[test]
    fn wildcards_skip_dot_segments() {
        assert!(!m("p/.hidden", "p/*"));
        assert!(m("p/.hidden", "p/.*"));
    }
}
