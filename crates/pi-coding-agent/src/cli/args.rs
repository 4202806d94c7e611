//! The flag table and the raw parser: argv → [`Args`] plus parse diagnostics.
//!
//! This is a single left-to-right pass with Pi 1.6.0's quirks (`dist/cli/args.js`):
//! * value flags only take a value when one follows; at the end of argv a long one falls through
//!   to the extension-flag store (`--model` → unknown flag `model`) and a short one is an
//!   `Unknown option` error (`-t` → `Unknown option: -t`);
//! * most value flags take the next argument whatever it looks like (`--model --foo` sets the
//!   model to `--foo`); `--mode`, `--use-theme` and `--tui-mode` refuse a value starting with `-`;
//! * `-p` takes the next argument as a message unless it starts with `@` or `-` (`---x` is a message);
//! * unknown long flags are kept for extensions (once extensions are loaded, those none registered
//!   are errors: `validate::resolve_extension_flags`), unknown short flags are errors at once;
//! * nothing here reads files or the environment.

use pi_protocol::ThinkingLevel;

use super::{Diagnostic, Mode};

/// Error message of `--mode` without a usable value.
pub const MODE_REQUIRES_VALUE: &str = "--mode requires text, json, or rpc";
/// Error message of `--name`/`-n` at the end of argv.
pub const NAME_REQUIRES_VALUE: &str = "--name requires a value";
/// Error message of `--use-theme` without a usable value.
pub const USE_THEME_REQUIRES_VALUE: &str = "--use-theme requires a theme name";
/// Error message of `--tui-mode` without a usable value.
pub const TUI_MODE_REQUIRES_VALUE: &str = "--tui-mode requires regular or fullscreen";

/// `--tui-mode` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuiMode {
    Regular,
    Fullscreen,
}

impl TuiMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TuiMode::Regular => "regular",
            TuiMode::Fullscreen => "fullscreen",
        }
    }
}

/// How the process will run once startup is done (`resolveAppMode` in Pi's main.js).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppMode {
    Interactive,
    Print,
    Json,
    Rpc,
}

/// A flag the parser does not know, kept for extensions (`--plan`, `--foo=bar`, `--foo bar`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFlag {
    /// Name without the leading `--` (may be empty for `--=x`, or `-` for `---`).
    pub name: String,
    /// `None` for a bare flag (Pi stores `true`), else the value.
    pub value: Option<String>,
}

