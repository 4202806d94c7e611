//! The `grep` tool, in process with ripgrep's own crates and ripgrep's defaults as Pi invokes
//! it (`rg --hidden --line-number [-i] [-F] [--glob] [--context]`): hidden files searched,
//! `.gitignore` honored inside git repositories, `.ignore`/`.rgignore` always, binary files
//! skipped. Files are searched in parallel but reported in sorted path order (`grep_walk`), so
//! results are deterministic.

use crate::config::ToolsConfig;
use crate::grep_walk::{FileOutcome, SearchSpec, search_in_order};
use crate::paths::resolve_to_cwd;
use crate::tool_util::{
    aborted, bool_arg, declaration, effective_limit, num_arg, prop, str_arg, text_result,
};
use crate::truncate::{
    DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, Limits, format_size, truncate_head, truncate_line,
};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_js::number_to_string as js_number;
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const DEFAULT_LIMIT: usize = 100;
/// Largest explicitly named file searched in memory (as ripgrep's memory map would).
const IN_MEMORY_LIMIT: u64 = 512 * 1024 * 1024;

pub struct GrepTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl GrepTool {
    pub fn new(config: Arc<ToolsConfig>) -> GrepTool {
        let description = "Search the contents of files for a pattern and return the matching lines \
             with their file paths and line numbers. Files ignored by .gitignore are skipped. \
             At most 100 matches or 50KB are returned, whichever limit is reached first, and \
             lines longer than 500 characters are shortened.";
        let parameters = json!({
            "type": "object",
            "required": ["pattern"],
            "properties": {
                "pattern": prop("string", "What to search for: a regular expression, or plain text with literal"),
                "path": prop("string", "Directory or file to search (defaults to the current directory)"),
                "glob": prop("string", "Only search files matching this glob, relative to path, such as 'src/**/*.ts'; a glob without '/', such as '*.ts', matches file names in any directory"),
                "ignoreCase": prop("boolean", "Ignore letter case (defaults to false)"),
                "literal": prop("boolean", "Match pattern as plain text rather than as a regular expression (defaults to false)"),
                "context": prop("number", "Lines of context to include before and after each match (defaults to 0)"),
                "limit": prop("number", "Most matches to return (defaults to 100)"),
            }
        });
        GrepTool {
            config,
            declaration: declaration("grep", description, parameters, false),
        }
    }
}

impl AgentTool for GrepTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        crate::tool_util::run_blocking(self.config.clone(), invocation, grep)
    }
}

/// ripgrep's hints on two common pattern errors.
fn explain_pattern_error(message: String) -> String {
    let message = if message.contains("the literal") && message.contains("not allowed") {
        format!(
            "{message}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
        )
    } else {
        message
    };
    if message.contains("pattern contains \"\\0\"") {
        format!(
            "{message}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\nbinary detection is enabled and matching a NUL byte is impossible."
        )
    } else {
        message
    }
}

/// Compiled matchers kept for patterns searched again (most recent last).
const KEPT_MATCHERS: usize = 8;

/// The matcher for `pattern`: the one compiled for an earlier call with the same pattern and
/// flags, or a new one. An agent often repeats a search (after an edit, in a later turn), and
/// compiling is a large part of a short search: a Unicode class such as `\w` becomes thousands
/// of automaton states, forward and reverse, ~0.5 ms here. A clone shares the compiled
/// automata and brings its own search caches. Failed patterns are not kept.
fn matcher(pattern: &str, ignore_case: bool, literal: bool) -> Result<RegexMatcher, String> {
    type Kept = Vec<((String, bool, bool), RegexMatcher)>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Vec::new());
    let lock = || KEPT.lock().unwrap_or_else(|p| p.into_inner());
    let hit = |((p, i, l), _): &((String, bool, bool), _)| {
        p == pattern && *i == ignore_case && *l == literal
    };
    {
        let mut kept = lock();
        if let Some(i) = kept.iter().position(hit) {
            let entry = kept.remove(i);
            let matcher = entry.1.clone();
            kept.push(entry);
            return Ok(matcher);
        }
    }
    let matcher = compile(pattern, ignore_case, literal)?;
    // A counted repetition (`\w{500}`) or a very long pattern can compile to megabytes: such a
    // matcher serves its call and is not held afterwards.
    let small = pattern.len() <= 256 && (literal || !pattern.contains('{'));
    let mut kept = lock();
    if small && !kept.iter().any(hit) {
        if kept.len() == KEPT_MATCHERS {
            kept.remove(0);
        }
        kept.push(((pattern.to_owned(), ignore_case, literal), matcher.clone()));
    }
    Ok(matcher)
}

