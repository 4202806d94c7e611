//! Command-line parsing: Pi 1.6.0's flags, argument errors and the choice of what to run.
//!
//! * [`parse_cli`] is the full interface: it returns the [`Action`], the parsed [`Args`] and the
//!   diagnostics to print, or a [`CliError`] whose [`CliError::render`] is Pi's exact stderr.
//!
//! Files: `args.rs` (flag table and parser), `validate.rs` (the checks `main.js` makes after
//! parsing), `help.rs` (help text), `env.rs` (environment variables and JS string helpers).

pub mod args;
pub mod env;
pub mod help;
pub mod validate;

use std::fmt;

pub use args::Args;
pub use args::{AppMode, TuiMode, UnknownFlag};
pub use help::help_text;
pub use help::{ExtensionFlagHelp, help_text_with_extension_flags};

/// Output mode selected with `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Text,
    Json,
    Rpc,
}

/// Severity of a [`Diagnostic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Error,
    Warning,
}

/// A message Pi prints on stderr as `Error: <message>` or `Warning: <message>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub message: String,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            kind: DiagnosticKind::Error,
            message: message.into(),
        }
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            kind: DiagnosticKind::Warning,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    /// The stderr line, without the newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DiagnosticKind::Error => write!(f, "Error: {}", self.message),
            DiagnosticKind::Warning => write!(f, "Warning: {}", self.message),
        }
    }
}

/// Renders diagnostics as stderr lines, each ending in a newline.
pub fn render_diagnostics(diagnostics: &[Diagnostic]) -> String {
    diagnostics.iter().map(|d| format!("{d}\n")).collect()
}

/// Argument errors: print [`CliError::render`] on stderr and exit 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// Everything to print, in order: with parse errors, every parse diagnostic (warnings
    /// included, as Pi prints them all); otherwise the one failed check. At least one is an error.
    pub diagnostics: Vec<Diagnostic>,
}

impl CliError {
    /// Pi's stderr output, one `Error: ...`/`Warning: ...` line each, newline-terminated.
    pub fn render(&self) -> String {
        render_diagnostics(&self.diagnostics)
    }

    /// The error messages only, joined so that `Error: {message}` prints each on its own line.
    pub fn message(&self) -> String {
        self.diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::Error)
            .map(|d| d.message.as_str())
            .collect::<Vec<_>>()
            .join("\nError: ")
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for CliError {}

/// A command word Pi dispatches before parsing flags (`pi <command> ...`). Its arguments are not
/// flags of the main parser: `pi install -l x` is not `Unknown option: -l`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand {
    /// `pi auth ...` (help, login, logout, check, print-api-key, print-bearer-token).
    Auth,
    /// `pi install <source>`.
    Install,
    /// `pi remove <source>` and its alias `pi uninstall <source>`.
    Remove,
    /// `pi update [target]`.
    Update,
    /// `pi list`.
    List,
    /// `pi config`.
    Config,
    /// `pi mcp ...`.
    Mcp,
    /// `pi schema [--typescript]`: the protocol's JSON Schema (an addition; not Pi's).
    Schema,
}

impl Subcommand {
    /// Recognizes the first argument.
    pub fn from_arg(arg: &str) -> Option<Subcommand> {
        Some(match arg {
            "auth" => Subcommand::Auth,
            "install" => Subcommand::Install,
            "remove" | "uninstall" => Subcommand::Remove,
            "update" => Subcommand::Update,
            "list" => Subcommand::List,
            "config" => Subcommand::Config,
            "mcp" => Subcommand::Mcp,
            "schema" => Subcommand::Schema,
            _ => return None,
        })
    }

    /// The name Pi uses in its messages (`uninstall` is reported as `remove`).
    pub fn name(self) -> &'static str {
        match self {
            Subcommand::Auth => "auth",
            Subcommand::Install => "install",
            Subcommand::Remove => "remove",
            Subcommand::Update => "update",
            Subcommand::List => "list",
            Subcommand::Config => "config",
            Subcommand::Mcp => "mcp",
            Subcommand::Schema => "schema",
        }
    }
}

