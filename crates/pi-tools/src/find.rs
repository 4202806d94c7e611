//! The `find` tool, in process with the crates fd is built on and fd's defaults as Pi invokes
//! it (`fd --hidden --glob [--full-path] [--no-require-git] --max-results <limit+1>`): glob
//! patterns match file names, or, when they contain `/`, whole paths anchored at the search
//! directory; `.gitignore` is honored everywhere; directories carry a trailing `/`. Results are
//! in sorted path order.

use crate::config::ToolsConfig;
use crate::paths::{home_dir, resolve_to_cwd};
use crate::tool_util::{
    aborted, declaration, effective_limit, listing_result, num_arg, prop, str_arg, text_result,
};
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, truncate_head};
use globset::GlobBuilder;
use ignore::WalkBuilder;
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_js::number_to_string as js_number;
use pi_protocol::tool::{AgentToolResult, Tool};
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};
use serde_json::{Map, Value, json};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const DEFAULT_LIMIT: usize = 1000;

pub struct FindTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl FindTool {
    pub fn new(config: Arc<ToolsConfig>) -> FindTool {
        let description = "Find files whose paths match a glob pattern; paths come back relative to \
             the searched directory and files ignored by .gitignore are skipped. At most 1000 \
             results or 50KB are returned, whichever limit is reached first.";
        let parameters = json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": prop("string", "Glob to match, relative to the searched directory, such as 'src/**/*.ts'; a glob without '/', such as '*.ts', matches file names in any directory"),
                "path": prop("string", "Directory to search (defaults to the current directory)"),
                "limit": prop("number", "Most results to return (defaults to 1000)"),
            }
        });
        FindTool {
            config,
            declaration: declaration("find", description, parameters, false),
        }
    }
}

impl AgentTool for FindTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        crate::tool_util::run_blocking(self.config.clone(), invocation, find)
    }
}

/// fd's smart case: a pattern is case-sensitive when its regex has an uppercase literal.
fn has_uppercase_literal(regex: &str) -> bool {
    fn walk(hir: &Hir) -> bool {
        match hir.kind() {
            HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
                Ok(s) => s.chars().any(char::is_uppercase),
                Err(_) => lit.0.iter().any(|b| char::from(*b).is_uppercase()),
            },
            HirKind::Class(Class::Unicode(c)) => c
                .iter()
                .any(|r| r.start().is_uppercase() || r.end().is_uppercase()),
            HirKind::Class(Class::Bytes(c)) => c.iter().any(|r| {
                char::from(r.start()).is_uppercase() || char::from(r.end()).is_uppercase()
            }),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Concat(list) | HirKind::Alternation(list) => list.iter().any(walk),
            _ => false,
        }
    }
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(regex)
        .map(|hir| walk(&hir))
        .unwrap_or(false)
}

fn inside_git_repo(search_path: &Path) -> bool {
    search_path.ancestors().any(|dir| dir.join(".git").exists())
}

/// The pattern as Pi hands it to fd, with the flags it implies.
struct Pattern {
    regex: Regex,
    full_path: bool,
}

fn build_pattern(pattern: &str, search_path: &Path) -> Result<Pattern, String> {
    let mut effective = pattern;
    while let Some(rest) = effective.strip_prefix("./") {
        effective = rest;
    }
    let is_path_pattern = effective.contains('/');
    let lowercase = effective == effective.to_lowercase();
    let mut glob = effective.to_string();
    let mut force_ignore_case = false;
    if is_path_pattern && !effective.starts_with('/') {
        // Anchor at the search directory, whose own characters must not act as glob syntax.
        let root = search_path.to_string_lossy();
        let root = root.trim_end_matches('/');
        let mut escaped = String::with_capacity(root.len());
        for c in root.chars() {
            if matches!(c, '\\' | '*' | '?' | '[' | ']' | '{' | '}') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        glob = format!("{escaped}/{effective}");
        force_ignore_case = lowercase;
    }
    let regex_text = if glob.is_empty() {
        String::new()
    } else {
        GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("[fd error]: {e}"))?
            .regex()
            .to_string()
    };
    let case_sensitive = !force_ignore_case && has_uppercase_literal(&regex_text);
    let regex = RegexBuilder::new(&regex_text)
        .case_insensitive(!case_sensitive)
        .dot_matches_new_line(true)
        .build()
        .map_err(|e| format!("[fd error]: {e}"))?;
    Ok(Pattern {
        regex,
        full_path: is_path_pattern,
    })
}

