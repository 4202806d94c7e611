//! Scalars: quoted and block scalar folding, escapes, and the core schema's plain scalars.

use super::Yaml;

/// A key's text as JavaScript would name it.
pub(super) fn scalar_key(text: &str) -> String {
    match resolve_plain(text) {
        Yaml::String(s) => s,
        Yaml::Null => String::new(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => {
            let mut s = String::new();
            pi_js::json::push_js_number(&mut s, n);
            s
        }
        _ => text.to_string(),
    }
}

/// A quoted scalar on one line: its value and the byte offset after the closing quote.
pub(super) fn quoted_single_line(content: &str, q: char) -> Option<(String, usize)> {
    let (raw, end) = scan_quoted(&content[1..], q)?;
    if raw.contains('\n') {
        return None;
    }
    Some((fold_quoted(&raw, q), end + 1))
}

/// Finds the closing quote in `s` (which starts after the opening one): the raw text between
/// the quotes and the offset after the closing one.
pub(super) fn scan_quoted(s: &str, q: char) -> Option<(String, usize)> {
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if q == '"' && c == '\\' {
            chars.next();
        } else if c == q {
            if q == '\'' && chars.peek().map(|(_, c)| *c) == Some('\'') {
                chars.next();
                continue;
            }
            return Some((s[..i].to_string(), i + 1));
        }
    }
    None
}

/// A quoted scalar's value: line folding, then escapes (double quotes) or `''` (single).
pub(super) fn fold_quoted(raw: &str, q: char) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = raw.split('\n').collect();
    let last = lines.len() - 1;
    let mut empty = 0;
    let mut pending_break = false;
    for (i, line) in lines.iter().enumerate() {
        let mut l = *line;
        if i > 0 {
            l = l.trim_start_matches([' ', '\t']);
        }
        // An escaped line break (`\` at the end) joins lines without a space.
        let escaped_break = q == '"' && i < last && ends_with_odd_backslashes(l);
        if i < last && !escaped_break {
            l = l.trim_end_matches([' ', '\t']);
        }
        if i > 0 && i < last && l.is_empty() {
            empty += 1;
            continue;
        }
        if pending_break {
            if empty == 0 {
                out.push(' ');
            } else {
                out.push_str(&"\n".repeat(empty));
            }
        }
        empty = 0;
        if escaped_break {
            out.push_str(&unescape(&l[..l.len() - 1]));
            pending_break = false;
        } else {
            out.push_str(&if q == '"' {
                unescape(l)
            } else {
                l.replace("''", "'")
            });
            pending_break = true;
        }
    }
    out
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let mut hex = |n: usize| -> Option<char> {
            let h: String = chars.by_ref().take(n).collect();
            u32::from_str_radix(&h, 16).ok().and_then(char::from_u32)
        };
        match e {
            '0' => out.push('\0'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            't' | '\t' => out.push('\t'),
            'n' => out.push('\n'),
            'v' => out.push('\u{B}'),
            'f' => out.push('\u{C}'),
            'r' => out.push('\r'),
            'e' => out.push('\u{1B}'),
            ' ' => out.push(' '),
            '"' => out.push('"'),
            '/' => out.push('/'),
            '\\' => out.push('\\'),
            'N' => out.push('\u{85}'),
            '_' => out.push('\u{A0}'),
            'L' => out.push('\u{2028}'),
            'P' => out.push('\u{2029}'),
            'x' => out.push(hex(2).unwrap_or('\u{FFFD}')),
            'u' => out.push(hex(4).unwrap_or('\u{FFFD}')),
            'U' => out.push(hex(8).unwrap_or('\u{FFFD}')),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// The value of a literal (`|`) or folded (`>`) block scalar from its lines (content
/// indentation removed; blank lines empty), with clip (` `), strip (`-`) or keep (`+`) chomping.
pub(super) fn fold_block(lines: &[String], literal: bool, chomp: char) -> String {
    let mut out = String::new();
    let mut empty = 0;
    let mut read_content = false;
    let mut more_indented = false;
    for line in lines {
        if line.is_empty() {
            empty += 1;
            continue;
        }
        if literal {
            let n = if read_content { 1 + empty } else { empty };
            out.push_str(&"\n".repeat(n));
        } else if line.starts_with([' ', '\t']) {
            more_indented = true;
            let n = if read_content { 1 + empty } else { empty };
            out.push_str(&"\n".repeat(n));
        } else if more_indented {
            more_indented = false;
            out.push_str(&"\n".repeat(empty + 1));
        } else if empty == 0 {
            if read_content {
                out.push(' ');
            }
        } else {
            out.push_str(&"\n".repeat(empty));
        }
        out.push_str(line);
        read_content = true;
        empty = 0;
    }
    match chomp {
        '-' => {}
        '+' => {
            let n = if read_content { 1 + empty } else { empty };
            out.push_str(&"\n".repeat(n));
        }
        _ => {
            if read_content {
                out.push('\n');
            }
        }
    }
    out
}

/// A plain scalar under the core schema.
pub(super) fn resolve_plain(s: &str) -> Yaml {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Yaml::Null,
        "true" | "True" | "TRUE" => return Yaml::Bool(true),
        "false" | "False" | "FALSE" => return Yaml::Bool(false),
        ".nan" | ".NaN" | ".NAN" => return Yaml::Number(f64::NAN),
        _ => {}
    }
    let (sign, unsigned) = match s.as_bytes()[0] {
        b'-' => (-1.0, &s[1..]),
        b'+' => (1.0, &s[1..]),
        _ => (1.0, s),
    };
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Yaml::Number(sign * f64::INFINITY);
    }
    if let Some(oct) = s
        .strip_prefix("0o")
        .filter(|d| !d.is_empty() && d.bytes().all(|b| (b'0'..=b'7').contains(&b)))
    {
        return Yaml::Number(u64::from_str_radix(oct, 8).map_or(f64::INFINITY, |v| v as f64));
    }
    if let Some(hex) = s
        .strip_prefix("0x")
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Yaml::Number(u64::from_str_radix(hex, 16).map_or(f64::INFINITY, |v| v as f64));
    }
    if is_core_float(unsigned)
        && let Ok(v) = s.parse::<f64>()
    {
        return Yaml::Number(v);
    }
    Yaml::String(s.to_string())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` (integers included).
fn is_core_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let int_digits = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac = digits(&mut i);
        if int_digits == 0 && frac == 0 {
            return false;
        }
    } else if int_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}
