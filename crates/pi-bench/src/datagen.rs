//! Deterministic test data: a source tree for the tool turn, a 100,000-file tree for grep, and
//! a 100 MiB / 50,000-entry v3 session. Each is generated once into the data dir and reused
//! (a `.complete` stamp with the generator version marks a finished tree).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Bump when a generator changes, so stale data is regenerated.
const VERSION: &str = "4";

/// A small xorshift generator: the data must be the same on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "session", "entry", "parent", "model", "stream", "delta", "token", "usage", "cursor", "buffer",
    "reader", "writer", "config", "tool", "result", "message", "content", "branch", "leaf",
    "label", "render", "queue", "retry", "abort", "signal", "handle", "state", "index", "offset",
    "limit", "path", "file", "line", "block", "chunk", "frame", "event", "record", "schema",
    "value",
];
const TYPES: &[&str] = &[
    "String",
    "Vec<u8>",
    "Option<usize>",
    "Entry",
    "Session",
    "Model",
    "Frame",
    "Config",
    "u64",
    "HashMap<String, Value>",
    "PathBuf",
    "Result<(), Error>",
];

/// One line of plausible Rust.
pub fn code_line(rng: &mut Rng, depth: usize) -> String {
    let w1 = rng.pick(WORDS);
    let w2 = rng.pick(WORDS);
    let ty = rng.pick(TYPES);
    let n = rng.below(4096);
    let indent = "    ".repeat(depth);
    match rng.below(12) {
        0 => format!(
            "{indent}pub fn handle_{w1}_{w2}(&mut self, {w1}: &{ty}) -> Result<{ty}, Error> {{"
        ),
        1 => format!("{indent}let {w1}_{w2} = self.{w1}.get({n}).ok_or(Error::Missing({n}))?;"),
        2 => format!("{indent}// TODO: {w1} {w2} should not be cloned here ({n})"),
        3 => format!(
            "{indent}if {w1}.len() > {n} {{ return Err(Error::new(\"{w1} {w2} too long\")); }}"
        ),
        4 => format!("{indent}for {w1} in self.{w2}s.iter().filter(|x| x.{w1}_id == {n}) {{"),
        5 => format!("{indent}    out.push_str(&format!(\"{{}}: {{}}\", {w1}.name, {w2}.{w1}));"),
        6 => format!("{indent}}}"),
        7 => format!("{indent}/// Returns the {w1} of the {w2}, or `None` past offset {n}."),
        8 => format!("{indent}match {w1} {{ Some(x) => x.{w2}(), None => {ty}::default() }}"),
        9 => format!("{indent}self.{w1}_{w2}.insert({n}, {w2}.clone());"),
        10 => String::new(),
        _ => format!("{indent}let {w2} = {w1}.{w2}.as_ref().map(|v| v.len()).unwrap_or({n});"),
    }
}

/// A source file of `lines` lines.
pub fn code_file(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::with_capacity(lines * 48);
    out.push_str("use std::collections::HashMap;\nuse crate::error::Error;\n\n");
    for i in 0..lines {
        out.push_str(&code_line(rng, 1 + (i % 3)));
        out.push('\n');
    }
    out
}

fn prose(rng: &mut Rng, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(if i % 14 == 0 { '\n' } else { ' ' });
        }
        out.push_str(rng.pick(WORDS));
    }
    out
}

fn write_file(path: &Path, text: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn complete(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(".complete")).is_ok_and(|v| v.trim() == VERSION)
}