/// What the process should do ([`parse_cli`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Print the help (with flags of loaded extensions, which needs the runtime built from the
    /// args) and exit 0.
    Help,
    /// Print the version and exit 0.
    Version,
    /// List the available models, optionally fuzzy-filtered, and exit 0.
    ListModels { search: Option<String> },
    /// Export session file `input` to HTML at `output` (or a derived path), print
    /// `Exported to: <path>` and exit 0; on failure `Error: <message>`, exit 1.
    Export {
        input: String,
        output: Option<String>,
    },
    /// A subcommand, with the arguments after the command word (unparsed).
    Command {
        command: Subcommand,
        args: Vec<String>,
    },
    /// Start a session in the mode given by `Args::app_mode`.
    Run,
}

/// Result of [`parse_cli`].
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub action: Action,
    /// The parsed flags (for `Command`, only `offline` is set).
    pub args: Box<Args>,
    /// Parse warnings to print on stderr right away, before acting (also for `Version`).
    pub diagnostics: Vec<Diagnostic>,
}

impl Invocation {
    /// The argument diagnostics Pi reports with the runtime's startup diagnostics, once the
    /// extensions are loaded: unknown flags no extension registered, bare extension string flags,
    /// `--provider` without `--model` (see [`validate::startup_diagnostics`]). Pass the flags the
    /// loaded extensions registered (`&[]` without extensions: every unknown long flag is then an
    /// error). Errors stop `Run` with exit 1; `Help`/`ListModels` print them and go on.
    pub fn startup_diagnostics(
        &self,
        registered: &[(&str, validate::ExtensionFlagType)],
    ) -> Vec<Diagnostic> {
        match self.action {
            Action::Help | Action::ListModels { .. } | Action::Run => {
                validate::startup_diagnostics(&self.args, registered)
            }
            Action::Version | Action::Export { .. } | Action::Command { .. } => Vec::new(),
        }
    }
}

