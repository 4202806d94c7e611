//! The `--help` text: every flag of Pi 1.6.0 (names, short forms, value placeholders, order),
//! described in our own words and honestly: what has no effect in this program says so, and
//! subcommands that do not exist here are not listed.

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

pi in Rust speaks Pi 1.6.0's machine interfaces; it has no interactive terminal UI.

Usage:
  pi --mode rpc [options]                 JSON commands on stdin, responses and events on stdout
  pi --mode json [options] [messages...]  Every event of the prompts as JSON lines, then exit
  pi -p [options] [@files...] [messages...]
                                          Answer the prompts, print the final text, then exit

Commands:
  pi mcp <command>             Manage MCP servers (pi mcp --help)
  pi auth <command>            Log in or out, print credentials, or check provider readiness
  pi auth --help               Show the auth commands
  pi install <source> [-l]     Install a package (npm:, git:, URL or path) and add it to settings
  pi remove <source> [-l]      Remove a package and its entry in settings
  pi uninstall <source> [-l]   Alias for remove
  pi update [source]           Update installed packages (--extensions: all of them), or the
                               model catalogs (--models); pi update explains how this program
                               itself is updated
  pi list                      List the packages of user and project settings
  pi config [-l]               Switch package resources and built-in extensions on or off
                               (Tab switches between user and project settings)
  pi schema [--typescript]     Print the JSON Schema (or TypeScript declarations) of the RPC
                               protocol
  pi <command> --help          Show help for install/remove/uninstall/update/list/config
";

const OPTIONS: &str = "
Options:
  --provider <name>              Provider in which to look up --model (needs --model)
  --model <pattern>              Model id or pattern; \"provider/id\" and a \":<thinking>\" suffix work
  --api-key <key>                API key for this run (otherwise taken from the environment)
  --system-prompt <text>         Replace the default system prompt
  --append-system-prompt <text>  Add text, or a file's contents, to the system prompt (repeatable)
  --mode <mode>                  Output: text (default, with -p), json or rpc
  --print, -p                    Answer the prompts, print the final text, then exit
  --continue, -c                 Pick up the latest session of this directory
  --resume, -r                   Pick a session from a list (needs a terminal UI: not available)
  --session <path|id>            Open the session with this file path or (partial) id
  --session-id <id>              Open this directory's session with this id, or start one with it
  --fork <path|id>               Copy a session (file path or partial id) into this directory
  --session-dir <dir>            Where sessions are stored and looked up
  --no-session                   Keep the session in memory only
  --name, -n <name>              Display name for the session
  --models <patterns>            Comma-separated models for cycle_model
                                 Globs (anthropic/*, *sonnet*) and fuzzy names work
  --no-tools, -nt                Start with every tool off
  --no-builtin-tools, -nbt       Start with built-in tools off
  --tools, -t <tools>            Comma-separated tool names to enable (allowlist)
                                 A list of only +name/-name entries edits the default set instead
                                 MCP tools stay unless an entry (or mcp__* pattern) names them
  --exclude-tools, -xt <tools>   Comma-separated tool names to disable (mcp__* patterns too)
  --thinking <level>             Thinking level: off, minimal, low, medium, high, xhigh, max
  --extension, -e <path>         Load an extension file, a package (folder, npm:, git:) for this run,
                                 or builtin:<name> (repeatable; extension files run in Node 22 or
                                 newer, found on PATH or as PI_NODE)
  --no-extensions, -ne           Do not discover or load extensions
  --no-mcp                       No MCP servers for this run: no servers connect, no MCP tools, no /mcp
  --skill <path>                 Load a skill file or directory (repeatable)
  --no-skills, -ns               Skip skill discovery and loading
  --prompt-template <path>       Load a prompt template file or directory (repeatable)
  --no-prompt-templates, -np     Skip prompt template discovery and loading
  --theme <path>                 Load a theme file or directory (repeatable); the theme setting
                                 names the theme export_html pages are coloured with
  --use-theme <name[/name]>      Accepted for compatibility (it picks the terminal UI's theme)
  --no-themes                    Skip theme discovery and loading
  --no-context-files, -nc        Do not read AGENTS.md or CLAUDE.md files
  --export <file> [output]       Write a session file as HTML, then exit
  --list-models [search]         Show the available models (optionally fuzzy-filtered)
  --verbose                      Accepted for compatibility (startup output is always the same)
  --tui-mode <mode>              Accepted for compatibility (there is no terminal UI)
  --approve, -a                  Trust this project's local files for this run
  --no-approve, -na              Ignore this project's local files for this run
  --offline                      No startup network activity (like PI_OFFLINE=1)
  --                             Stop reading options; the rest are messages and @files
  --help, -h                     Print this help
  --version, -v                  Print the version of Pi this program is compatible with
";

const TRAILER: &str = "
Examples:
  # Drive a session from another program (one JSON command per line)
  pi --mode rpc --provider anthropic --model claude-sonnet-4-5

  # One-shot answer on stdout, optionally with files attached to the first prompt
  pi -p \"Summarize the README\"
  pi -p @notes.md @screenshot.png \"Explain the error in the screenshot\"
  pi -p -- \"- a prompt that starts with a dash\"

  # Several prompts in a row, a named session, or the last session again
  pi -p \"Read Cargo.toml\" \"Which crates are outdated?\"
  pi -p --name \"Parser cleanup\" \"Start with the lexer\"
  pi -p --continue \"Where were we?\"

  # Pick the model, its provider and the thinking level
  pi -p --provider openai --model gpt-4o-mini \"Tidy this function\"
  pi -p --model openai/gpt-4o \"Tidy this function\"
  pi -p --model sonnet:high \"Prove the invariant\"

  # Choose the tools
  pi -p --tools read,grep,find,ls \"Audit src/ without changing anything\"

  # Turn a session file into HTML
  pi --export ~/.pi/agent/sessions/--path--/session.jsonl
  pi --export session.jsonl session.html

Environment variables:
  <PROVIDER>_API_KEY             - API key of a built-in provider, e.g. ANTHROPIC_API_KEY,
                                   OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, XAI_API_KEY
                                   (pi --list-models shows which models have a key)
  PI_CODING_AGENT_DIR            - Configuration directory (default ~/.pi/agent)
  PI_CODING_AGENT_SESSION_DIR    - Session directory (--session-dir takes precedence)
  PI_PACKAGE_DIR                 - Folder named in the system prompt's docs section
  PI_OFFLINE                     - 1/true/yes: no network activity at startup

Built-in tools:
  read       - Read a file
  bash       - Run a bash command
  edit       - Replace exact text in a file
  write      - Create or overwrite a file
  grep       - Search file contents (read-only, off by default)
  find       - Find files matching a glob (read-only, off by default)
  ls         - List a directory (read-only, off by default)
  tool_search - Find and load tools that are not declared yet, such as MCP tools (off by
               default; on when an MCP server has deferred exposure)
  codemode   - Run JavaScript (QuickJS sandbox) that calls the other tools (off by default; on
               when an MCP server has codemode exposure, the default)
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
        // The commands that exist are advertised.
        assert!(text.contains("\n  pi install <source> [-l] "));
        assert!(text.contains("\n  pi mcp <command> "));
        assert!(text.contains("\n  pi auth <command>  "));
        assert!(text.contains("pi --mode rpc [options]"));
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
            "\nExtension flags:\n  --plan                      Start in plan mode\n  --level <value>             Registered by /x/lvl.ts\n\nExamples:"
        ));
        assert!(!help_text().contains("Extension flags"));
    }
}
