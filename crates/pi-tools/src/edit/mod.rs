//! The `edit` tool: exact (or whitespace/typography-tolerant) replacements in one file, matched
//! against the original text, keeping its BOM and line endings, reported with a diff.

pub mod apply;
pub mod diff;
pub mod line_diff;

use crate::config::ToolsConfig;
use crate::fs_error;
use crate::mutation_queue::wait_turn;
use crate::paths::resolve_to_cwd;
use crate::tool_util::{check_cancel, declaration, prop, str_arg, text_result};
use apply::{Edit, apply_edits, apply_to_original, normalize_to_lf};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub struct EditTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl EditTool {
    pub fn new(config: Arc<ToolsConfig>) -> EditTool {
        let description = "Change one file by replacing exact text. Each edits[].oldText has to match \
             exactly one place in the original file, and no two edits may overlap. When changes \
             sit in the same block or on neighbouring lines, combine them into a single edit; \
             do not pad an edit with long unchanged stretches just to join distant changes.";
        let parameters = json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": prop("string", "File to change, as a relative or absolute path"),
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": prop("string", "The exact text to replace. It must occur once in the original file and must not overlap another edit's oldText."),
                            "newText": prop("string", "The text that replaces oldText."),
                        }
                    },
                    "description": "The replacements, each matched against the original file (not applied one after another). Overlapping or nested edits are not allowed; combine changes to the same block or to adjacent lines into one edit.",
                }
            }
        });
        EditTool {
            config,
            declaration: declaration("edit", description, parameters, true),
        }
    }
}

fn is_single_edit(value: &Value) -> bool {
    value.get("oldText").is_some_and(Value::is_string)
        && value.get("newText").is_some_and(Value::is_string)
}

/// Pi's argument preparation for `edit`, run before validation: `edits` sent as a JSON string
/// is parsed, a single edit object is wrapped in an array, and legacy top-level
/// `oldText`/`newText` become one more edit.
pub fn prepare_edit_arguments(args: Value) -> Value {
    let Value::Object(mut map) = args else {
        return args;
    };
    match map.get("edits") {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed @ Value::Array(_)) => {
                map.insert("edits".into(), parsed);
            }
            Ok(parsed) if parsed.is_object() && is_single_edit(&parsed) => {
                map.insert("edits".into(), Value::Array(vec![parsed]));
            }
            _ => {}
        },
        Some(single) if single.is_object() && is_single_edit(single) => {
            let single = single.clone();
            map.insert("edits".into(), Value::Array(vec![single]));
        }
        _ => {}
    }
    let legacy = match (map.get("oldText"), map.get("newText")) {
        (Some(Value::String(o)), Some(Value::String(n))) => Some((o.clone(), n.clone())),
        _ => None,
    };
    let Some((old_text, new_text)) = legacy else {
        return Value::Object(map);
    };
    let mut edits = match map.get("edits") {
        Some(Value::Array(list)) => list.clone(),
        _ => Vec::new(),
    };
    edits.push(json!({ "oldText": old_text, "newText": new_text }));
    // `{ ...rest, edits }`: an existing `edits` keeps its place, a new one goes last.
    let mut out = Map::new();
    let mut edits = Some(Value::Array(edits));
    for (key, value) in map {
        match key.as_str() {
            "oldText" | "newText" => {}
            "edits" => {
                if let Some(list) = edits.take() {
                    out.insert(key, list);
                }
            }
            _ => {
                out.insert(key, value);
            }
        }
    }
    if let Some(list) = edits {
        out.insert("edits".into(), list);
    }
    Value::Object(out)
}

impl AgentTool for EditTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        let config = self.config.clone();
        Box::pin(async move { run(&config, invocation).await })
    }
}

fn parse_edits(args: &Map<String, Value>) -> Result<Vec<Edit>, ToolError> {
    let list = match args.get("edits") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => {
            return Err(ToolError::new(
                "Edit tool input is invalid. edits must contain at least one replacement.",
            ));
        }
    };
    Ok(list
        .iter()
        .map(|e| Edit {
            old_text: e
                .get("oldText")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            new_text: e
                .get("newText")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
        .collect())
}

async fn run(
    config: &ToolsConfig,
    invocation: ToolInvocation,
) -> Result<AgentToolResult, ToolError> {
    let edits = parse_edits(&invocation.args)?;
    let path = str_arg(&invocation.args, "path")
        .unwrap_or_default()
        .to_string();
    let absolute = resolve_to_cwd(&path, &config.cwd);
    let _turn = wait_turn(&absolute).await.map_err(ToolError::new)?;
    let check = || check_cancel(&invocation.cancel);
    check()?;
    let ops = config.operations.as_deref();
    let failed = |e: crate::operations::OpError| ToolError::new(e.message);
    match ops {
        // An extension's operations: their error's code, else the error as text.
        Some(ops) => {
            if let Err(err) = ops.access(&absolute).await {
                check()?;
                let reason = match &err.code {
                    Some(code) => format!("Error code: {code}"),
                    None => err.text.clone(),
                };
                return Err(ToolError::new(format!(
                    "Could not edit file: {path}. {reason}."
                )));
            }
        }
        None => {
            if let Err(err) = fs_error::access(&absolute, libc::R_OK | libc::W_OK) {
                check()?;
                return Err(ToolError::new(format!(
                    "Could not edit file: {path}. Error code: {}.",
                    fs_error::code(&err)
                )));
            }
        }
    }
    check()?;
    let bytes = match ops {
        Some(ops) => ops.read_file(&absolute).await.map_err(failed)?,
        None => read_file(&absolute).await?,
    };
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    check()?;
    let (bom, content) = match raw.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", raw.as_str()),
    };
    let normalized = normalize_to_lf(content);
    let applied = apply_edits(&normalized, &edits, &path).map_err(ToolError::new)?;
    let diff = diff::edit_diff(
        &path,
        &applied.base,
        &applied.new_content,
        &applied.replacements,
    );
    check()?;
    let body = if content == normalized {
        applied.new_content
    } else {
        apply_to_original(content, &applied.replacements)
    };
    let final_content = format!("{bom}{body}");
    match ops {
        Some(ops) => ops
            .write_file(&absolute, &final_content)
            .await
            .map_err(failed)?,
        None => tokio::fs::write(&absolute, final_content.as_bytes())
            .await
            .map_err(|e| ToolError::new(fs_error::with_path(&e, "open", &absolute)))?,
    }
    check()?;
    let mut details = Map::new();
    details.insert("diff".into(), Value::String(diff.diff));
    details.insert("patch".into(), Value::String(diff.patch));
    if let Some(line) = diff.first_changed_line {
        details.insert("firstChangedLine".into(), json!(line));
    }
    Ok(text_result(
        format!("Successfully replaced {} block(s) in {path}.", edits.len()),
        Some(Value::Object(details)),
    ))
}

/// `fs.readFile` with Node's error texts.
pub(crate) async fn read_file(path: &std::path::Path) -> Result<Vec<u8>, ToolError> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ToolError::new(fs_error::with_path(&e, "open", path)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .await
        .map_err(|e| ToolError::new(fs_error::without_path(&e, "read")))?;
    Ok(bytes)
}