fn compile(pattern: &str, ignore_case: bool, literal: bool) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .fixed_strings(literal)
        .case_insensitive(ignore_case)
        .line_terminator(Some(b'\n'))
        .dot_matches_new_line(false)
        .ban_byte(Some(b'\x00'))
        .build_many(&[pattern])
        .map_err(|e| format!("rg: {}", explain_pattern_error(e.to_string())))
}

/// The collected output lines and the limit bookkeeping (Pi's stream handling of rg's events).
struct Collector {
    limit: usize,
    context: u64,
    lines: Vec<String>,
    output_bytes: usize,
    line_count: usize,
    match_count: usize,
    lines_truncated: bool,
    limit_hit: bool,
    limit_reached: bool,
    trailing_context_end: u64,
    last_file: Option<PathBuf>,
    done: bool,
}

impl Collector {
    fn push_line(&mut self, file: &Path, shown: &str, number: u64, text: &[u8], is_match: bool) {
        self.last_file = Some(file.to_path_buf());
        let text = String::from_utf8_lossy(text);
        // Only the line terminator goes; a lone CR inside a line is content.
        let text = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .or_else(|| text.strip_suffix('\r'))
            .unwrap_or(&text);
        let (text, cut) = truncate_line(text);
        self.lines_truncated |= cut;
        let sep = if is_match { ':' } else { '-' };
        let line = format!("{shown}{sep}{number}{sep} {text}");
        // Lines past the byte cap are counted, not kept.
        if self.output_bytes <= DEFAULT_MAX_BYTES + 1 {
            self.lines.push(line.clone());
        }
        self.output_bytes += line.len() + 1;
        self.line_count += 1;
    }

    /// One event from the search, in order.
    fn event(&mut self, file: &Path, shown: &str, number: u64, text: &[u8], is_match: bool) {
        if self.done {
            return;
        }
        if !self.limit_hit {
            self.push_line(file, shown, number, text, is_match);
            if is_match {
                self.match_count += 1;
                if self.match_count >= self.limit {
                    self.limit_hit = true;
                    self.trailing_context_end = number + self.context;
                }
            }
            return;
        }
        let in_window =
            self.last_file.as_deref() == Some(file) && number <= self.trailing_context_end;
        if in_window {
            self.push_line(file, shown, number, text, false);
        }
        if is_match {
            self.limit_reached = true;
        }
        if self.limit_reached && !(in_window && number < self.trailing_context_end) {
            self.done = true;
        }
    }
}

struct FileSink<'a> {
    collector: &'a mut Collector,
    file: &'a Path,
    shown: &'a str,
    cancel: &'a CancellationToken,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let number = m.line_number().unwrap_or(0);
        self.collector
            .event(self.file, self.shown, number, m.bytes(), true);
        Ok(!self.collector.done && !self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let number = c.line_number().unwrap_or(0);
        self.collector
            .event(self.file, self.shown, number, c.bytes(), false);
        Ok(!self.collector.done && !self.cancel.is_cancelled())
    }
}

fn searcher(context: u64, binary: BinaryDetection) -> Searcher {
    let lines = usize::try_from(context).unwrap_or(usize::MAX);
    SearcherBuilder::new()
        .line_number(true)
        .before_context(lines)
        .after_context(lines)
        .binary_detection(binary)
        .build()
}

