//! Helpers shared by the tool implementations: declarations, argument access, results.

use crate::config::ToolsConfig;
use pi_agent::{ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{TextContent, UserBlock};
use pi_protocol::tool::{
    AgentToolResult, ConstrainedSampling, ConstrainedSamplingConfig, SchemaStrictness, Tool,
};
use serde_json::{Map, Value, json};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A declaration; `strict` adds `constrainedSampling: {type: json_schema, strict: prefer}` as Pi
/// does for read, bash, edit and write.
pub fn declaration(name: &str, description: &str, parameters: Value, strict: bool) -> Tool {
    Tool {
        name: name.to_string(),
        description: description.to_string(),
        parameters: parameters.into(),
        constrained_sampling: strict.then_some(ConstrainedSampling::Config(
            ConstrainedSamplingConfig::JsonSchema {
                strict: SchemaStrictness::Prefer,
            },
        )),
        rest: Default::default(),
    }
}

/// `{"type":"string","description":...}` and friends.
pub fn prop(kind: &str, description: &str) -> Value {
    json!({ "type": kind, "description": description })
}

pub fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

pub fn num_arg(args: &Map<String, Value>, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}

pub fn bool_arg(args: &Map<String, Value>, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub fn text_block(text: impl Into<String>) -> UserBlock {
    UserBlock::Text(TextContent::new(text))
}

/// A result with one text block and optional details.
pub fn text_result(text: impl Into<String>, details: Option<Value>) -> AgentToolResult {
    let mut result = AgentToolResult::new(vec![text_block(text)]);
    result.details = details;
    result
}

pub fn aborted() -> ToolError {
    ToolError::new("Operation aborted")
}

/// [`aborted`] once `cancel` has fired.
pub fn check_cancel(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(aborted())
    } else {
        Ok(())
    }
}

/// `Math.max(1, Math.floor(limit ?? default))` as an integer count.
pub fn effective_limit(limit: Option<f64>, default: usize) -> usize {
    match limit {
        None => default,
        Some(v) if v.is_nan() => 1,
        Some(v) => {
            let floored = v.floor();
            if floored < 1.0 {
                1
            } else if floored >= usize::MAX as f64 {
                usize::MAX / 4
            } else {
                floored as usize
            }
        }
    }
}

/// Orders the entries of one directory listing as a name sort would: siblings share their
/// parent's bytes up to the last `/`, so comparing whole paths as bytes compares the names,
/// without taking each path apart into components per comparison (which `sort_by_file_name`
/// does, and which cost more than the rest of a tree walk).
pub fn cmp_sibling_paths(a: &Path, b: &Path) -> std::cmp::Ordering {
    a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes())
}

/// `path` relative to `root` for a path a walk of `root` produced: the bytes after `root/`
/// when they follow it plainly (no component matching needed), else `Path::strip_prefix`.
pub fn walk_relative<'a>(path: &'a Path, root: &Path) -> &'a Path {
    let (p, r) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
    if !r.is_empty()
        && !r.ends_with(b"/")
        && p.len() > r.len() + 1
        && p.starts_with(r)
        && p[r.len()] == b'/'
        && plain_components(&p[r.len()..])
    {
        return Path::new(std::ffi::OsStr::from_bytes(&p[r.len() + 1..]));
    }
    path.strip_prefix(root).unwrap_or(path)
}

/// `rest` (which starts with `/`) has no empty or `.` component and does not end with `/`:
/// one look after each `/` (a walk's relative path has a few), not a scan per pattern.
fn plain_components(rest: &[u8]) -> bool {
    !rest.ends_with(b"/")
        && rest
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'/')
            .all(|(i, _)| !matches!(&rest[i + 1..], [b'/', ..] | [b'.'] | [b'.', b'/', ..]))
}

/// A tool's synchronous body: configuration, arguments, the call's cancellation. A plain
/// function (every body captures nothing), so both runners below name it once.
pub type ToolBody =
    fn(&ToolsConfig, &Map<String, Value>, &CancellationToken) -> Result<AgentToolResult, ToolError>;

/// Runs a tool body that blocks (file system walks and reads) on the blocking pool. An abort
/// answers `Operation aborted` at once; the body stops at its next look at the token.
pub fn run_blocking(
    config: Arc<ToolsConfig>,
    invocation: ToolInvocation,
    body: ToolBody,
) -> ToolFuture {
    Box::pin(async move {
        let cancel = invocation.cancel.clone();
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        let token = cancel.clone();
        let work = tokio::task::spawn_blocking(move || body(&config, &invocation.args, &token));
        tokio::select! {
            _ = cancel.cancelled() => Err(aborted()),
            joined = work => joined.unwrap_or_else(|e| Err(ToolError::new(e.to_string()))),
        }
    })
}

/// Runs a tool body on the calling thread when the future is first polled, for work smaller
/// than a hand-over to the blocking pool.
pub fn run_inline(
    config: Arc<ToolsConfig>,
    invocation: ToolInvocation,
    body: ToolBody,
) -> ToolFuture {
    Box::pin(async move {
        if invocation.cancel.is_cancelled() {
            return Err(aborted());
        }
        body(&config, &invocation.args, &invocation.cancel)
    })
}

/// The result of a listing tool (find, ls): the head-truncated text, then in brackets the
/// item-limit notice (`limit`: notice text, details key, limit) and the byte-limit notice, with
/// the matching `details`.
pub fn listing_result(
    truncation: crate::truncate::Truncation,
    limit: Option<(String, &str, usize)>,
) -> AgentToolResult {
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if let Some((notice, key, limit)) = limit {
        notices.push(notice);
        details.insert(key.into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!(
            "{} limit reached",
            crate::truncate::format_size(crate::truncate::DEFAULT_MAX_BYTES)
        ));
        details.insert(
            "truncation".into(),
            serde_json::to_value(&truncation).unwrap_or(Value::Null),
        );
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    text_result(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    )
}

#[cfg(test)]
mod walk_path_tests {
    use super::*;

    #[test]
    fn walk_relative_agrees_with_strip_prefix() {
        let cases = [
            ("/w/src/a.rs", "/w/src"),
            ("/w/src/d/b.rs", "/w/src"),
            ("/w/./src/a", "/w/./src"),
            ("/w/src/./a", "/w/src/."),
            ("/w/src//a", "/w/src"),
            ("/w/src/a/", "/w/src"),
            ("/w/src/a/.", "/w/src"),
            ("/w/src/a/./b", "/w/src"),
            ("/w/src/.hidden/.x", "/w/src"),
            ("/w/src/a/..b", "/w/src"),
            ("/w/src/a/..", "/w/src"),
            ("/w/srcx/a", "/w/src"),
            ("/w/src/a", "/w/src/"),
            ("/other/a", "/w/src"),
            ("rel/a b", "rel"),
        ];
        for (path, root) in cases {
            let (path, root) = (Path::new(path), Path::new(root));
            assert_eq!(
                walk_relative(path, root),
                path.strip_prefix(root).unwrap_or(path),
                "{path:?} under {root:?}"
            );
        }
    }

    #[test]
    fn sibling_paths_sort_by_name_bytes() {
        let mut paths = ["/d/b", "/d/a.rs", "/d/B", "/d/a", "/d/é", "/d/a-b"].map(Path::new);
        paths.sort_by(|a, b| cmp_sibling_paths(a, b));
        let mut by_name = paths;
        by_name.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        assert_eq!(paths, by_name);
    }
}
