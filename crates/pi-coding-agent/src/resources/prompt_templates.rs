//! Prompt templates (`docs/prompt-templates.md`, Pi's `prompt-templates.js`): markdown files
//! whose body becomes the prompt when the user types `/name args`.
//!
//! * The name is the file name without `.md`; the description is the frontmatter's, else the
//!   first non-blank body line (60 characters, then `...`).
//! * Folders given as paths are read one level deep (dot files included, as in Pi).
//! * Arguments split like a shell's (`"a b"`, `'a b'`), then `$1`, `$@`, `$ARGUMENTS`,
//!   `${1:-default}`, `${@:-default}`, `${@:2}` and `${@:2:1}` are substituted once.

use super::frontmatter;
use super::skills::{entry_kind, sorted_entries};
use super::source::{Diagnostic, Metadata};
use crate::settings::paths::{CONFIG_DIR_NAME, resolve_path_trimmed};
use pi_js::is_whitespace as is_js_whitespace;
use pi_protocol::results::{SourceInfo, SourceScope};
use std::path::{Path, PathBuf};

/// A loaded prompt template.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTemplate {
    pub name: String,
    pub description: String,
    /// `argument-hint` from the frontmatter.
    pub argument_hint: Option<String>,
    /// The body (without frontmatter).
    pub content: String,
    pub source_info: SourceInfo,
    pub file_path: PathBuf,
}

/// Loads the templates at `paths` (files or folders; missing ones are skipped silently).
pub fn load_prompt_templates(
    paths: &[PathBuf],
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
) -> (Vec<PromptTemplate>, Vec<Diagnostic>) {
    let global_dir = agent_dir.join("prompts");
    let project_dir = cwd.join(CONFIG_DIR_NAME).join("prompts");
    let source_info = |path: &Path| -> SourceInfo {
        if path.starts_with(&global_dir) {
            Metadata::new("local", SourceScope::User, Some(&global_dir)).source_info(path)
        } else if path.starts_with(&project_dir) {
            Metadata::new("local", SourceScope::Project, Some(&project_dir)).source_info(path)
        } else {
            let base = path.parent().unwrap_or(path);
            Metadata::new("local", SourceScope::Temporary, Some(base)).source_info(path)
        }
    };
    let mut templates = Vec::new();
    let mut diagnostics = Vec::new();
    for raw in paths {
        let resolved = resolve_path_trimmed(&raw.to_string_lossy(), cwd, home);
        let (is_dir, is_file) = entry_kind(&resolved);
        if is_dir {
            for (name, path) in sorted_entries(&resolved) {
                if entry_kind(&path).1
                    && name.ends_with(".md")
                    && let Some(t) = load_file(&path, source_info(&path), &mut diagnostics)
                {
                    templates.push(t);
                }
            }
        } else if is_file
            && resolved.to_string_lossy().ends_with(".md")
            && let Some(t) = load_file(&resolved, source_info(&resolved), &mut diagnostics)
        {
            templates.push(t);
        }
    }
    (templates, diagnostics)
}

fn load_file(
    path: &Path,
    source_info: SourceInfo,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<PromptTemplate> {
    let raw = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            let message = crate::settings::file::node_io_message(&e, path);
            diagnostics.push(Diagnostic::warning(&message, path));
            return None;
        }
    };
    let parsed = match frontmatter::parse(&raw) {
        Ok(p) => p,
        Err(e) => {
            diagnostics.push(Diagnostic::warning(&e.to_string(), path));
            return None;
        }
    };
    let file_name = path.file_name()?.to_string_lossy().into_owned();
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(&file_name)
        .to_string();
    let description = match parsed.string("description").filter(|d| !d.is_empty()) {
        Some(d) => d.to_string(),
        None => parsed
            .body
            .split('\n')
            .find(|l| !pi_js::trim(l).is_empty())
            .map(|first| {
                let (head, cut) = js_prefix(first, 60);
                if cut {
                    format!("{head}...")
                } else {
                    head.to_string()
                }
            })
            .unwrap_or_default(),
    };
    Some(PromptTemplate {
        name,
        description,
        argument_hint: parsed
            .string("argument-hint")
            .filter(|h| !h.is_empty())
            .map(str::to_string),
        content: parsed.body.clone(),
        source_info,
        file_path: path.to_path_buf(),
    })
}

/// The first `n` UTF-16 units of `s` (JavaScript's `slice(0, n)`) and whether it was cut.
fn js_prefix(s: &str, n: usize) -> (&str, bool) {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > n {
            return (&s[..i], true);
        }
        units += c.len_utf16();
    }
    (s, false)
}

