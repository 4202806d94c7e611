//! The `ls` tool: one directory's entries, dotfiles included, sorted case-insensitively in
//! locale order, directories marked with `/`.

use crate::config::ToolsConfig;
use crate::fs_error;
use crate::paths::resolve_to_cwd;
use crate::tool_util::{
    declaration, effective_limit, listing_result, num_arg, prop, str_arg, text_result,
};
use crate::truncate::{Limits, truncate_head};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_js::number_to_string as js_number;
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::Arc;

const DEFAULT_LIMIT: usize = 500;

pub struct LsTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl LsTool {
    pub fn new(config: Arc<ToolsConfig>) -> LsTool {
        let description = "List the entries of a directory in alphabetical order, including \
             dotfiles; directory names end with '/'. At most 500 entries or 50KB are returned, \
             whichever limit is reached first.";
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": prop("string", "Directory to list (defaults to the current directory)"),
                "limit": prop("number", "Most entries to return (defaults to 500)"),
            }
        });
        LsTool {
            config,
            declaration: declaration("ls", description, parameters, false),
        }
    }
}

impl AgentTool for LsTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        crate::tool_util::run_blocking(self.config.clone(), invocation, |config, args, _| {
            list(config, args)
        })
    }
}

fn list(config: &ToolsConfig, args: &Map<String, Value>) -> Result<AgentToolResult, ToolError> {
    let path = str_arg(args, "path")
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let dir = resolve_to_cwd(path, &config.cwd);
    let limit = effective_limit(num_arg(args, "limit"), DEFAULT_LIMIT);
    let Ok(meta) = std::fs::metadata(&dir) else {
        return Err(ToolError::new(format!("Path not found: {}", dir.display())));
    };
    if !meta.is_dir() {
        return Err(ToolError::new(format!(
            "Not a directory: {}",
            dir.display()
        )));
    }
    let read = std::fs::read_dir(&dir).map_err(|e| {
        ToolError::new(format!(
            "Cannot read directory: {}",
            fs_error::with_path(&e, "scandir", &dir)
        ))
    })?;
    // Names are decoded like Node decodes them; a name that is not UTF-8 then fails `stat`
    // below and is skipped, as in Pi.
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // Pi sorts with `a.toLowerCase().localeCompare(b.toLowerCase())`; full ties keep byte order
    // so the listing is deterministic.
    // Keys made once per name (building them per comparison was most of a listing).
    names.sort_by_cached_key(|name| (pi_js::collation_key(&name.to_lowercase()), name.clone()));
    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        match std::fs::metadata(dir.join(&name)) {
            Ok(m) if m.is_dir() => results.push(format!("{name}/")),
            Ok(_) => results.push(name),
            Err(_) => continue,
        }
    }
    if results.is_empty() {
        return Ok(text_result("(empty directory)", None));
    }
    let truncation = truncate_head(&results.join("\n"), Limits::bytes_only());
    let notice = limit_reached.then(|| {
        let text = format!(
            "{} entries limit reached. Use limit={} for more",
            js_number(limit as f64),
            js_number(limit as f64 * 2.0)
        );
        (text, "entryLimitReached", limit)
    });
    Ok(listing_result(truncation, notice))
}
