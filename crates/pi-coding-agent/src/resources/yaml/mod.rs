//! The part of YAML 1.2 that skill and prompt-template frontmatter uses, parsed the way Pi's YAML
//! library (`yaml`, core schema) parses it.
//!
//! Why not a YAML crate: what matters is agreeing with Pi on which files load, what their values
//! are, and what the warning says for a file Pi rejects (the YAML error is the text of the startup
//! warning for a prompt template or a `SKILL.md`). Measured on the 103 blocks of the recorded
//! corpus (`tests/fixtures/resources/frontmatter/`, what Pi's own parser made of each), with each
//! crate wired in place of this parser: ours 103/103, `saphyr` 0.3 84/103, `yaml-rust2` 0.13
//! 84/103 (the same 19 cases; both share one scanner). Of those 19:
//!
//! * two load differently: `description:\ttab after colon` is a string for Pi and an error for
//!   the crates (`':' must be followed by a valid YAML whitespace`), and `\tdescription: tab
//!   indent` is an error for Pi (`Tabs are not allowed as indentation`) and a mapping for them;
//! * the other 17 are rejected by both, with other words: where Pi says `Nested mappings are not
//!   allowed in compact mappings` (`description: Use when: x`, `a: b: c`, a trailing `:`, `? odd`,
//!   an over-indented second key), `Map keys must be unique`, `Missing closing "quote`, `Plain
//!   value cannot start with reserved character @`, `Unexpected scalar at node end`, `All mapping
//!   items must start at the same column`, `Unexpected block-seq-ind on same line with key` or
//!   `Flow map in block collection must be sufficiently indented and end with a }`, the crates
//!   say `mapping values are not allowed in this context`, `duplicated key in mapping`, `while
//!   scanning a quoted scalar, found unexpected end of stream`, `unexpected character`, `invalid
//!   trailing content after double-quoted scalar`, `while parsing a block mapping, did not find
//!   expected key`, `block sequence entries are not allowed in this context` or `while parsing a
//!   flow mapping, did not find expected ',' or '}'`, mostly at other columns. Every one of Pi's
//!   18 rejections is thus reported differently.
//!
//! The resource fixtures (`tests/resources_fixtures.rs`) hold no invalid frontmatter and pass
//! with either crate; the corpus is what decides.
//!
//! Supported: block mappings and sequences (also a sequence at its key's indentation), plain
//! scalars over several lines, single- and double-quoted scalars (all escapes, line folding),
//! literal and folded block scalars (chomping and indentation indicators), flow sequences and
//! mappings, comments, anchors and aliases, the `!!str` tag, simple explicit keys (`? key`),
//! and the core schema (null, booleans, decimal/octal/hex integers, floats, `.inf`, `.nan`).
//! Errors carry the first line of the library's message (`<reason> at line L, column C:`).
//! Not supported (rejected as errors): multiple documents, directives, complex keys.

mod flow;
mod scalar;

use flow::FlowParser;
use scalar::{fold_block, fold_quoted, quoted_single_line, resolve_plain, scalar_key, scan_quoted};
use std::collections::HashMap;
use std::fmt;

/// A parsed YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Seq(Vec<Yaml>),
    /// Keys in document order (non-string keys are written as strings, as JavaScript does).
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// The member `key` of a mapping (`None` for other values).
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as JSON (what `JSON.stringify` of Pi's parse result shows).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Yaml::Null => Value::Null,
            Yaml::Bool(b) => Value::Bool(*b),
            Yaml::Number(n) => pi_js::json::js_number_value(*n),
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Seq(items) => Value::Array(items.iter().map(Yaml::to_json).collect()),
            Yaml::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Why a document could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub reason: String,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {}, column {}:",
            self.reason, self.line, self.column
        )
    }
}

type Result<T> = std::result::Result<T, YamlError>;

/// Parses one YAML document (newlines already normalized to `\n`).
pub fn parse(src: &str) -> Result<Yaml> {
    let mut p = Parser {
        lines: src.lines().map(str::to_string).collect(),
        pos: 0,
        anchors: HashMap::new(),
    };
    p.check_tabs()?;
    p.skip_blank();
    if p.pos >= p.lines.len() {
        return Ok(Yaml::Null);
    }
    let node = p.node(-1)?;
    p.skip_blank();
    if p.pos < p.lines.len() {
        return Err(p.err_at(p.pos, indent(&p.lines[p.pos]), "Unexpected content"));
    }
    Ok(node)
}

struct Parser {
    lines: Vec<String>,
    pos: usize,
    anchors: HashMap<String, Yaml>,
}