/// Pi's `parseCommandArgs`: whitespace separates arguments; a quote opens only at the start of
/// an argument (`it's` stays one word); `\"` inside double quotes is a quote; `""` is an empty
/// argument; an unclosed quote is read again as a literal character.
pub fn parse_command_args(input: &str) -> Vec<String> {
    let chars: Vec<char> = input.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&q) {
                current.push(q);
                i += 1;
            } else if c == q {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if is_js_whitespace(c) {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i == chars.len() - 1 {
            // Unclosed: keep the quote as text and read on after it.
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// Pi's `substituteArgs`: one pass over `content`; values are not substituted again.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        match placeholder(tail, args, &all) {
            Some((value, len)) => {
                out.push_str(&value);
                rest = &tail[len..];
            }
            None => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// JavaScript's `parseInt` of a digit string, saturating (huge indexes just miss).
fn parse_index(d: &str) -> usize {
    d.parse::<usize>().unwrap_or(usize::MAX)
}

/// The placeholder at the start of `s` (which starts with `$`): its value and length.
fn placeholder(s: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    let body = &s[1..];
    if let Some(inner) = body.strip_prefix('{') {
        // ${N:-default}, ${@:-default}, ${ARGUMENTS:-default}
        let target_len = if inner.starts_with("ARGUMENTS") {
            9
        } else if inner.starts_with('@') {
            1
        } else {
            digits(inner)
        };
        if target_len > 0 && inner[target_len..].starts_with(":-") {
            let target = &inner[..target_len];
            let default_start = target_len + 2;
            if let Some(close) = inner[default_start..].find('}') {
                let default = &inner[default_start..default_start + close];
                let value = match target {
                    "@" | "ARGUMENTS" => Some(all),
                    n => parse_index(n)
                        .checked_sub(1)
                        .and_then(|i| args.get(i))
                        .map(String::as_str),
                };
                let value = value.filter(|v| !v.is_empty()).unwrap_or(default);
                return Some((value.to_string(), 2 + default_start + close + 1));
            }
        }
        // ${@:N} and ${@:N:L}
        if let Some(slice) = inner.strip_prefix("@:") {
            let n = digits(slice);
            if n > 0 {
                let start = parse_index(&slice[..n]).saturating_sub(1);
                let after = &slice[n..];
                let (len, consumed) = match after.strip_prefix(':') {
                    Some(l) if digits(l) > 0 && l[digits(l)..].starts_with('}') => {
                        (Some(parse_index(&l[..digits(l)])), 1 + digits(l))
                    }
                    _ => (None, 0),
                };
                if after[consumed..].starts_with('}') {
                    let from = start.min(args.len());
                    let to = len.map_or(args.len(), |l| from.saturating_add(l).min(args.len()));
                    let value = args[from..to.max(from)].join(" ");
                    return Some((value, 1 + 1 + 2 + n + consumed + 1));
                }
            }
        }
        return None;
    }
    if body.starts_with("ARGUMENTS") {
        return Some((all.to_string(), 10));
    }
    if body.starts_with('@') {
        return Some((all.to_string(), 2));
    }
    let n = digits(body);
    if n > 0 {
        let value = parse_index(&body[..n])
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .cloned()
            .unwrap_or_default();
        return Some((value, 1 + n));
    }
    None
}

/// Pi's `expandPromptTemplate`: `/name args` with a known template name becomes its body with
/// the arguments substituted; anything else is returned unchanged.
pub fn expand_prompt_template(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_string();
    };
    let name_end = rest.find(is_js_whitespace).unwrap_or(rest.len());
    if name_end == 0 {
        return text.to_string();
    }
    let name = &rest[..name_end];
    let args = rest[name_end..].trim_start_matches(is_js_whitespace);
    match templates.iter().find(|t| t.name == name) {
        Some(t) => substitute_args(&t.content, &parse_command_args(args)),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn argument_parsing_like_pi() {
        assert_eq!(parse_command_args("a  b\tc"), args(&["a", "b", "c"]));
        assert_eq!(
            parse_command_args(r#""quoted arg" 'single \' quote' x\"y "unclosed"#),
            args(&["quoted arg", "single ' quote", "x\\\"y", "\"unclosed"])
        );
        assert_eq!(parse_command_args(r#"a "" c"#), args(&["a", "", "c"]));
        assert_eq!(parse_command_args("it's fine"), args(&["it's", "fine"]));
        assert_eq!(
            parse_command_args("'open and more"),
            args(&["'open", "and", "more"])
        );
        assert_eq!(parse_command_args(""), Vec::<String>::new());
    }

    #[test]
    fn substitution_like_pi() {
        // Recorded from Pi: validation/expected/default.json.
        let t = "Defaults: ${1:-one} ${2:-two} ${@:-none} ${ARGUMENTS:-none}; slice ${@:0}; $10; $$1; ${@:3:0}\n";
        assert_eq!(
            substitute_args(t, &[]),
            "Defaults: one two none none; slice ; ; $; \n"
        );
        assert_eq!(
            substitute_args(t, &args(&["a", "", "c"])),
            "Defaults: a two a  c a  c; slice a  c; ; $a; \n"
        );
        assert_eq!(
            substitute_args(
                "$1, $ARGUMENTS, ${@:2}, ${@:2:1}, ${x} ${@:} $",
                &args(&["a", "b", "c"])
            ),
            "a, a b c, b c, b, ${x} ${@:} $"
        );
        // Values are not substituted again.
        assert_eq!(substitute_args("$1 $2", &args(&["$2", "x"])), "$2 x");
    }

    #[test]
    fn expansion_needs_a_known_name() {
        let t = PromptTemplate {
            name: "review".into(),
            description: String::new(),
            argument_hint: None,
            content: "Review $1 (${@:2})".into(),
            source_info: Metadata::new("local", SourceScope::Temporary, None)
                .source_info(Path::new("/x")),
            file_path: PathBuf::from("/x"),
        };
        let ts = [t];
        assert_eq!(
            expand_prompt_template("/review a.rs b c", &ts),
            "Review a.rs (b c)"
        );
        assert_eq!(
            expand_prompt_template("/review\n\ta.rs", &ts),
            "Review a.rs ()"
        );
        assert_eq!(expand_prompt_template("/review", &ts), "Review  ()");
        assert_eq!(expand_prompt_template("/other x", &ts), "/other x");
        assert_eq!(expand_prompt_template("review", &ts), "review");
        assert_eq!(expand_prompt_template("/", &ts), "/");
    }

    #[test]
    fn description_falls_back_to_the_first_line() {
        assert_eq!(js_prefix("abc", 2), ("ab", true));
        assert_eq!(js_prefix("ab", 2), ("ab", false));
        assert_eq!(js_prefix("😀x", 2), ("😀", true));
    }
}