/// Parses argv (without the program name) the way Pi 1.6.0's `main()` does up to the first
/// I/O: subcommand dispatch, flag parsing, then the argument checks (see `validate.rs`).
/// The checks Pi only makes once extensions are loaded are in [`Invocation::startup_diagnostics`].
pub fn parse_cli(argv: &[String]) -> Result<Invocation, CliError> {
    let offline = argv.iter().any(|a| a == "--offline");
    if let Some(command) = argv.first().and_then(|a| Subcommand::from_arg(a)) {
        return Ok(Invocation {
            action: Action::Command {
                command,
                args: argv[1..].to_vec(),
            },
            args: Box::new(Args {
                offline,
                ..Args::default()
            }),
            diagnostics: Vec::new(),
        });
    }
    let (mut args, diagnostics) = args::parse_flags(argv);
    if diagnostics.iter().any(|d| d.kind == DiagnosticKind::Error) {
        return Err(CliError { diagnostics });
    }
    match validate::check(&mut args) {
        Err(message) => {
            // Pi prints the parse warnings before failing a later check.
            let mut all = diagnostics;
            all.push(Diagnostic::error(message));
            Err(CliError { diagnostics: all })
        }
        Ok(action) => Ok(Invocation {
            action,
            args: Box::new(args),
            diagnostics,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// What `main` does with argv before running: argument errors, then startup errors
    /// (without extension flags); `Ok(Some(args))` to run, `Ok(None)` for help or version.
    fn run_args(argv: &[String]) -> Result<Option<Box<Args>>, String> {
        let invocation = parse_cli(argv).map_err(|e| e.message())?;
        let startup = CliError {
            diagnostics: invocation.startup_diagnostics(&[]),
        };
        match invocation.action {
            Action::Run if startup.diagnostics.is_empty() => Ok(Some(invocation.args)),
            Action::Run => Err(startup.message()),
            _ => Ok(None),
        }
    }

    #[test]
    fn run_with_mode() {
        let Ok(Some(args)) = run_args(&argv(&["--mode", "rpc"])) else {
            panic!("expected run");
        };
        assert_eq!(args.mode, Mode::Rpc);
        assert!(args.warnings.is_empty());
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse_cli(&argv(&["-h"])).unwrap().action, Action::Help);
        assert_eq!(
            parse_cli(&argv(&["--version", "-h"])).unwrap().action,
            Action::Version
        );
    }

    #[test]
    fn warnings_reach_run() {
        let Ok(Some(args)) = run_args(&argv(&["--thinking", "hard"])) else {
            panic!("expected run");
        };
        assert_eq!(
            args.warnings,
            [
                "Invalid thinking level \"hard\". Valid values: off, minimal, low, medium, high, xhigh, max"
            ]
        );
    }

    #[test]
    fn several_errors_join() {
        assert_eq!(
            run_args(&argv(&["-x", "--thinking", "no", "-y"])).err(),
            Some("Unknown option: -x\nError: Unknown option: -y".to_string())
        );
        let err = parse_cli(&argv(&["-x", "--thinking", "no", "-y"])).unwrap_err();
        assert_eq!(
            err.render(),
            "Error: Unknown option: -x\nWarning: Invalid thinking level \"no\". Valid values: off, minimal, low, medium, high, xhigh, max\nError: Unknown option: -y\n"
        );
    }

    #[test]
    fn warnings_before_a_failed_check() {
        let err = parse_cli(&argv(&["--thinking", "no", "--name", " "])).unwrap_err();
        assert_eq!(err.diagnostics.len(), 2);
        assert_eq!(err.diagnostics[0].kind, DiagnosticKind::Warning);
        assert_eq!(err.message(), "--name requires a non-empty value");
    }

    #[test]
    fn version_keeps_warnings() {
        let inv = parse_cli(&argv(&["--thinking", "x", "-v"])).unwrap();
        assert_eq!(inv.action, Action::Version);
        assert_eq!(inv.diagnostics.len(), 1);
    }

    #[test]
    fn subcommands_come_first() {
        for (word, command) in [
            ("auth", Subcommand::Auth),
            ("install", Subcommand::Install),
            ("remove", Subcommand::Remove),
            ("uninstall", Subcommand::Remove),
            ("update", Subcommand::Update),
            ("list", Subcommand::List),
            ("config", Subcommand::Config),
            ("mcp", Subcommand::Mcp),
            ("schema", Subcommand::Schema),
        ] {
            let inv = parse_cli(&argv(&[word, "-l", "--x", "--offline"])).unwrap();
            assert_eq!(
                inv.action,
                Action::Command {
                    command,
                    args: argv(&["-l", "--x", "--offline"])
                }
            );
            assert!(inv.args.offline);
        }
        // Only as the first argument.
        let inv = parse_cli(&argv(&["-c", "list"])).unwrap();
        assert_eq!(inv.action, Action::Run);
        assert_eq!(inv.args.messages, ["list"]);
        assert_eq!(parse_cli(&argv(&["Install"])).unwrap().action, Action::Run);
    }

    #[test]
    fn list_models_and_export() {
        let inv = parse_cli(&argv(&["--list-models", "gpt", "--provider", "x"])).unwrap();
        assert_eq!(
            inv.action,
            Action::ListModels {
                search: Some("gpt".into())
            }
        );
        assert_eq!(
            render_diagnostics(&inv.startup_diagnostics(&[])),
            "Error: --provider requires --model (for example: --provider x --model <pattern>)\n"
        );
        let inv = parse_cli(&argv(&["--export", "a.jsonl", "b.html"])).unwrap();
        assert_eq!(
            inv.action,
            Action::Export {
                input: "a.jsonl".into(),
                output: Some("b.html".into())
            }
        );
    }

    #[test]
    fn run_fails_on_startup_errors_without_extensions() {
        assert_eq!(
            run_args(&argv(&["--mode", "rpc", "--plan", "--x=1"])).err(),
            Some("Unknown options: --plan, --x".to_string())
        );
        assert_eq!(
            run_args(&argv(&["--provider", "p", "--model"])).err(),
            Some(
                "Unknown option: --model\nError: --provider requires --model (for example: --provider p --model <pattern>)"
                    .to_string()
            )
        );
        assert!(matches!(run_args(&argv(&["--help", "--plan"])), Ok(None)));
        let inv = parse_cli(&argv(&["--plan"])).unwrap();
        assert_eq!(
            inv.startup_diagnostics(&[("plan", validate::ExtensionFlagType::Boolean)]),
            []
        );
        assert_eq!(inv.startup_diagnostics(&[]).len(), 1);
    }

    #[test]
    fn help_text_is_not_empty() {
        assert!(help_text().starts_with("pi - "));
    }
}