/// A result as Pi shows it: fd prints the path (a directory's with a trailing `/`), and Pi
/// trims that line and makes it relative to the search directory, keeping the trailing `/`.
fn shown_path(path: &Path, is_dir: bool, search_path: &Path) -> String {
    // Checked as UTF-8 first: the lossy conversion walks the bytes in chunks, ~7x slower on
    // the (usual) valid path.
    let bytes = path.as_os_str().as_bytes();
    let lossy = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let printed = if is_dir {
        std::borrow::Cow::Owned(format!("{lossy}/"))
    } else {
        lossy
    };
    let printed = pi_js::trim(&printed);
    let bare = printed.trim_end_matches('/');
    // Relative to a `str`, so still UTF-8.
    let relative = crate::tool_util::walk_relative(Path::new(bare), search_path);
    let mut shown = match relative.to_str() {
        Some(text) => text.to_owned(),
        None => relative.to_string_lossy().into_owned(),
    };
    if printed.ends_with('/') && !shown.ends_with('/') {
        shown.push('/');
    }
    shown
}

fn find(
    config: &ToolsConfig,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let search_path = resolve_to_cwd(
        str_arg(args, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or("."),
        &config.cwd,
    );
    let limit = effective_limit(num_arg(args, "limit"), DEFAULT_LIMIT);
    let pattern = build_pattern(str_arg(args, "pattern").unwrap_or_default(), &search_path)
        .map_err(ToolError::new)?;
    if !std::fs::metadata(&search_path).is_ok_and(|m| m.is_dir()) {
        return Err(ToolError::new(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            search_path.display()
        )));
    }
    let mut walk = WalkBuilder::new(&search_path);
    walk.hidden(false)
        .ignore(true)
        .parents(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(inside_git_repo(&search_path))
        .follow_links(false)
        .sort_by_file_path(crate::tool_util::cmp_sibling_paths)
        .add_custom_ignore_filename(".fdignore");
    let global_ignore = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| home_dir().join(".config"))
        .join("fd")
        .join("ignore");
    if global_ignore.is_file() {
        let _ = walk.add_ignore(global_ignore);
    }
    let mut stored: Vec<String> = Vec::new();
    let mut count = 0usize;
    let mut output_bytes = 0usize;
    let mut limit_reached = false;
    for entry in walk.build() {
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        // Unreadable entries are skipped silently, as fd does without --show-errors.
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let path = entry.path();
        let subject = if pattern.full_path {
            path.as_os_str().as_bytes()
        } else {
            entry.file_name().as_bytes()
        };
        if !pattern.regex.is_match(subject) {
            continue;
        }
        if count == limit {
            limit_reached = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let shown = shown_path(path, is_dir, &search_path);
        count += 1;
        let kept = output_bytes <= DEFAULT_MAX_BYTES + 1;
        output_bytes += shown.len() + 1;
        if kept {
            stored.push(shown);
        }
    }
    if count == 0 {
        return Ok(text_result("No files found matching pattern", None));
    }
    let mut truncation = truncate_head(&stored.join("\n"), Limits::bytes_only());
    truncation.total_lines = count;
    truncation.total_bytes = output_bytes - 1;
    let notice = limit_reached.then(|| {
        let text = format!(
            "{} results limit reached. Use limit={} for more, or refine pattern",
            js_number(limit as f64),
            js_number(limit as f64 * 2.0)
        );
        (text, "resultLimitReached", limit)
    });
    Ok(listing_result(truncation, notice))
}
