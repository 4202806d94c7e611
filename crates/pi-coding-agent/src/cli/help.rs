//! The `--help` text: the same commands and flags as Pi 1.6.0 (names, short forms, value
//! placeholders, grouping), described in our own words.

/// A flag registered by an extension, listed in the help after the built-in options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionFlagHelp {
    /// Name without `--`.
    pub name: String,
    /// Whether the flag takes a value (string flags are shown with `<value>`).
    pub takes_value: bool,
    /// The description, or `None` to name the extension that registered it.
    pub description: Option<String>,
    /// Path of the extension that registered the flag.
    pub extension_path: String,
}

const USAGE: &str = "\
pi - a coding agent that can read, run, edit and write in your project

Usage:
  pi [options] [--] [@files...] [messages...]

Commands:
  pi install <source> [-l]     Install an extension source and record it in settings
  pi remove <source> [-l]      Drop an extension source from settings
  pi uninstall <source> [-l]   Same as remove
  pi update [source|self|pi]   Update pi itself, installed extensions or model catalogs
  pi list                      Show the extensions recorded in settings
  pi config [-l]               Choose which package resources are enabled (Tab: global/project)
  pi auth <command>            Sign in or out, print credentials, check a provider
  pi mcp <command>             Configure MCP servers
  pi <command> --help          Usage of install/remove/uninstall/update/list/config/auth/mcp
";