fn fresh(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn stamp(dir: &Path) -> Result<(), String> {
    write_file(&dir.join(".complete"), VERSION.as_bytes())
}

/// A mid-sized project (~1,300 files, ~12 MB): `src/<module>/*.rs`, `tests/`, `docs/`, a README.
/// Not a git repository, like the other trees.
pub fn tool_tree(data: &Path) -> Result<PathBuf, String> {
    let dir = data.join("tool-tree");
    if complete(&dir) {
        return Ok(dir);
    }
    eprintln!("generating {}", dir.display());
    fresh(&dir)?;
    let mut rng = Rng::new(1);
    for m in 0..40 {
        let module = format!("{}_{m}", WORDS[m % WORDS.len()]);
        for f in 0..25 {
            let lines = 60 + rng.below(540) as usize;
            let name = format!("src/{module}/{}_{f}.rs", rng.pick(WORDS));
            write_file(&dir.join(name), code_file(&mut rng, lines).as_bytes())?;
        }
    }
    write_file(
        &dir.join("src/core/engine.rs"),
        code_file(&mut rng, 1800).as_bytes(),
    )?;
    for t in 0..200 {
        let lines = 40 + rng.below(200) as usize;
        write_file(
            &dir.join(format!("tests/{}_{t}.rs", rng.pick(WORDS))),
            code_file(&mut rng, lines).as_bytes(),
        )?;
    }
    for d in 0..60 {
        let words = 200 + rng.below(1500) as usize;
        write_file(
            &dir.join(format!("docs/{}-{d}.md", rng.pick(WORDS))),
            format!("# {}\n\n{}\n", rng.pick(WORDS), prose(&mut rng, words)).as_bytes(),
        )?;
    }
    write_file(
        &dir.join("README.md"),
        format!("# bench project\n\n{}\n", prose(&mut rng, 800)).as_bytes(),
    )?;
    write_file(
        &dir.join("Cargo.toml"),
        b"[package]\nname = \"bench-project\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )?;
    stamp(&dir)?;
    Ok(dir)
}

/// What the grep figure searches for: in [`GREP_NEEDLE_FILES`] of the files, once each.
pub const GREP_NEEDLE: &str = "NEEDLE_7f3a9c";
pub const GREP_FILES: usize = 100_000;
pub const GREP_NEEDLE_FILES: usize = 50;

/// 100,000 files (~1.5 KB each, ~150 MB) in 1,000 directories under 10 top-level ones.
pub fn grep_tree(data: &Path) -> Result<PathBuf, String> {
    let dir = data.join("grep-tree");
    if complete(&dir) {
        return Ok(dir);
    }
    eprintln!("generating {} (100,000 files)", dir.display());
    fresh(&dir)?;
    let mut rng = Rng::new(2);
    let exts = [
        "rs", "ts", "py", "md", "json", "txt", "go", "c", "h", "toml",
    ];
    let every = GREP_FILES / GREP_NEEDLE_FILES;
    for i in 0..GREP_FILES {
        let sub = dir.join(format!("pkg{}/mod{:03}", i / 10_000, (i / 100) % 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
        }
        let lines = 10 + rng.below(40) as usize;
        let mut text = String::with_capacity(lines * 48);
        for l in 0..lines {
            text.push_str(&code_line(&mut rng, l % 3));
            text.push('\n');
            if i % every == every / 2 && l == lines / 2 {
                text.push_str(&format!("    let marker = \"{GREP_NEEDLE}\"; // {i}\n"));
            }
        }
        let ext = exts[i % exts.len()];
        let path = sub.join(format!("{}_{i}.{ext}", rng.pick(WORDS)));
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    stamp(&dir)?;
    Ok(dir)
}

/// The session file and the working directory its header names.
pub struct SessionData {
    pub file: PathBuf,
    pub cwd: PathBuf,
    pub bytes: u64,
    pub entries: usize,
}

pub const SESSION_ENTRIES: usize = 50_000;
pub const SESSION_BYTES: u64 = 100 * 1024 * 1024;

pub fn entry_id(i: usize) -> String {
    // A bijection on u32: distinct 8-hex-digit ids.
    format!("{:08x}", (i as u32).wrapping_mul(0x9E37_79B1) ^ 0x5bd1_e995)
}

fn iso(i: usize) -> String {
    // 2026-01-05T00:00:00.000Z plus i seconds (fits within the day range used below).
    let secs = i % 86_400;
    let day = 5 + i / 86_400;
    format!(
        "2026-01-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        i % 1000
    )
}

fn ms(i: usize) -> u64 {
    1_767_571_200_000 + (i as u64) * 1000 + (i as u64 % 1000)
}

fn usage_json() -> Value {
    json!({"input": 2150, "output": 180, "cacheRead": 1900, "cacheWrite": 0, "reasoning": 0,
        "totalTokens": 4230, "cost": {"input": 0.0043, "output": 0.0027, "cacheRead": 0.00057,
        "cacheWrite": 0, "total": 0.00757, "totalFromProvider": false}})
}

fn assistant(content: Value, stop: &str, raw_stop: &str, i: usize) -> Value {
    json!({"role": "assistant", "content": content, "api": "openai-completions",
        "provider": "mock-openai", "model": "mock-gpt", "usage": usage_json(),
        "stopReason": stop, "timestamp": ms(i), "responseId": format!("chatcmpl-{i}"),
        "rawStopReason": raw_stop, "durationMs": 1200 + i % 900, "thinkingLevel": "off"})
}

/// A valid v3 session of exactly [`SESSION_ENTRIES`] entries and about [`SESSION_BYTES`]
/// bytes: model and thinking-level entries, a system message, then user → assistant tool
/// call → tool result (a file's content) → assistant text, on one linear branch.
pub fn session(data: &Path) -> Result<SessionData, String> {
    sized_session(data, "session", SESSION_ENTRIES, SESSION_BYTES)
}

pub const BIG_SESSION_ENTRIES: usize = 500_000;
pub const BIG_SESSION_BYTES: u64 = 1 << 30;

/// The same kind of session at 1 GiB and 500,000 entries (`bench/run --only session-1g`).
pub fn big_session(data: &Path) -> Result<SessionData, String> {
    sized_session(data, "session-1g", BIG_SESSION_ENTRIES, BIG_SESSION_BYTES)
}

fn sized_session(
    data: &Path,
    name: &str,
    entries: usize,
    bytes: u64,
) -> Result<SessionData, String> {
    let dir = data.join(name);
    let file = dir.join("session.jsonl");
    let cwd = dir.join("cwd");
    if !complete(&dir) {
        eprintln!(
            "generating {} ({} MiB, {entries} entries)",
            file.display(),
            bytes >> 20
        );
        fresh(&dir)?;
        std::fs::create_dir_all(&cwd).map_err(|e| e.to_string())?;
        write_session(&file, &cwd, entries, bytes)?;
        stamp(&dir)?;
    }
    let size = std::fs::metadata(&file).map_err(|e| e.to_string())?.len();
    Ok(SessionData {
        file,
        cwd,
        bytes: size,
        entries,
    })
}

/// Generates the lines of a session, one entry at a time: the header, a model change, a
/// thinking-level change, a system message, then cycles of user → assistant tool call → tool
/// result → assistant text on one branch.
pub struct SessionGen {
    rng: Rng,
    parent: Option<String>,
    /// Entries generated so far (the header not counted).
    pub n: usize,
    cwd: String,
}

/// What the next line of a cycle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    User,
    ToolCall,
    ToolResult,
    Answer,
}

impl SessionGen {
    pub fn new(cwd: &str) -> SessionGen {
        SessionGen {
            rng: Rng::new(3),
            parent: None,
            n: 0,
            cwd: cwd.to_string(),
        }
    }

    /// The header line (no newline).
    pub fn header(&self) -> String {
        json!({"type": "session", "version": 3, "id": "019b8c2e-4a10-7000-8000-00000000be9c",
            "timestamp": iso(0), "cwd": self.cwd})
        .to_string()
    }

    /// `{type, id, parentId, timestamp, ...rest}`, chained to the previous entry.
    fn entry(&mut self, kind: &str, rest: Vec<(&str, Value)>) -> String {
        let id = entry_id(self.n);
        let mut m = serde_json::Map::new();
        m.insert("type".into(), json!(kind));
        m.insert("id".into(), json!(id));
        m.insert("parentId".into(), json!(self.parent));
        m.insert("timestamp".into(), json!(iso(self.n + 1)));
        for (k, v) in rest {
            m.insert(k.to_string(), v);
        }
        self.parent = Some(id);
        self.n += 1;
        Value::Object(m).to_string()
    }

    /// The three entries before the first cycle.
    pub fn preamble(&mut self) -> Vec<String> {
        let rng = &mut self.rng;
        let system = json!({"role": "system", "content": "", "sections": {
            "preamble": prose(rng, 300), "tools": format!("<tools>\n{}\n</tools>", prose(rng, 200)),
            "rules": format!("<rules>\n{}\n</rules>", prose(rng, 150)),
            "cwd": format!("<cwd>\n{}\n</cwd>", self.cwd)}, "timestamp": ms(2)});
        vec![
            self.entry(
                "model_change",
                vec![
                    ("provider", json!("mock-openai")),
                    ("modelId", json!("mock-gpt")),
                ],
            ),
            self.entry(
                "thinking_level_change",
                vec![("thinkingLevel", json!("off"))],
            ),
            self.entry("message", vec![("message", system)]),
        ]
    }

    /// The kind of the next cycle entry.
    pub fn next_kind(&self) -> Kind {
        match self.n.saturating_sub(3) % 4 {
            0 => Kind::User,
            1 => Kind::ToolCall,
            2 => Kind::ToolResult,
            _ => Kind::Answer,
        }
    }

    /// The next cycle entry; a tool result carries about `result_bytes` of file content.
    pub fn next_line(&mut self, result_bytes: usize) -> String {
        let n = self.n;
        let kind = self.next_kind();
        let rng = &mut self.rng;
        let message = match kind {
            Kind::User => {
                let (a, b, c) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(WORDS));
                let w = 20 + rng.below(40) as usize;
                let text = format!(
                    "Please look at src/{a}/{b}.rs and fix the {c} handling: {}",
                    prose(rng, w)
                );
                json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms(n)})
            }
            Kind::ToolCall => {
                let w = 15 + rng.below(30) as usize;
                let say = prose(rng, w);
                let path = format!("src/{}/{}.rs", rng.pick(WORDS), rng.pick(WORDS));
                let content = json!([
                    {"type": "text", "text": say},
                    {"type": "toolCall", "id": format!("call_{n}"), "name": "read",
                        "arguments": {"path": path}}
                ]);
                assistant(content, "toolUse", "tool_calls", n)
            }
            Kind::ToolResult => {
                let mut text = String::with_capacity(result_bytes + 64);
                while text.len() < result_bytes {
                    text.push_str(&code_line(rng, 1));
                    text.push('\n');
                }
                json!({"role": "toolResult", "toolCallId": format!("call_{}", n - 1),
                    "toolName": "read", "content": [{"type": "text", "text": text}],
                    "isError": false, "durationMs": 3, "timestamp": ms(n)})
            }
            Kind::Answer => {
                let w = 60 + rng.below(120) as usize;
                let say = prose(rng, w);
                assistant(json!([{"type": "text", "text": say}]), "stop", "stop", n)
            }
        };
        self.entry("message", vec![("message", message)])
    }
}