fn indent(line: &str) -> usize {
    line.bytes().take_while(|b| *b == b' ').count()
}

fn is_blank(line: &str) -> bool {
    let t = line.trim_start_matches([' ', '\t']);
    t.is_empty() || t.starts_with('#')
}

/// Where a ` #` comment starts in `s` (a `#` at the start or after whitespace).
fn comment_start(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    (0..bytes.len()).find(|&i| bytes[i] == b'#' && (i == 0 || matches!(bytes[i - 1], b' ' | b'\t')))
}

/// The end of a plain mapping key in `s`: the first `:` followed by a space, a tab or the end.
fn key_colon(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let limit = comment_start(s).unwrap_or(bytes.len());
    (0..limit).find(|&i| bytes[i] == b':' && matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')))
}

fn starts_seq_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ") || content.starts_with("-\t")
}

impl Parser {
    fn err_at(&self, line: usize, col: usize, reason: &str) -> YamlError {
        YamlError {
            reason: reason.to_string(),
            line: line + 1,
            column: col + 1,
        }
    }

    fn check_tabs(&self) -> Result<()> {
        for (i, line) in self.lines.iter().enumerate() {
            let rest = &line[indent(line)..];
            if rest.starts_with('\t') && !is_blank(line) {
                return Err(self.err_at(i, indent(line), "Tabs are not allowed as indentation"));
            }
        }
        Ok(())
    }

    fn skip_blank(&mut self) {
        while self.pos < self.lines.len() && is_blank(&self.lines[self.pos]) {
            self.pos += 1;
        }
    }

    /// The node starting on the current (non-blank) line, which is indented more than `parent`.
    fn node(&mut self, parent: isize) -> Result<Yaml> {
        let line = self.lines[self.pos].clone();
        let n = indent(&line);
        let content = &line[n..];
        if starts_seq_item(content) {
            return self.sequence(n);
        }
        if self.is_mapping_line(content) {
            return self.mapping(n);
        }
        self.value(parent, n)
    }

    fn is_mapping_line(&self, content: &str) -> bool {
        if content.starts_with("? ") || content == "?" {
            return true;
        }
        if let Some(q @ ('"' | '\'')) = content.chars().next() {
            // A quoted key: the closing quote, then `:`.
            let mut chars = content.char_indices().skip(1).peekable();
            while let Some((i, c)) = chars.next() {
                if c == '\\' && q == '"' {
                    chars.next();
                } else if c == q {
                    if q == '\'' && chars.peek().map(|(_, c)| *c) == Some('\'') {
                        chars.next();
                        continue;
                    }
                    let rest = content[i + 1..].trim_start_matches([' ', '\t']);
                    return rest.starts_with(':')
                        && matches!(rest.as_bytes().get(1), None | Some(b' ' | b'\t'));
                }
            }
            return false;
        }
        if matches!(
            content.chars().next(),
            Some('[' | '{' | '|' | '>' | '&' | '*' | '!')
        ) {
            return false;
        }
        key_colon(content).is_some()
    }