/// Everything the command line said. Fields mirror Pi's parse result; values are as given unless
/// the field says otherwise.
///
/// Several of Pi's checks test a value for truthiness, so an empty string counts as "not given".
/// For the fields where every use in Pi does that (`provider`, `model`, `api_key`, `session`,
/// `fork`, `session_dir`, `export`) the parser stores `None` for an empty value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    /// `--mode`; `Text` when not given (see `mode_given`).
    pub mode: Mode,
    /// Whether a valid `--mode` was given (Pi tells `--mode text` apart from no `--mode`: see
    /// [`Args::takes_over_stdout`]).
    pub mode_given: bool,
    /// Non-fatal parse diagnostics, message only (print as `Warning: <message>`), e.g. an invalid
    /// `--thinking` value. The same warnings are in `Invocation::diagnostics`, in order with errors.
    pub warnings: Vec<String>,

    /// `-h`/`--help` was seen.
    pub help: bool,
    /// `-v`/`--version` was seen.
    pub version: bool,
    /// `-p`/`--print`.
    pub print: bool,
    /// Positional messages, in order (also everything after `--` that does not start with `@`).
    pub messages: Vec<String>,
    /// `@path` positionals, without the `@`.
    pub file_args: Vec<String>,

    /// `--provider <name>` (last wins; empty = not given).
    pub provider: Option<String>,
    /// `--model <pattern>` (last wins; empty = not given).
    pub model: Option<String>,
    /// `--api-key <key>` (last wins; empty = not given).
    pub api_key: Option<String>,
    /// `--system-prompt <text>` (last wins; text or a file path, resolved later).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt <text>`, repeatable, in order.
    pub append_system_prompt: Vec<String>,
    /// `--thinking <level>` when valid (an invalid one is a warning and leaves this unchanged).
    pub thinking: Option<ThinkingLevel>,
    /// `--models <patterns>`: comma-split, trimmed, empties dropped (last wins). `Some(vec![])`
    /// (from `--models ,`) is not the same as `None`: it overrides the `enabledModels` setting.
    pub models: Option<Vec<String>>,

    /// `-c`/`--continue`.
    pub continue_session: bool,
    /// `-r`/`--resume`.
    pub resume: bool,
    /// `--session <path|id>` (empty = not given).
    pub session: Option<String>,
    /// `--session-id <id>` as given (validated by the cross-flag checks).
    pub session_id: Option<String>,
    /// `--fork <path|id>` (empty = not given).
    pub fork: Option<String>,
    /// `--session-dir <dir>` (empty = not given).
    pub session_dir: Option<String>,
    /// `--no-session`.
    pub no_session: bool,
    /// `-n`/`--name <name>`. After a successful [`super::parse_cli`] this is the trimmed,
    /// non-empty display name.
    pub name: Option<String>,

    /// `-nt`/`--no-tools`.
    pub no_tools: bool,
    /// `-nbt`/`--no-builtin-tools`.
    pub no_builtin_tools: bool,
    /// `-t`/`--tools <list>`: comma-split, trimmed, empties dropped (last valid one wins). Either
    /// plain names/patterns (an allowlist) or only `+name`/`-name` modifiers of the default set.
    pub tools: Option<Vec<String>>,
    /// `-xt`/`--exclude-tools <list>`: comma-split, trimmed, empties dropped (last wins).
    pub exclude_tools: Option<Vec<String>>,

    /// `-e`/`--extension <path>`, repeatable.
    pub extensions: Vec<String>,
    /// `-ne`/`--no-extensions`.
    pub no_extensions: bool,
    /// `--no-mcp`.
    pub no_mcp: bool,
    /// `--skill <path>`, repeatable.
    pub skills: Vec<String>,
    /// `-ns`/`--no-skills`.
    pub no_skills: bool,
    /// `--prompt-template <path>`, repeatable.
    pub prompt_templates: Vec<String>,
    /// `-np`/`--no-prompt-templates`.
    pub no_prompt_templates: bool,
    /// `--theme <path>`, repeatable.
    pub themes: Vec<String>,
    /// `--use-theme <name[/name]>`.
    pub use_theme: Option<String>,
    /// `--no-themes`.
    pub no_themes: bool,
    /// `-nc`/`--no-context-files`.
    pub no_context_files: bool,

    /// `--export <file>` (empty = not given); the output path is the first message.
    pub export: Option<String>,
    /// `--list-models [search]`: `Some(None)` without a search term.
    pub list_models: Option<Option<String>>,
    /// `--verbose`.
    pub verbose: bool,
    /// `--tui-mode <regular|fullscreen>`.
    pub tui_mode: Option<TuiMode>,
    /// `-a`/`--approve` → `Some(true)`, `-na`/`--no-approve` → `Some(false)` (last wins).
    pub project_trust_override: Option<bool>,
    /// `--offline` appears anywhere in argv, even after `--` or as another flag's value (Pi tests
    /// `argv.includes("--offline")`). `PI_OFFLINE` is separate: see [`Args::offline_mode`].
    pub offline: bool,

    /// Unknown long flags, in first-seen order; a repeated name replaces the value in place
    /// (Pi keeps them in a `Map`). Handed to extensions as flag values.
    pub unknown_flags: Vec<UnknownFlag>,
}

impl Args {
    /// The value of an unknown (extension) flag: `None` if absent, `Some(None)` if bare.
    pub fn unknown_flag(&self, name: &str) -> Option<Option<&str>> {
        self.unknown_flags
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.value.as_deref())
    }

    /// Offline mode: `--offline` in argv or `PI_OFFLINE` set to `1`/`true`/`yes` (any case).
    /// Pass `std::env::var("PI_OFFLINE").ok().as_deref()`. Pi then also sets `PI_OFFLINE=1` and
    /// `PI_SKIP_VERSION_CHECK=1` in its own environment.
    pub fn offline_mode(&self, pi_offline_env: Option<&str>) -> bool {
        self.offline || super::env::is_truthy_env_flag(pi_offline_env)
    }

    /// The run mode: `--mode rpc`/`json` win; then `--print` or a non-terminal stdin/stdout selects
    /// print mode; else interactive. (Pi later also switches interactive to print when piped stdin
    /// has content.)
    pub fn app_mode(&self, stdin_is_tty: bool, stdout_is_tty: bool) -> AppMode {
        match self.mode {
            Mode::Rpc => AppMode::Rpc,
            Mode::Json => AppMode::Json,
            Mode::Text if self.print || !stdin_is_tty || !stdout_is_tty => AppMode::Print,
            Mode::Text => AppMode::Interactive,
        }
    }

    /// Whether Pi redirects stdout to stderr before startup (`takeOverStdout`): in every
    /// non-interactive mode, except that plain `--help`/`--list-models` (no `-p`, no `--mode`)
    /// keep writing to stdout. So `pi --help --mode text | cat` prints the help on stderr.
    pub fn takes_over_stdout(&self, app_mode: AppMode) -> bool {
        let plain_metadata =
            !self.print && !self.mode_given && (self.help || self.list_models.is_some());
        app_mode != AppMode::Interactive && !plain_metadata
    }
}