fn grep(
    config: &ToolsConfig,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let pattern = str_arg(args, "pattern").unwrap_or_default();
    let search_path = resolve_to_cwd(
        str_arg(args, "path")
            .filter(|p| !p.is_empty())
            .unwrap_or("."),
        &config.cwd,
    );
    let Ok(meta) = std::fs::metadata(&search_path) else {
        return Err(ToolError::new(format!(
            "Path not found: {}",
            search_path.display()
        )));
    };
    let context = num_arg(args, "context")
        .filter(|c| *c > 0.0)
        .map_or(0, |c| c.floor().min(9_007_199_254_740_991.0) as u64);
    let limit = effective_limit(num_arg(args, "limit"), DEFAULT_LIMIT);
    let matcher = matcher(
        pattern,
        bool_arg(args, "ignoreCase"),
        bool_arg(args, "literal"),
    )
    .map_err(ToolError::new)?;
    let mut collector = Collector {
        limit,
        context,
        lines: Vec::new(),
        output_bytes: 0,
        line_count: 0,
        match_count: 0,
        lines_truncated: false,
        limit_hit: false,
        limit_reached: false,
        trailing_context_end: 0,
        last_file: None,
        done: false,
    };
    let mut errors: Vec<String> = Vec::new();
    if meta.is_dir() {
        let mut walk = WalkBuilder::new(&search_path);
        walk.hidden(false)
            .parents(true)
            .ignore(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .require_git(true)
            .follow_links(false)
            .sort_by_file_path(crate::tool_util::cmp_sibling_paths)
            .add_custom_ignore_filename(".rgignore");
        if let Some(glob) = str_arg(args, "glob").filter(|g| !g.is_empty()) {
            let mut overrides = OverrideBuilder::new(&search_path);
            overrides
                .add(&strip_dot_slash(glob))
                .map_err(|e| ToolError::new(format!("rg: {e}")))?;
            walk.overrides(
                overrides
                    .build()
                    .map_err(|e| ToolError::new(format!("rg: {e}")))?,
            );
        }
        let files = walk.build().filter_map(|entry| match entry {
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => Some(Ok(e.into_path())),
            Ok(_) => None,
            Err(err) => Some(Err(format!("rg: {err}"))),
        });
        let spec = SearchSpec {
            matcher,
            make_searcher: Box::new(move || searcher(context, BinaryDetection::quit(b'\x00'))),
            limit,
        };
        let mut walk_errors = Vec::new();
        search_in_order(
            files,
            spec,
            cancel,
            &mut |e| walk_errors.push(e),
            |path, outcome| {
                // Most files show nothing: name them only when they do.
                if matches!(&outcome, FileOutcome::Lines(lines) if lines.is_empty()) {
                    return true;
                }
                let shown = crate::tool_util::walk_relative(path, &search_path)
                    .to_string_lossy()
                    .into_owned();
                match outcome {
                    FileOutcome::Lines(lines) => {
                        for (number, text, is_match) in lines {
                            collector.event(path, &shown, number, &text, is_match);
                            if collector.done {
                                break;
                            }
                        }
                    }
                    FileOutcome::Failed(err) => errors.push(format!("rg: ./{shown}: {err}")),
                }
                !collector.done
            },
        );
        errors.extend(walk_errors);
        if cancel.is_cancelled() {
            return Err(aborted());
        }
    } else {
        let shown = search_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // ripgrep memory-maps an explicitly named file; searching it whole in memory gives the
        // same results (binary conversion does not apply, lines keep their NUL bytes).
        let mut searcher = searcher(context, BinaryDetection::convert(b'\x00'));
        let mut sink = FileSink {
            collector: &mut collector,
            file: &search_path,
            shown: &shown,
            cancel,
        };
        let searched = if meta.len() <= IN_MEMORY_LIMIT {
            std::fs::read(&search_path)
                .and_then(|bytes| searcher.search_slice(&matcher, &bytes, &mut sink))
        } else {
            searcher.search_path(&matcher, &search_path, &mut sink)
        };
        if let Err(err) = searched {
            errors.push(format!("rg: {}: {err}", search_path.display()));
        }
    }
    if cancel.is_cancelled() {
        return Err(aborted());
    }
    if !collector.done && !errors.is_empty() {
        return Err(ToolError::new(errors.join("\n")));
    }
    Ok(format_result(collector))
}

/// rg never matches a leading `./` in a glob, so Pi drops it (keeping a leading `!`).
fn strip_dot_slash(glob: &str) -> String {
    let (neg, mut rest) = match glob.strip_prefix('!') {
        Some(r) => ("!", r),
        None => ("", glob),
    };
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    format!("{neg}{rest}")
}

fn format_result(c: Collector) -> AgentToolResult {
    if c.match_count == 0 {
        return text_result("No matches found", None);
    }
    let mut truncation = truncate_head(&c.lines.join("\n"), Limits::bytes_only());
    truncation.total_lines = c.line_count;
    truncation.total_bytes = c.output_bytes.saturating_sub(1);
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if c.limit_reached {
        notices.push(format!(
            "{} matches limit reached. Use limit={} for more, or refine pattern",
            js_number(c.limit as f64),
            js_number(c.limit as f64 * 2.0)
        ));
        details.insert("matchLimitReached".into(), json!(c.limit));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert(
            "truncation".into(),
            serde_json::to_value(&truncation).unwrap_or(Value::Null),
        );
    }
    if c.lines_truncated {
        notices.push(format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        ));
        details.insert("linesTruncated".into(), Value::Bool(true));
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    text_result(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    )
}