const OPTIONS: &str = "
Options:
  --provider <name>              Provider in which to look up --model (needs --model)
  --model <pattern>              Model id or pattern; \"provider/id\" and a \":<thinking>\" suffix work
  --api-key <key>                API key for this run (otherwise taken from the environment)
  --system-prompt <text>         Replace the default system prompt
  --append-system-prompt <text>  Add text, or a file's contents, to the system prompt (repeatable)
  --mode <mode>                  Output: text (default), json or rpc
  --print, -p                    Answer the prompt without the interactive UI, then exit
  --continue, -c                 Pick up the latest session of this directory
  --resume, -r                   Choose a session to resume from a list
  --session <path|id>            Open the session with this file path or (partial) id
  --session-id <id>              Open this directory's session with this id, or start one with it
  --fork <path|id>               Copy a session (file path or partial id) into this directory
  --session-dir <dir>            Where sessions are stored and looked up
  --no-session                   Keep the session in memory only
  --name, -n <name>              Display name for the session
  --models <patterns>            Comma-separated models to cycle through with Ctrl+P
                                 Globs (anthropic/*, *sonnet*) and fuzzy names work
  --no-tools, -nt                Start with every tool off (built-in and extension)
  --no-builtin-tools, -nbt       Start with built-in tools off; extension/custom tools stay on
  --tools, -t <tools>            Comma-separated tool names or * patterns to enable (allowlist)
                                 MCP tools stay unless an entry starts with mcp__
                                 A list of only +name/-name entries edits the default set instead
  --exclude-tools, -xt <tools>   Comma-separated tool names or * patterns to disable
                                 Also applies to MCP tools
  --thinking <level>             Thinking level: off, minimal, low, medium, high, xhigh, max
  --extension, -e <path>         Load an extension file or builtin:<name> (repeatable)
  --no-extensions, -ne           Skip extension discovery and built-in extensions (-e still loads)
  --no-mcp                       Turn off built-in MCP support: no servers, no MCP tools
  --skill <path>                 Load a skill file or directory (repeatable)
  --no-skills, -ns               Skip skill discovery and loading
  --prompt-template <path>       Load a prompt template file or directory (repeatable)
  --no-prompt-templates, -np     Skip prompt template discovery and loading
  --theme <path>                 Load a theme file or directory (repeatable)
  --use-theme <name[/name]>      Theme to start the interactive UI with
  --no-themes                    Skip theme discovery and loading
  --no-context-files, -nc        Do not read AGENTS.md or CLAUDE.md files
  --export <file> [output]       Write a session file as HTML, then exit
  --list-models [search]         Show the available models (optionally fuzzy-filtered)
  --verbose                      Verbose startup, whatever the quietStartup setting says
  --tui-mode <mode>              Terminal UI: fullscreen (default) or regular
  --approve, -a                  Trust this project's local files for this run
  --no-approve, -na              Ignore this project's local files for this run
  --offline                      No startup network activity (like PI_OFFLINE=1)
  --                             Stop reading options; the rest are messages and @files
  --help, -h                     Print this help
  --version, -v                  Print the version
";

const TRAILER: &str = "
Extensions may add their own flags (for instance --plan from a plan-mode extension).

Examples:
  # Start the interactive UI, optionally with a first prompt
  pi
  pi \"Which files define the HTTP routes?\"

  # Attach files to the first prompt
  pi @notes.md @screenshot.png \"Explain the error in the screenshot\"

  # One-shot answer on stdout
  pi -p \"Summarize the README\"
  pi -p -- \"- a prompt that starts with a dash\"

  # Several prompts in a row, a named session, or the last session again
  pi \"Read Cargo.toml\" \"Which crates are outdated?\"
  pi --name \"Parser cleanup\"
  pi --continue \"Where were we?\"

  # Pick the model, its provider and the thinking level
  pi --provider openai --model gpt-4o-mini \"Tidy this function\"
  pi --model openai/gpt-4o \"Tidy this function\"
  pi --model sonnet:high \"Prove the invariant\"
  pi --thinking high \"Prove the invariant\"

  # Models to cycle through, optionally with thinking levels
  pi --models claude-sonnet,gpt-4o
  pi --models \"github-copilot/*\"
  pi --models sonnet:high,haiku:low

  # Choose the tools
  pi --tools read,grep,find,ls -p \"Audit src/ without changing anything\"
  pi --tools +codemode
  pi --tools read,bash,codemode,'mcp__radius__*'
  pi --exclude-tools ask_question

  # Credentials for other programs
  pi auth print-api-key --provider openai
  pi auth print-bearer-token --provider openai-codex

  # Turn a session file into HTML
  pi --export ~/.pi/agent/sessions/--path--/session.jsonl
  pi --export session.jsonl session.html

Environment variables:
  ANTHROPIC_AUTH_TOKEN             - Anthropic bearer token
  ANTHROPIC_API_KEY                - Anthropic API key
  ANTHROPIC_OAUTH_TOKEN            - Anthropic OAuth token (instead of an API key)
  ANT_LING_API_KEY                 - Ant Ling API key
  OPENAI_API_KEY                   - OpenAI API key
  AZURE_OPENAI_API_KEY             - Azure OpenAI API key
  AZURE_OPENAI_BASE_URL            - Azure OpenAI base URL (https://{resource}.openai.azure.com)
  AZURE_OPENAI_RESOURCE_NAME       - Azure OpenAI resource name (instead of the base URL)
  AZURE_OPENAI_API_VERSION         - Azure OpenAI API version (default v1)
  AZURE_OPENAI_DEPLOYMENT_NAME_MAP - Azure OpenAI model=deployment pairs, comma-separated
  DEEPSEEK_API_KEY                 - DeepSeek API key
  NVIDIA_API_KEY                   - NVIDIA NIM API key
  GEMINI_API_KEY                   - Google Gemini API key
  GROQ_API_KEY                     - Groq API key
  CEREBRAS_API_KEY                 - Cerebras API key
  XAI_API_KEY                      - xAI API key
  FIREWORKS_API_KEY                - Fireworks API key
  TOGETHER_API_KEY                 - Together AI API key
  BASETEN_API_KEY                  - Baseten API key
  OPENROUTER_API_KEY               - OpenRouter API key
  AI_GATEWAY_API_KEY               - Vercel AI Gateway API key
  ZAI_API_KEY                      - ZAI Coding Plan API key (global)
  ZAI_CODING_CN_API_KEY            - ZAI Coding Plan API key (China)
  MISTRAL_API_KEY                  - Mistral API key
  MINIMAX_API_KEY                  - MiniMax API key
  MOONSHOT_API_KEY                 - Moonshot AI API key
  OPENCODE_API_KEY                 - OpenCode Zen / OpenCode Go API key
  KIMI_API_KEY                     - Kimi For Coding API key
  META_API_KEY                     - Meta API key
  CLOUDFLARE_API_KEY               - Cloudflare API token (Workers AI and AI Gateway)
  CLOUDFLARE_ACCOUNT_ID            - Cloudflare account id (needed by both)
  CLOUDFLARE_GATEWAY_ID            - Cloudflare AI Gateway name (needed by AI Gateway)
  QWEN_TOKEN_PLAN_TEAM_API_KEY     - Qwen Token Plan Team API key (international)
  QWEN_TOKEN_PLAN_TEAM_CN_API_KEY  - Qwen Token Plan Team API key (China)
  QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY - Qwen Token Plan Individual API key (international)
  QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY - Qwen Token Plan Individual API key (China)
  XIAOMI_API_KEY                   - Xiaomi MiMo API key (api.xiaomimimo.com billing)
  XIAOMI_TOKEN_PLAN_CN_API_KEY     - Xiaomi MiMo Token Plan API key (China)
  XIAOMI_TOKEN_PLAN_AMS_API_KEY    - Xiaomi MiMo Token Plan API key (Amsterdam)
  XIAOMI_TOKEN_PLAN_SGP_API_KEY    - Xiaomi MiMo Token Plan API key (Singapore)
  AWS_PROFILE                      - AWS profile for Amazon Bedrock
  AWS_ACCESS_KEY_ID                - AWS access key for Amazon Bedrock
  AWS_SECRET_ACCESS_KEY            - AWS secret key for Amazon Bedrock
  AWS_BEARER_TOKEN_BEDROCK         - Amazon Bedrock API key (bearer token)
  AWS_REGION                       - AWS region for Amazon Bedrock (e.g. us-east-1)
  PI_CODING_AGENT_DIR              - Configuration directory (default ~/.pi/agent)
  PI_CODING_AGENT_SESSION_DIR      - Session directory (--session-dir takes precedence)
  PI_PACKAGE_DIR                   - Package directory override (e.g. Nix/Guix store paths)
  PI_OFFLINE                       - 1/true/yes: no network activity at startup
  PI_SELF_UPDATE_COMMAND           - What pi update runs to update pi ({packageName}, {version}, {installSpec})
  PI_TELEMETRY                     - 1/true/yes or 0/false/no: force install telemetry on or off
  PI_SHARE_VIEWER_URL              - Base URL used by /share (default https://pi.dev/session/)

Built-in tools:
  read       - Read a file
  bash       - Run a bash command
  powershell - Run a PowerShell command (Windows)
  edit       - Replace exact text in a file
  write      - Create or overwrite a file
  grep       - Search file contents (read-only, off by default)
  find       - Find files matching a glob (read-only, off by default)
  ls         - List a directory (read-only, off by default)
";

/// The help text without extension flags.
pub fn help_text() -> String {
    help_text_with_extension_flags(&[])
}

/// The help text, with a section for flags registered by loaded extensions (if any).
pub fn help_text_with_extension_flags(flags: &[ExtensionFlagHelp]) -> String {
    let mut text = String::with_capacity(USAGE.len() + OPTIONS.len() + TRAILER.len() + 256);
    text.push_str(USAGE);
    text.push_str(OPTIONS);
    if !flags.is_empty() {
        text.push_str("\nExtension flags:\n");
        for flag in flags {
            let value = if flag.takes_value { " <value>" } else { "" };
            let left = format!("  --{}{value}", flag.name);
            let description = match &flag.description {
                Some(d) => d.clone(),
                None => format!("Registered by {}", flag.extension_path),
            };
            text.push_str(&format!("{left:<30}{description}\n"));
        }
    }
    text.push_str(TRAILER);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of `pi --help` (1.6.0), with its short form and placeholder.
    const PI_OPTIONS: &[&str] = &[
        "--provider <name>",
        "--model <pattern>",
        "--api-key <key>",
        "--system-prompt <text>",
        "--append-system-prompt <text>",
        "--mode <mode>",
        "--print, -p",
        "--continue, -c",
        "--resume, -r",
        "--session <path|id>",
        "--session-id <id>",
        "--fork <path|id>",
        "--session-dir <dir>",
        "--no-session",
        "--name, -n <name>",
        "--models <patterns>",
        "--no-tools, -nt",
        "--no-builtin-tools, -nbt",
        "--tools, -t <tools>",
        "--exclude-tools, -xt <tools>",
        "--thinking <level>",
        "--extension, -e <path>",
        "--no-extensions, -ne",
        "--no-mcp",
        "--skill <path>",
        "--no-skills, -ns",
        "--prompt-template <path>",
        "--no-prompt-templates, -np",
        "--theme <path>",
        "--use-theme <name[/name]>",
        "--no-themes",
        "--no-context-files, -nc",
        "--export <file> [output]",
        "--list-models [search]",
        "--verbose",
        "--tui-mode <mode>",
        "--approve, -a",
        "--no-approve, -na",
        "--offline",
        "--help, -h",
        "--version, -v",
    ];

    #[test]
    fn lists_every_option_in_order() {
        let text = help_text();
        let mut from = 0;
        for option in PI_OPTIONS {
            let line = format!("\n  {option} ");
            let Some(at) = text[from..].find(&line) else {
                panic!("missing or out of order: {option}");
            };
            from += at + 1;
        }
        for command in [
            "pi install <source> [-l]",
            "pi remove <source> [-l]",
            "pi uninstall <source> [-l]",
            "pi update [source|self|pi]",
            "pi list ",
            "pi config [-l]",
            "pi auth <command>",
            "pi mcp <command>",
            "pi <command> --help",
        ] {
            assert!(text.contains(command), "{command}");
        }
        assert!(text.contains("pi [options] [--] [@files...] [messages...]"));
        assert!(text.ends_with('\n') && !text.ends_with("\n\n"));
    }

    #[test]
    fn descriptions_line_up() {
        let text = help_text();
        let options = text
            .split("\nOptions:\n")
            .nth(1)
            .and_then(|s| s.split("\n\n").next())
            .unwrap();
        for line in options.lines() {
            assert!(line.len() > 33, "{line}");
            assert_eq!(&line[..2], "  ");
            // Descriptions start in column 33.
            assert_ne!(line.as_bytes()[33], b' ', "{line}");
            assert_eq!(line.as_bytes()[32], b' ', "{line}");
        }
    }

    #[test]
    fn extension_flags() {
        let text = help_text_with_extension_flags(&[
            ExtensionFlagHelp {
                name: "plan".into(),
                takes_value: false,
                description: Some("Start in plan mode".into()),
                extension_path: "/x/plan.ts".into(),
            },
            ExtensionFlagHelp {
                name: "level".into(),
                takes_value: true,
                description: None,
                extension_path: "/x/lvl.ts".into(),
            },
        ]);
        assert!(text.contains(
            "\nExtension flags:\n  --plan                      Start in plan mode\n  --level <value>             Registered by /x/lvl.ts\n\nExtensions may add"
        ));
        assert!(!help_text().contains("Extension flags"));
    }
}