    fn mapping(&mut self, n: usize) -> Result<Yaml> {
        let mut entries: Vec<(String, Yaml)> = Vec::new();
        loop {
            self.skip_blank();
            if self.pos >= self.lines.len() {
                break;
            }
            let line = self.lines[self.pos].clone();
            let ind = indent(&line);
            if ind < n {
                break;
            }
            if ind > n {
                return Err(self.err_at(
                    self.pos,
                    ind,
                    "All mapping items must start at the same column",
                ));
            }
            let content = &line[n..];
            let line_no = self.pos;
            let (key, value) = if let Some(rest) = content.strip_prefix('?') {
                self.explicit_entry(n, rest)?
            } else if starts_seq_item(content) {
                return Err(self.err_at(
                    line_no,
                    n,
                    "A block sequence may not be used as an implicit map key",
                ));
            } else {
                let (key, after) = self.key(content, line_no, n)?;
                let value = self.value_after(n, &line, n + after)?;
                (key, value)
            };
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(self.err_at(line_no, n, "Map keys must be unique"));
            }
            entries.push((key, value));
        }
        Ok(Yaml::Map(entries))
    }

    /// `? key` then `: value` on the next line at the same indentation.
    fn explicit_entry(&mut self, n: usize, rest: &str) -> Result<(String, Yaml)> {
        let key_text = match comment_start(rest) {
            Some(c) => &rest[..c],
            None => rest,
        };
        let key = scalar_key(key_text.trim());
        self.pos += 1;
        self.skip_blank();
        let line = self.lines.get(self.pos).cloned().unwrap_or_default();
        if indent(&line) == n && line[n..].starts_with(':') {
            let value = self.value_after(n, &line, n + 1)?;
            Ok((key, value))
        } else {
            Ok((key, Yaml::Null))
        }
    }

    /// A mapping key at the start of `content`; returns it and the offset just past its `:`.
    fn key(&self, content: &str, line_no: usize, n: usize) -> Result<(String, usize)> {
        if let Some(q @ ('"' | '\'')) = content.chars().next() {
            let (text, end) = quoted_single_line(content, q)
                .ok_or_else(|| self.err_at(line_no, n, "Missing closing quote"))?;
            let rest = &content[end..];
            let colon = rest.find(':').ok_or_else(|| {
                self.err_at(
                    line_no,
                    n,
                    "Implicit map keys need to be followed by map values",
                )
            })?;
            return Ok((text, end + colon + 1));
        }
        match key_colon(content) {
            Some(i) => Ok((scalar_key(content[..i].trim_end()), i + 1)),
            None => Err(self.err_at(
                line_no,
                n,
                "Implicit map keys need to be followed by map values",
            )),
        }
    }

    /// The value after a key's `:` (or a sequence's `-`) at byte `at` of `line` (the current
    /// line); the node belongs to a collection at indentation `n`.
    fn value_after(&mut self, n: usize, line: &str, at: usize) -> Result<Yaml> {
        let rest = &line[at..];
        let trimmed = rest.trim_start_matches([' ', '\t']);
        let col = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            self.pos += 1;
            return self.nested_value(n);
        }
        // Replace the line with just the value, at its column, and parse it as a node.
        self.lines[self.pos] = format!("{}{}", " ".repeat(col), trimmed);
        if starts_seq_item(trimmed) {
            return Err(self.err_at(
                self.pos,
                col,
                "Unexpected block-seq-ind on same line with key",
            ));
        }
        self.value(n as isize, col)
    }

    /// The value on the lines after a key with nothing after its colon.
    fn nested_value(&mut self, n: usize) -> Result<Yaml> {
        self.skip_blank();
        let Some(line) = self.lines.get(self.pos) else {
            return Ok(Yaml::Null);
        };
        let ind = indent(line);
        if ind > n {
            self.node(n as isize)
        } else if ind == n && starts_seq_item(&line[n..]) {
            // A sequence may sit at its key's indentation.
            self.sequence(n)
        } else {
            Ok(Yaml::Null)
        }
    }

    fn sequence(&mut self, n: usize) -> Result<Yaml> {
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            if self.pos >= self.lines.len() {
                break;
            }
            let line = self.lines[self.pos].clone();
            let ind = indent(&line);
            if ind != n || !starts_seq_item(&line[n..]) {
                if ind > n {
                    return Err(self.err_at(self.pos, ind, "Unexpected content in a sequence"));
                }
                break;
            }
            let rest = &line[n + 1..];
            let trimmed = rest.trim_start_matches([' ', '\t']);
            let col = line.len() - trimmed.len();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                self.pos += 1;
                self.skip_blank();
                let nested = self.lines.get(self.pos).is_some_and(|l| indent(l) > n);
                items.push(if nested {
                    self.node(n as isize)?
                } else {
                    Yaml::Null
                });
                continue;
            }
            // A compact collection (`- key: value`, `- - x`) is indented at the item's column.
            self.lines[self.pos] = format!("{}{}", " ".repeat(col), trimmed);
            if starts_seq_item(trimmed) {
                items.push(self.sequence(col)?);
            } else if self.is_mapping_line(trimmed) {
                items.push(self.mapping(col)?);
            } else {
                items.push(self.value(n as isize, col)?);
            }
        }
        Ok(Yaml::Seq(items))
    }

    /// A scalar, flow collection, alias or block scalar starting at column `col` of the current
    /// line; continuation lines must be indented more than `parent`.
    fn value(&mut self, parent: isize, col: usize) -> Result<Yaml> {
        let line = self.lines[self.pos].clone();
        let mut text = &line[col..];
        let mut col = col;
        let mut anchor = None;
        let mut force_string = false;
        // Node properties: `&anchor` and `!tag`, in any order.
        while let Some(first @ ('&' | '!')) = text.chars().next() {
            let end = text.find([' ', '\t']).unwrap_or(text.len());
            let prop = &text[..end];
            if first == '&' {
                anchor = Some(prop[1..].to_string());
            } else if prop == "!!str" {
                force_string = true;
            }
            let after = text[end..].trim_start_matches([' ', '\t']);
            col += text.len() - after.len();
            text = after;
        }
        let value = if text.is_empty() || text.starts_with('#') {
            self.pos += 1;
            self.nested_value(parent.max(0) as usize)?
        } else {
            self.value_text(parent, col, text)?
        };
        let value = match (force_string, value) {
            (true, Yaml::Number(_) | Yaml::Bool(_) | Yaml::Null) => {
                Yaml::String(text.split(" #").next().unwrap_or("").trim().to_string())
            }
            (_, v) => v,
        };
        if let Some(name) = anchor {
            self.anchors.insert(name, value.clone());
        }
        Ok(value)
    }

    fn value_text(&mut self, parent: isize, col: usize, text: &str) -> Result<Yaml> {
        let line_no = self.pos;
        let first = text.chars().next().unwrap_or(' ');
        match first {
            '*' => {
                let end = text.find([' ', '\t', ',']).unwrap_or(text.len());
                let name = &text[1..end];
                let value = self.anchors.get(name).cloned().ok_or_else(|| {
                    self.err_at(line_no, col, &format!("Aliased anchor not found: {name}"))
                })?;
                self.expect_node_end(&text[end..], col + end)?;
                self.pos += 1;
                Ok(value)
            }
            '|' | '>' => self.block_scalar(parent, col, text),
            '"' | '\'' => self.quoted(col, first),
            '[' | '{' => self.flow(col),
            '@' | '`' => Err(self.err_at(
                line_no,
                col,
                &format!("Plain value cannot start with reserved character {first}"),
            )),
            '%' => Err(self.err_at(
                line_no,
                col,
                "Plain value cannot start with directive indicator character %",
            )),
            '?' | ':' if text.len() == 1 || text[1..].starts_with([' ', '\t']) => Err(self.err_at(
                line_no,
                col,
                "Nested mappings are not allowed in compact mappings",
            )),
            _ => self.plain(parent, col, text),
        }
    }

    /// After a complete node on its line, only a comment may follow.
    fn expect_node_end(&self, rest: &str, col: usize) -> Result<()> {
        let t = rest.trim_start_matches([' ', '\t']);
        if t.is_empty() || (t.starts_with('#') && t.len() < rest.len()) {
            Ok(())
        } else {
            Err(self.err_at(self.pos, col, "Unexpected scalar at node end"))
        }
    }

    fn plain(&mut self, parent: isize, col: usize, text: &str) -> Result<Yaml> {
        let line_no = self.pos;
        let first = match comment_start(text) {
            Some(c) => text[..c].trim_end(),
            None => text.trim_end(),
        };
        let ends_early = comment_start(text).is_some();
        if key_colon(first).is_some() {
            return Err(self.err_at(
                line_no,
                col,
                "Nested mappings are not allowed in compact mappings",
            ));
        }
        let mut out = first.to_string();
        self.pos += 1;
        let mut multi = false;
        if !ends_early {
            let mut empty = 0;
            let mut i = self.pos;
            while i < self.lines.len() {
                let l = &self.lines[i];
                let t = l.trim_start_matches([' ', '\t']);
                if t.is_empty() {
                    empty += 1;
                    i += 1;
                    continue;
                }
                if (indent(l) as isize) <= parent || t.starts_with('#') {
                    break;
                }
                let cut = comment_start(t);
                let piece = cut.map_or(t, |c| &t[..c]).trim_end();
                if key_colon(piece).is_some() {
                    return Err(self.err_at(
                        line_no,
                        col,
                        "Nested mappings are not allowed in compact mappings",
                    ));
                }
                if empty == 0 {
                    out.push(' ');
                } else {
                    out.push_str(&"\n".repeat(empty));
                }
                out.push_str(piece);
                multi = true;
                empty = 0;
                i += 1;
                self.pos = i;
                if cut.is_some() {
                    break;
                }
            }
        }
        Ok(if multi {
            Yaml::String(out)
        } else {
            resolve_plain(&out)
        })
    }

    fn quoted(&mut self, col: usize, q: char) -> Result<Yaml> {
        // The rest of the document from the opening quote on, to scan across lines.
        let mut buf = self.lines[self.pos][col + 1..].to_string();
        for l in &self.lines[self.pos + 1..] {
            buf.push('\n');
            buf.push_str(l);
        }
        let Some((raw, end)) = scan_quoted(&buf, q) else {
            let last = self.lines.len() - 1;
            let reason = format!("Missing closing {q}quote");
            return Err(self.err_at(last, self.lines[last].len(), &reason));
        };
        let consumed_lines = buf[..end].matches('\n').count();
        let end_line = self.pos + consumed_lines;
        let end_col = if consumed_lines == 0 {
            col + 1 + end
        } else {
            end - buf[..end].rfind('\n').map_or(0, |p| p + 1)
        };
        let line = self.lines[end_line].clone();
        self.pos = end_line;
        self.expect_node_end(&line[end_col..], end_col)?;
        self.pos = end_line + 1;
        Ok(Yaml::String(fold_quoted(&raw, q)))
    }

    fn block_scalar(&mut self, parent: isize, col: usize, header: &str) -> Result<Yaml> {
        let literal = header.starts_with('|');
        let mut chomp = ' ';
        let mut explicit = None;
        let mut rest = &header[1..];
        for _ in 0..2 {
            match rest.chars().next() {
                Some(c @ ('+' | '-')) => chomp = c,
                Some(d @ '1'..='9') => explicit = d.to_digit(10),
                _ => break,
            }
            rest = &rest[1..];
        }
        let t = rest.trim_start_matches([' ', '\t']);
        if !(t.is_empty() || (t.starts_with('#') && t.len() < rest.len())) {
            return Err(self.err_at(
                self.pos,
                col,
                "Block scalar header includes extra characters",
            ));
        }
        let base = parent.max(-1);
        self.pos += 1;
        let mut content_indent = explicit.map(|d| (base.max(0) as usize) + d as usize);
        let mut lines: Vec<String> = Vec::new();
        while self.pos < self.lines.len() {
            let l = &self.lines[self.pos];
            let ind = indent(l);
            let blank = l.trim_start_matches(' ').is_empty();
            if blank {
                let keep = content_indent
                    .filter(|ci| l.len() > *ci)
                    .map(|ci| l[ci..].to_string());
                lines.push(keep.unwrap_or_default());
                self.pos += 1;
                continue;
            }
            if (ind as isize) <= base {
                break;
            }
            let ci = *content_indent.get_or_insert(ind);
            if ind < ci {
                return Err(self.err_at(
                    self.pos,
                    ind,
                    "All mapping items must start at the same column",
                ));
            }
            lines.push(l[ci..].to_string());
            self.pos += 1;
        }
        // Trailing blank lines belong to the scalar only for chomping; a following node's
        // leading blank lines were consumed too, which is harmless.
        Ok(Yaml::String(fold_block(&lines, literal, chomp)))
    }

    fn flow(&mut self, col: usize) -> Result<Yaml> {
        let start_line = self.pos;
        let mut buf = self.lines[self.pos][col..].to_string();
        for l in &self.lines[self.pos + 1..] {
            buf.push('\n');
            buf.push_str(l);
        }
        let mut fp = FlowParser {
            s: buf.as_bytes(),
            i: 0,
            src: &buf,
        };
        let value = fp
            .node()
            .map_err(|reason| self.err_at(start_line, col, &reason))?;
        let end = fp.i;
        let consumed = buf[..end].matches('\n').count();
        let end_line = start_line + consumed;
        let line = self.lines[end_line].clone();
        let end_col = if consumed == 0 {
            col + end
        } else {
            end - buf[..end].rfind('\n').map_or(0, |p| p + 1)
        };
        self.pos = end_line;
        self.expect_node_end(&line[end_col..], end_col)?;
        self.pos = end_line + 1;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(src: &str) -> serde_json::Value {
        match parse(src) {
            Ok(v) => v.to_json(),
            Err(e) => panic!("{src:?}: {e}"),
        }
    }

    #[test]
    fn scalars_and_collections() {
        assert_eq!(
            ok("a: 1\nb: true\nc: ~\nd: text"),
            json!({"a": 1, "b": true, "c": null, "d": "text"})
        );
        assert_eq!(
            ok("l:\n  - x\n  - k: v\n    k2: w\n  -\n    - nested"),
            json!({"l": ["x", {"k": "v", "k2": "w"}, ["nested"]]})
        );
        assert_eq!(
            ok("f: [a, 'b c', {x: 1}, [2]]"),
            json!({"f": ["a", "b c", {"x": 1}, [2]]})
        );
        assert_eq!(ok("d: \"a\\\n   b\""), json!({"d": "ab"}));
        assert_eq!(
            ok("a: 0o17\nb: -.inf\nc: 1e3\nd: 1.2.3"),
            json!({"a": 15, "b": null, "c": 1000, "d": "1.2.3"})
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("a: 1\nb: c: d").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Nested mappings are not allowed in compact mappings at line 2, column 4:"
        );
        assert!(parse("a: [1, 2").is_err());
        assert!(parse("a: *missing").is_err());
    }
}