/// One line of each kind (header, preamble entries, one cycle with a ~`result_bytes` tool
/// result), for micro-benchmarks of line parsing.
pub fn sample_session_lines(result_bytes: usize) -> Vec<String> {
    let mut g = SessionGen::new("/home/user/project");
    let mut lines = vec![g.header()];
    lines.extend(g.preamble());
    for _ in 0..4 {
        lines.push(g.next_line(result_bytes));
    }
    lines
}

fn write_session(file: &Path, cwd: &Path, entries: usize, bytes: u64) -> Result<(), String> {
    let f = std::fs::File::create(file).map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(f);
    let mut written: u64 = 0;
    let mut put = |line: String, written: &mut u64| -> Result<(), String> {
        *written += line.len() as u64 + 1;
        out.write_all(line.as_bytes())
            .and_then(|_| out.write_all(b"\n"))
            .map_err(|e| e.to_string())
    };
    let mut g = SessionGen::new(&cwd.display().to_string());
    put(g.header(), &mut written)?;
    for line in g.preamble() {
        put(line, &mut written)?;
    }
    // Size each tool result so that the whole session lands on SESSION_BYTES: everything else
    // is averaged per cycle so far, the rest is shared among the tool results still to come.
    let mut other_bytes: u64 = 0;
    let mut cycles = 0u64;
    let total_cycles = ((entries - g.n) / 4) as u64;
    while g.n < entries {
        let before = written;
        let kind = g.next_kind();
        let result_bytes = if kind == Kind::ToolResult {
            let left = total_cycles.saturating_sub(cycles).max(1);
            let other_per_cycle = other_bytes / cycles.max(1);
            let budget = bytes
                .saturating_sub(written)
                .saturating_sub(other_per_cycle * left)
                / left;
            // ~220 bytes of the line are the envelope, and escaping adds a little.
            budget.saturating_sub(260).max(64) as usize
        } else {
            0
        };
        put(g.next_line(result_bytes), &mut written)?;
        match kind {
            Kind::ToolResult => {
                cycles += 1;
                other_bytes += 220;
            }
            _ => other_bytes += written - before,
        }
    }
    out.flush().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_timestamps_valid() {
        let ids: std::collections::HashSet<String> = (0..60_000).map(entry_id).collect();
        assert_eq!(ids.len(), 60_000);
        assert_eq!(iso(0), "2026-01-05T00:00:00.000Z");
        assert_eq!(iso(86_401), "2026-01-06T00:00:01.401Z");
    }
}
