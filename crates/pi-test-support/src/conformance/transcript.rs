//! Turning what a run produced into normalized golden lines (format in [`super::golden`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::normalize::Normalizer;
use super::process::Line;
use super::sandbox::FileChange;
use crate::mock::RecordedRequest;

/// Request headers that are part of the wire contract (SDK bookkeeping headers such as
/// `x-stainless-*` and `user-agent` are implementation details).
pub const HEADERS_OF_INTEREST: &[&str] = &[
    "content-type",
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
];

pub fn stdout_line(norm: &mut Normalizer, line: &Line) -> String {
    match &line.json {
        Some(v) => format!("stdout {}", norm.record(v)),
        None => format!("stdout-text {}", Value::String(norm.string(&line.text))),
    }
}

/// One `stderr "<line>"` per stderr line (LF-separated; a final unterminated line counts, the
/// empty piece after a final LF does not).
pub fn stderr_lines(norm: &mut Normalizer, stderr: &str) -> Vec<String> {
    let body = stderr.strip_suffix('\n').unwrap_or(stderr);
    if body.is_empty() {
        return Vec::new();
    }
    body.split('\n')
        .map(|l| format!("stderr {}", Value::String(norm.string(l))))
        .collect()
}

pub fn request_line(norm: &mut Normalizer, req: &RecordedRequest) -> String {
    let mut headers = Map::new();
    for name in HEADERS_OF_INTEREST {
        if let Some(v) = req.header(name) {
            headers.insert(name.to_string(), Value::String(norm.string(v)));
        }
    }
    let mut payload = Map::new();
    payload.insert("headers".into(), Value::Object(headers));
    payload.insert("body".into(), norm.request_body(&req.body));
    format!(
        "request {} {} {}",
        req.method,
        norm.string(&req.path),
        Value::Object(payload)
    )
}

/// File changes in a stable order: by path with random parts masked, then by time of creation
/// (session file names start with their creation time).
pub fn file_lines(norm: &mut Normalizer, mut changes: Vec<FileChange>) -> Vec<String> {
    let path_of = |c: &FileChange| match c {
        FileChange::Written(p, _) | FileChange::Deleted(p) => p.display().to_string(),
    };
    changes.sort_by_cached_key(|c| {
        let p = path_of(c);
        (norm.mask(&p), file_name(&p), p)
    });
    let mut out = Vec::new();
    for c in changes {
        match c {
            FileChange::Deleted(p) => {
                out.push(format!("deleted {}", norm.string(&p.display().to_string())))
            }
            FileChange::Written(p, bytes) => {
                out.push(format!("file {}", norm.string(&p.display().to_string())));
                out.extend(content_lines(norm, &p, &bytes));
            }
        }
    }
    out
}

fn file_name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn content_lines(norm: &mut Normalizer, path: &Path, bytes: &[u8]) -> Vec<String> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Ok(text) = std::str::from_utf8(bytes) else {
        return vec![format!("binary {} bytes", bytes.len())];
    };
    match ext.as_str() {
        // Our HTML template is our own; only the fact that an export was written is compared.
        "html" => vec!["text \"<html export>\"".to_string()],
        "jsonl" => text
            .split('\n')
            .filter(|l| !l.is_empty())
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(v) => format!("jsonl {}", norm.record(&v)),
                Err(_) => format!("jsonl-text {}", Value::String(norm.string(l))),
            })
            .collect(),
        "json" => match serde_json::from_str::<Value>(text) {
            Ok(v) => vec![format!("json {}", norm.record(&v))],
            Err(_) => vec![format!("text {}", Value::String(norm.string(text)))],
        },
        _ => vec![format!("text {}", Value::String(norm.string(text)))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_lines_are_normalized_one_per_line() {
        let mut norm = Normalizer::new(vec![("/tmp/run1/work".into(), "<cwd>".into())]);
        assert_eq!(
            stderr_lines(&mut norm, "Error: /tmp/run1/work/x.ts: \"bad\"\nHint: y\n"),
            vec![
                r#"stderr "Error: <cwd>/x.ts: \"bad\"""#.to_string(),
                r#"stderr "Hint: y""#.to_string(),
            ]
        );
        assert_eq!(stderr_lines(&mut norm, "tail"), vec![r#"stderr "tail""#]);
        assert!(stderr_lines(&mut norm, "").is_empty());
    }
}