/// Parses argv (without the program name) into [`Args`] and the parse diagnostics, in argv order.
/// No cross-flag checks: see `validate`.
pub fn parse_flags(argv: &[String]) -> (Args, Vec<Diagnostic>) {
    let mut p = Parser {
        args: Args {
            offline: argv.iter().any(|a| a == "--offline"),
            ..Args::default()
        },
        diagnostics: Vec::new(),
    };
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_str();
        let next = argv.get(i + 1).map(String::as_str);
        // Number of arguments consumed beyond `arg`.
        let used = if arg == "--" {
            for rest in &argv[i + 1..] {
                p.positional(rest);
            }
            break;
        } else {
            p.flag(arg, next)
        };
        i += 1 + used;
    }
    (p.args, p.diagnostics)
}

struct Parser {
    args: Args,
    diagnostics: Vec<Diagnostic>,
}

/// Comma-separated list: split on `,`, trim each entry, drop empties.
fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(pi_js::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `Some(value)` unless empty: for fields Pi only tests for truthiness.
fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_string())
}

impl Parser {
    fn error(&mut self, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(message));
    }

    fn warning(&mut self, message: impl Into<String>) {
        let message = message.into();
        self.args.warnings.push(message.clone());
        self.diagnostics.push(Diagnostic::warning(message));
    }

    fn positional(&mut self, arg: &str) {
        match arg.strip_prefix('@') {
            Some(path) => self.args.file_args.push(path.to_string()),
            None => self.args.messages.push(arg.to_string()),
        }
    }

    /// Handles one argument that is not `--`; returns how many following arguments it consumed.
    fn flag(&mut self, arg: &str, next: Option<&str>) -> usize {
        let a = &mut self.args;
        // Flags that never take a value.
        match arg {
            "--help" | "-h" => a.help = true,
            "--version" | "-v" => a.version = true,
            "--continue" | "-c" => a.continue_session = true,
            "--resume" | "-r" => a.resume = true,
            "--no-session" => a.no_session = true,
            "--no-tools" | "-nt" => a.no_tools = true,
            "--no-builtin-tools" | "-nbt" => a.no_builtin_tools = true,
            "--no-extensions" | "-ne" => a.no_extensions = true,
            "--no-mcp" => a.no_mcp = true,
            "--no-skills" | "-ns" => a.no_skills = true,
            "--no-prompt-templates" | "-np" => a.no_prompt_templates = true,
            "--no-themes" => a.no_themes = true,
            "--no-context-files" | "-nc" => a.no_context_files = true,
            "--verbose" => a.verbose = true,
            "--approve" | "-a" => a.project_trust_override = Some(true),
            "--no-approve" | "-na" => a.project_trust_override = Some(false),
            // Already recorded from the whole argv.
            "--offline" => {}
            _ => return self.flag_with_value(arg, next),
        }
        0
    }

    fn flag_with_value(&mut self, arg: &str, next: Option<&str>) -> usize {
        match (arg, next) {
            ("--mode", _) => self.mode(next),
            ("--name" | "-n", Some(v)) => {
                self.args.name = Some(v.to_string());
                1
            }
            ("--name" | "-n", None) => {
                self.error(NAME_REQUIRES_VALUE);
                0
            }
            ("--print" | "-p", _) => {
                self.args.print = true;
                match next {
                    Some(v)
                        if !v.starts_with('@') && (!v.starts_with('-') || v.starts_with("---")) =>
                    {
                        self.args.messages.push(v.to_string());
                        1
                    }
                    _ => 0,
                }
            }
            ("--list-models", _) => match next {
                Some(v) if !v.starts_with('-') && !v.starts_with('@') => {
                    self.args.list_models = Some(Some(v.to_string()));
                    1
                }
                _ => {
                    self.args.list_models = Some(None);
                    0
                }
            },
            ("--use-theme", _) => match next {
                Some(v) if !v.starts_with('-') => {
                    self.args.use_theme = Some(v.to_string());
                    1
                }
                _ => {
                    self.error(USE_THEME_REQUIRES_VALUE);
                    0
                }
            },
            ("--tui-mode", _) => self.tui_mode(next),
            (_, Some(v)) if self.simple_value(arg, v) => 1,
            _ => self.other(arg, next),
        }
    }

    /// Value flags that take the next argument whatever it is. Returns false if `arg` is not one.
    fn simple_value(&mut self, arg: &str, v: &str) -> bool {
        let a = &mut self.args;
        match arg {
            "--provider" => a.provider = non_empty(v),
            "--model" => a.model = non_empty(v),
            "--api-key" => a.api_key = non_empty(v),
            "--system-prompt" => a.system_prompt = Some(v.to_string()),
            "--append-system-prompt" => a.append_system_prompt.push(v.to_string()),
            "--session" => a.session = non_empty(v),
            "--session-id" => a.session_id = Some(v.to_string()),
            "--fork" => a.fork = non_empty(v),
            "--session-dir" => a.session_dir = non_empty(v),
            "--models" => a.models = Some(split_list(v)),
            "--tools" | "-t" => {
                let tools = split_list(v);
                match tool_list_error(&tools) {
                    Some(error) => self.error(format!("{arg}: {error}")),
                    None => self.args.tools = Some(tools),
                }
            }
            "--exclude-tools" | "-xt" => a.exclude_tools = Some(split_list(v)),
            "--thinking" => match ThinkingLevel::parse(v) {
                Some(level) => a.thinking = Some(level),
                None => self.warning(invalid_thinking_level(v)),
            },
            "--export" => a.export = non_empty(v),
            "--extension" | "-e" => a.extensions.push(v.to_string()),
            "--skill" => a.skills.push(v.to_string()),
            "--prompt-template" => a.prompt_templates.push(v.to_string()),
            "--theme" => a.themes.push(v.to_string()),
            _ => return false,
        }
        true
    }

    fn mode(&mut self, next: Option<&str>) -> usize {
        let Some(value) = next.filter(|v| !v.starts_with('-')) else {
            self.error(MODE_REQUIRES_VALUE);
            return 0;
        };
        let mode = match value {
            "text" => Mode::Text,
            "json" => Mode::Json,
            "rpc" => Mode::Rpc,
            _ => {
                self.error(format!(
                    "Invalid mode \"{value}\". Valid values: text, json, rpc"
                ));
                return 1;
            }
        };
        self.args.mode = mode;
        self.args.mode_given = true;
        1
    }

    fn tui_mode(&mut self, next: Option<&str>) -> usize {
        match next {
            Some("regular") => self.args.tui_mode = Some(TuiMode::Regular),
            Some("fullscreen") => self.args.tui_mode = Some(TuiMode::Fullscreen),
            Some(v) if !v.starts_with('-') => {
                self.error(format!(
                    "Invalid TUI mode \"{v}\". Valid values: regular, fullscreen"
                ));
            }
            _ => {
                self.error(TUI_MODE_REQUIRES_VALUE);
                return 0;
            }
        }
        1
    }

    /// `@file`, unknown long flags (also known value flags with no value left), unknown short
    /// flags and messages.
    fn other(&mut self, arg: &str, next: Option<&str>) -> usize {
        if arg.starts_with('@') {
            self.positional(arg);
            return 0;
        }
        if let Some(flag) = arg.strip_prefix("--") {
            let (name, value, used) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string()), 0),
                None => match next {
                    Some(v) if !v.starts_with('-') && !v.starts_with('@') => {
                        (flag, Some(v.to_string()), 1)
                    }
                    _ => (flag, None, 0),
                },
            };
            self.unknown_flag(name, value);
            return used;
        }
        if arg.starts_with('-') {
            self.error(format!("Unknown option: {arg}"));
            return 0;
        }
        self.args.messages.push(arg.to_string());
        0
    }

    fn unknown_flag(&mut self, name: &str, value: Option<String>) {
        let flags = &mut self.args.unknown_flags;
        match flags.iter_mut().find(|f| f.name == name) {
            Some(existing) => existing.value = value,
            None => flags.push(UnknownFlag {
                name: name.to_string(),
                value,
            }),
        }
    }
}

