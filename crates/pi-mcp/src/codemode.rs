//! The `codemode` tool as the model sees it: raw JavaScript in one `code` argument, with Pi's
//! grammar for providers that constrain sampling. Running scripts needs the QuickJS sandbox,
//! which this build does not have yet: a call fails with a `Script failed` result that says so,
//! so the model falls back to calling tools itself.

use pi_agent::{AgentTool, ToolFuture, ToolInvocation};
use pi_protocol::content::{TextContent, UserBlock};
use pi_protocol::tool::{
    AgentToolResult, ConstrainedSampling, ConstrainedSamplingConfig, GrammarVariants, Tool,
};
use serde_json::json;

pub const CODEMODE_TOOL_NAME: &str = "codemode";

/// The Lark grammar of a script: an optional `// @options:` first line, then the source.
const SOURCE_GRAMMAR: &str = "\nstart: options_source | plain_source\noptions_source: OPTIONS_LINE NEWLINE SOURCE\nplain_source: SOURCE\n\nOPTIONS_LINE: /[ \\t]*\\/\\/ @options:[^\\r\\n]*/\nNEWLINE: /\\r?\\n/\nSOURCE: /[\\s\\S]+/\n";

/// The system prompt line and rule of the tool.
pub const PROMPT_SNIPPET: &str = "Run JavaScript that calls other tools";
pub const PROMPT_GUIDELINE: &str = "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter large output, instead of many separate calls.";

pub struct CodemodeTool {
    declaration: Tool,
}

impl Default for CodemodeTool {
    fn default() -> Self {
        CodemodeTool {
            declaration: Tool {
                name: CODEMODE_TOOL_NAME.into(),
                description: "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as the body of an async function: top-level `await` and `return` work. Call tools with `await tools.<name>({ ...args })`; `text()`, `console.log()` and `return` add output.".into(),
                parameters: json!({"type": "object", "required": ["code"], "properties": {
                    "code": {"type": "string", "description": "Raw JavaScript source."}
                }}),
                constrained_sampling: Some(ConstrainedSampling::Config(
                    ConstrainedSamplingConfig::Grammar {
                        variants: GrammarVariants {
                            openai_lark: Some(SOURCE_GRAMMAR.into()),
                            openai_regex: None,
                        },
                    },
                )),
                rest: Default::default(),
            },
        }
    }
}

impl AgentTool for CodemodeTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, _inv: ToolInvocation) -> ToolFuture {
        Box::pin(async move {
            let text = "Script failed\nWall time 0.0 seconds\nOutput:\n\nScript error: codemode scripts cannot run in this build of pi yet (no JavaScript sandbox); call the tools directly instead.";
            let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
            r.details = Some(json!({"calls": []}));
            r.is_error = Some(true);
            Ok(r)
        })
    }
}