/// Warning message for an invalid `--thinking` value.
pub fn invalid_thinking_level(value: &str) -> String {
    let valid: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
    format!(
        "Invalid thinking level \"{value}\". Valid values: {}",
        valid.join(", ")
    )
}

/// Whether a `--tools` entry is a `+name`/`-name` modifier of the default tool set.
pub fn is_tool_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// What is wrong with a `--tools` list (also used for the `defaultTools` setting): modifiers and
/// plain names may not be mixed, and modifiers take exact names, not `*` patterns.
pub fn tool_list_error(entries: &[String]) -> Option<String> {
    let modifiers: Vec<&String> = entries.iter().filter(|e| is_tool_modifier(e)).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some("tool names cannot be mixed with +name or -name entries".to_string());
    }
    modifiers
        .iter()
        .find(|e| e.contains('*'))
        .map(|p| format!("+name and -name entries take exact tool names, not patterns: {p}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::DiagnosticKind;

    fn argv(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn parse(list: &[&str]) -> (Args, Vec<Diagnostic>) {
        parse_flags(&argv(list))
    }

    fn ok(list: &[&str]) -> Args {
        let (args, diags) = parse(list);
        assert!(diags.is_empty(), "{list:?}: {diags:?}");
        args
    }

    fn errors(list: &[&str]) -> Vec<String> {
        parse(list)
            .1
            .into_iter()
            .filter(|d| d.kind == DiagnosticKind::Error)
            .map(|d| d.message)
            .collect()
    }

    #[test]
    fn empty_argv() {
        assert_eq!(ok(&[]), Args::default());
    }

    type FlagCase = (&'static [&'static str], fn(&Args) -> bool);

    #[test]
    fn boolean_flags_long_and_short() {
        let cases: &[FlagCase] = &[
            (&["--help"], |a| a.help),
            (&["-h"], |a| a.help),
            (&["--version"], |a| a.version),
            (&["-v"], |a| a.version),
            (&["--continue"], |a| a.continue_session),
            (&["-c"], |a| a.continue_session),
            (&["--resume"], |a| a.resume),
            (&["-r"], |a| a.resume),
            (&["--no-session"], |a| a.no_session),
            (&["--no-tools"], |a| a.no_tools),
            (&["-nt"], |a| a.no_tools),
            (&["--no-builtin-tools"], |a| a.no_builtin_tools),
            (&["-nbt"], |a| a.no_builtin_tools),
            (&["--no-extensions"], |a| a.no_extensions),
            (&["-ne"], |a| a.no_extensions),
            (&["--no-mcp"], |a| a.no_mcp),
            (&["--no-skills"], |a| a.no_skills),
            (&["-ns"], |a| a.no_skills),
            (&["--no-prompt-templates"], |a| a.no_prompt_templates),
            (&["-np"], |a| a.no_prompt_templates),
            (&["--no-themes"], |a| a.no_themes),
            (&["--no-context-files"], |a| a.no_context_files),
            (&["-nc"], |a| a.no_context_files),
            (&["--verbose"], |a| a.verbose),
            (&["--offline"], |a| a.offline),
            (&["--print"], |a| a.print),
            (&["-p"], |a| a.print),
            (&["--approve"], |a| a.project_trust_override == Some(true)),
            (&["-a"], |a| a.project_trust_override == Some(true)),
            (&["--no-approve"], |a| {
                a.project_trust_override == Some(false)
            }),
            (&["-na"], |a| a.project_trust_override == Some(false)),
        ];
        for (list, check) in cases {
            let args = ok(list);
            assert!(check(&args), "{list:?}");
            assert!(!check(&Args::default()), "{list:?} default");
            assert!(args.messages.is_empty() && args.unknown_flags.is_empty());
        }
    }

    #[test]
    fn approve_last_wins() {
        assert_eq!(ok(&["-a", "-na"]).project_trust_override, Some(false));
        assert_eq!(ok(&["-na", "--approve"]).project_trust_override, Some(true));
    }

    #[test]
    fn string_flags() {
        let a = ok(&[
            "--provider",
            "openai",
            "--model",
            "gpt-4o:high",
            "--api-key",
            "sk-1",
            "--system-prompt",
            "be brief",
            "--session",
            "abc",
            "--session-id",
            "my-id",
            "--fork",
            "f.jsonl",
            "--session-dir",
            "/tmp/s",
            "--name",
            "  My session ",
            "--export",
            "s.jsonl",
            "--use-theme",
            "dark/light",
        ]);
        assert_eq!(a.provider.as_deref(), Some("openai"));
        assert_eq!(a.model.as_deref(), Some("gpt-4o:high"));
        assert_eq!(a.api_key.as_deref(), Some("sk-1"));
        assert_eq!(a.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(a.session.as_deref(), Some("abc"));
        assert_eq!(a.session_id.as_deref(), Some("my-id"));
        assert_eq!(a.fork.as_deref(), Some("f.jsonl"));
        assert_eq!(a.session_dir.as_deref(), Some("/tmp/s"));
        assert_eq!(a.name.as_deref(), Some("  My session "));
        assert_eq!(a.export.as_deref(), Some("s.jsonl"));
        assert_eq!(a.use_theme.as_deref(), Some("dark/light"));
        assert!(a.messages.is_empty());
    }

    #[test]
    fn string_flags_take_dash_values_and_last_wins() {
        let a = ok(&["--model", "a", "--model", "--b", "--provider", "-x"]);
        assert_eq!(a.model.as_deref(), Some("--b"));
        assert_eq!(a.provider.as_deref(), Some("-x"));
        assert_eq!(ok(&["-n", "-c"]).name.as_deref(), Some("-c"));
        assert!(!ok(&["-n", "-c"]).continue_session);
        assert_eq!(
            ok(&["--session-id", "@x"]).session_id.as_deref(),
            Some("@x")
        );
    }

    #[test]
    fn empty_values_count_as_not_given() {
        let a = ok(&[
            "--provider",
            "",
            "--model",
            "",
            "--api-key",
            "",
            "--session",
            "",
            "--fork",
            "",
            "--session-dir",
            "",
            "--export",
            "",
        ]);
        assert_eq!(a, Args::default());
        assert_eq!(ok(&["--model", "m", "--model", ""]).model, None);
        // Kept as given: validated later.
        assert_eq!(ok(&["--session-id", ""]).session_id.as_deref(), Some(""));
        assert_eq!(ok(&["--name", ""]).name.as_deref(), Some(""));
        assert_eq!(
            ok(&["--system-prompt", ""]).system_prompt.as_deref(),
            Some("")
        );
    }

    #[test]
    fn repeatable_flags() {
        let a = ok(&[
            "-e",
            "a.ts",
            "--extension",
            "builtin:mcp",
            "--skill",
            "s1",
            "--skill",
            "s2",
            "--prompt-template",
            "p1",
            "--prompt-template",
            "p2",
            "--theme",
            "t1",
            "--theme",
            "t2",
            "--append-system-prompt",
            "x",
            "--append-system-prompt",
            "y",
        ]);
        assert_eq!(a.extensions, ["a.ts", "builtin:mcp"]);
        assert_eq!(a.skills, ["s1", "s2"]);
        assert_eq!(a.prompt_templates, ["p1", "p2"]);
        assert_eq!(a.themes, ["t1", "t2"]);
        assert_eq!(a.append_system_prompt, ["x", "y"]);
    }

    #[test]
    fn lists() {
        let a = ok(&[
            "--models",
            " a , b:high,,*sonnet* ,",
            "--exclude-tools",
            "x,mcp__*",
        ]);
        assert_eq!(
            a.models,
            Some(vec!["a".into(), "b:high".into(), "*sonnet*".into()])
        );
        assert_eq!(a.exclude_tools, Some(vec!["x".into(), "mcp__*".into()]));
        assert_eq!(ok(&["--models", " , "]).models, Some(vec![]));
        assert_eq!(ok(&["-xt", "a"]).exclude_tools, Some(vec!["a".into()]));
        assert_eq!(
            ok(&["--models", "a", "--models", "b"]).models,
            Some(vec!["b".into()])
        );
        // JS trim removes U+FEFF and U+3000 but not U+0085.
        assert_eq!(
            ok(&["--models", "\u{feff}a\u{3000},\u{85}b"]).models,
            Some(vec!["a".into(), "\u{85}b".into()])
        );
    }

    #[test]
    fn tools() {
        assert_eq!(
            ok(&["--tools", "read, bash,,"]).tools,
            Some(vec!["read".into(), "bash".into()])
        );
        assert_eq!(
            ok(&["-t", "+codemode,-write"]).tools,
            Some(vec!["+codemode".into(), "-write".into()])
        );
        assert_eq!(ok(&["--tools", ""]).tools, Some(vec![]));
        assert_eq!(
            ok(&["-t", "read,mcp__radius__*"]).tools.map(|t| t.len()),
            Some(2)
        );
        assert_eq!(
            errors(&["--tools", "read,+bash"]),
            ["--tools: tool names cannot be mixed with +name or -name entries"]
        );
        assert_eq!(
            errors(&["-t", "+a,-b*"]),
            ["-t: +name and -name entries take exact tool names, not patterns: -b*"]
        );
        // An invalid list keeps the previous one.
        let (a, d) = parse(&["--tools", "read", "--tools", "x,+y"]);
        assert_eq!(a.tools, Some(vec!["read".into()]));
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn thinking() {
        for level in ThinkingLevel::ALL {
            assert_eq!(ok(&["--thinking", level.as_str()]).thinking, Some(level));
        }
        let (a, d) = parse(&["--thinking", "high", "--thinking", "HIGH"]);
        assert_eq!(a.thinking, Some(ThinkingLevel::High));
        assert_eq!(
            d,
            [Diagnostic::warning(
                "Invalid thinking level \"HIGH\". Valid values: off, minimal, low, medium, high, xhigh, max"
            )]
        );
        assert_eq!(a.warnings, [d[0].message.clone()]);
    }

    #[test]
    fn mode() {
        assert_eq!(ok(&["--mode", "rpc"]).mode, Mode::Rpc);
        assert_eq!(ok(&["--mode", "json"]).mode, Mode::Json);
        let t = ok(&["--mode", "rpc", "--mode", "text"]);
        assert_eq!((t.mode, t.mode_given), (Mode::Text, true));
        assert!(!ok(&[]).mode_given);
        assert_eq!(errors(&["--mode"]), [MODE_REQUIRES_VALUE]);
        // A dash value is not consumed: `-c` still counts.
        let (a, d) = parse(&["--mode", "-c"]);
        assert!(a.continue_session);
        assert_eq!(d, [Diagnostic::error(MODE_REQUIRES_VALUE)]);
        // An invalid value is consumed.
        let (a, d) = parse(&["--mode", "bogus", "hello"]);
        assert_eq!(a.messages, ["hello"]);
        assert_eq!(
            d,
            [Diagnostic::error(
                "Invalid mode \"bogus\". Valid values: text, json, rpc"
            )]
        );
        assert_eq!(
            errors(&["--mode", ""]),
            ["Invalid mode \"\". Valid values: text, json, rpc"]
        );
        assert_eq!(errors(&["--mode", "RPC"]).len(), 1);
    }

    #[test]
    fn tui_mode() {
        assert_eq!(
            ok(&["--tui-mode", "regular"]).tui_mode,
            Some(TuiMode::Regular)
        );
        assert_eq!(
            ok(&["--tui-mode", "fullscreen"]).tui_mode,
            Some(TuiMode::Fullscreen)
        );
        assert_eq!(errors(&["--tui-mode"]), [TUI_MODE_REQUIRES_VALUE]);
        let (a, d) = parse(&["--tui-mode", "-r"]);
        assert!(a.resume);
        assert_eq!(d, [Diagnostic::error(TUI_MODE_REQUIRES_VALUE)]);
        let (a, d) = parse(&["--tui-mode", "x", "msg"]);
        assert_eq!(a.messages, ["msg"]);
        assert_eq!(
            d,
            [Diagnostic::error(
                "Invalid TUI mode \"x\". Valid values: regular, fullscreen"
            )]
        );
    }

    #[test]
    fn use_theme() {
        assert_eq!(errors(&["--use-theme"]), [USE_THEME_REQUIRES_VALUE]);
        let (a, d) = parse(&["--use-theme", "-nc"]);
        assert!(a.no_context_files && a.use_theme.is_none());
        assert_eq!(d, [Diagnostic::error(USE_THEME_REQUIRES_VALUE)]);
        assert_eq!(ok(&["--use-theme", ""]).use_theme.as_deref(), Some(""));
    }

    #[test]
    fn name() {
        assert_eq!(errors(&["--name"]), [NAME_REQUIRES_VALUE]);
        assert_eq!(errors(&["-n"]), [NAME_REQUIRES_VALUE]);
        assert_eq!(ok(&["-n", "x"]).name.as_deref(), Some("x"));
    }

    #[test]
    fn print_takes_a_message() {
        let a = ok(&["-p", "hello", "world"]);
        assert!(a.print);
        assert_eq!(a.messages, ["hello", "world"]);
        let a = ok(&["-p", "---x"]);
        assert_eq!(a.messages, ["---x"]);
        let a = ok(&["-p", "@f", "--print", "-c"]);
        assert_eq!(
            (a.file_args.as_slice(), a.continue_session),
            (&["f".to_string()][..], true)
        );
        assert!(a.messages.is_empty());
        let a = ok(&["-p", "", "--", "-x"]);
        assert_eq!(a.messages, ["", "-x"]);
        let a = ok(&["-p", "--", "- item"]);
        assert_eq!(a.messages, ["- item"]);
    }

    #[test]
    fn list_models() {
        assert_eq!(ok(&["--list-models"]).list_models, Some(None));
        assert_eq!(
            ok(&["--list-models", "sonnet"]).list_models,
            Some(Some("sonnet".into()))
        );
        let a = ok(&["--list-models", "@f"]);
        assert_eq!((a.list_models, a.file_args), (Some(None), vec!["f".into()]));
        let a = ok(&["--list-models", "-c"]);
        assert_eq!((a.list_models, a.continue_session), (Some(None), true));
        assert_eq!(
            ok(&["--list-models", ""]).list_models,
            Some(Some(String::new()))
        );
    }

    #[test]
    fn positionals_and_file_args() {
        let a = ok(&["@a.md", "hi", "@", "", "there"]);
        assert_eq!(a.file_args, ["a.md", ""]);
        assert_eq!(a.messages, ["hi", "", "there"]);
    }

    #[test]
    fn double_dash_ends_options() {
        let a = ok(&["-c", "--", "-x", "--help", "@f", "--", "m"]);
        assert!(a.continue_session && !a.help);
        assert_eq!(a.messages, ["-x", "--help", "--", "m"]);
        assert_eq!(a.file_args, ["f"]);
        // `--offline` counts anywhere.
        assert!(ok(&["--", "--offline"]).offline);
        assert!(ok(&["--model", "--offline"]).offline);
    }

    #[test]
    fn unknown_long_flags_are_kept() {
        let a = ok(&[
            "--plan",
            "--foo=bar",
            "--baz",
            "qux",
            "--x",
            "@f",
            "--y",
            "--foo",
            "--=v",
            "---",
        ]);
        let flags: Vec<(&str, Option<&str>)> = a
            .unknown_flags
            .iter()
            .map(|f| (f.name.as_str(), f.value.as_deref()))
            .collect();
        assert_eq!(
            flags,
            [
                ("plan", None),
                ("foo", None),
                ("baz", Some("qux")),
                ("x", None),
                ("y", None),
                ("", Some("v")),
                ("-", None),
            ]
        );
        assert_eq!(a.file_args, ["f"]);
        assert_eq!(a.unknown_flag("baz"), Some(Some("qux")));
        assert_eq!(a.unknown_flag("nope"), None);
        // `-z` after `--y` is an unknown short flag.
        assert_eq!(errors(&["--y", "-z"]), ["Unknown option: -z"]);
        assert_eq!(
            ok(&["--a=b=c"]).unknown_flags,
            [UnknownFlag {
                name: "a".into(),
                value: Some("b=c".into())
            }]
        );
        // Known flags with `=` are not split.
        let a = ok(&["--model=x"]);
        assert_eq!(a.model, None);
        assert_eq!(a.unknown_flag("model"), Some(Some("x")));
        assert!(!ok(&["--help=1"]).help);
    }

    #[test]
    fn value_flags_at_the_end() {
        for flag in [
            "provider",
            "model",
            "api-key",
            "system-prompt",
            "append-system-prompt",
            "session",
            "session-id",
            "fork",
            "session-dir",
            "models",
            "tools",
            "exclude-tools",
            "thinking",
            "export",
            "extension",
            "skill",
            "prompt-template",
            "theme",
        ] {
            let long = format!("--{flag}");
            let a = ok(&[long.as_str()]);
            assert_eq!(a.unknown_flags.len(), 1, "{flag}");
            assert_eq!(a.unknown_flag(flag), Some(None), "{flag}");
        }
        for short in ["-t", "-xt", "-e"] {
            assert_eq!(errors(&[short]), [format!("Unknown option: {short}")]);
        }
    }

    #[test]
    fn unknown_short_flags() {
        assert_eq!(
            errors(&["-x", "-", "-pp", "-nx", "-ab"]),
            [
                "Unknown option: -x",
                "Unknown option: -",
                "Unknown option: -pp",
                "Unknown option: -nx",
                "Unknown option: -ab"
            ]
        );
        // The next argument is not consumed.
        let (a, _) = parse(&["-x", "msg"]);
        assert_eq!(a.messages, ["msg"]);
    }

    #[test]
    fn diagnostics_keep_argv_order() {
        let (_, d) = parse(&["-x", "--thinking", "nope", "--mode"]);
        let kinds: Vec<DiagnosticKind> = d.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DiagnosticKind::Error,
                DiagnosticKind::Warning,
                DiagnosticKind::Error
            ]
        );
    }

    #[test]
    fn app_mode_and_stdout_takeover() {
        let a = ok(&[]);
        assert_eq!(a.app_mode(true, true), AppMode::Interactive);
        assert_eq!(a.app_mode(false, true), AppMode::Print);
        assert_eq!(a.app_mode(true, false), AppMode::Print);
        assert_eq!(ok(&["-p"]).app_mode(true, true), AppMode::Print);
        assert_eq!(
            ok(&["--mode", "text"]).app_mode(true, true),
            AppMode::Interactive
        );
        assert_eq!(ok(&["--mode", "json"]).app_mode(true, true), AppMode::Json);
        assert_eq!(
            ok(&["--mode", "rpc", "-p"]).app_mode(true, true),
            AppMode::Rpc
        );

        assert!(!a.takes_over_stdout(AppMode::Interactive));
        assert!(a.takes_over_stdout(AppMode::Print));
        let help = ok(&["--help"]);
        assert!(!help.takes_over_stdout(AppMode::Print));
        let help_text = ok(&["--help", "--mode", "text"]);
        assert!(help_text.takes_over_stdout(AppMode::Print));
        assert!(!help_text.takes_over_stdout(AppMode::Interactive));
        assert!(ok(&["--list-models", "-p"]).takes_over_stdout(AppMode::Print));
        assert!(!ok(&["--list-models"]).takes_over_stdout(AppMode::Print));
    }

    #[test]
    fn offline_mode() {
        assert!(ok(&["--offline"]).offline_mode(None));
        let a = ok(&[]);
        assert!(!a.offline_mode(None));
        for v in ["1", "true", "TRUE", "yes", "Yes"] {
            assert!(a.offline_mode(Some(v)), "{v}");
        }
        for v in ["", "0", "no", "on", " 1"] {
            assert!(!a.offline_mode(Some(v)), "{v}");
        }
    }
}
