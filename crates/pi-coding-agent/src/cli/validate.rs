//! The checks Pi's `main.js` makes on the parsed flags before doing any I/O, in its order, and
//! the choice of what to do.
//!
//! Order in Pi (each step exits before the next):
//! 1. parse diagnostics (all printed; any error → exit 1);
//! 2. `--version`;
//! 3. `--export <file> [output]`;
//! 4. `--mode rpc` with `@file` arguments;
//! 5. `--fork` conflicts;
//! 6. `--session-id` conflicts, then its syntax;
//! 7. (session lookup/opening: I/O, not here) then a blank `--name`;
//! 8. (runtime creation: extensions load) then the *startup* argument diagnostics, which Pi
//!    reports among the runtime's diagnostics: unknown long flags that no extension registered,
//!    extension string flags without a value, `--provider` without `--model` (and, needing the
//!    model registry, `--api-key` without a model). See [`startup_diagnostics`]. They are fatal
//!    for a run; with `--help`/`--list-models` Pi prints them and carries on;
//! 9. `--help`, then `--list-models`, else run.

use super::args::Args;
use super::{Action, Diagnostic, Mode};
use pi_js::trim as js_trim;

/// Error message of `@file` arguments with `--mode rpc`.
pub const RPC_FILE_ARGS: &str = "@file arguments are not supported in RPC mode";
/// Error message of an invalid `--session-id`.
pub const INVALID_SESSION_ID: &str = "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character";
/// Error message of a blank `--name`.
pub const NAME_REQUIRES_NON_EMPTY: &str = "--name requires a non-empty value";
/// Error message of `--api-key` when no model ends up selected (see [`api_key_diagnostic`]).
pub const API_KEY_REQUIRES_MODEL: &str =
    "--api-key requires a model to be specified via --model, --provider/--model, or --models";

/// Runs the checks of steps 2–7 and 9 on flags that parsed without errors: the action, or the
/// message of the failed check (print `Error: <message>`, exit 1). Normalizes `args.name` to the
/// trimmed display name.
pub(super) fn check(args: &mut Args) -> Result<Action, String> {
    if args.version {
        return Ok(Action::Version);
    }
    if let Some(input) = &args.export {
        return Ok(Action::Export {
            input: input.clone(),
            output: args.messages.first().cloned(),
        });
    }
    if args.mode == Mode::Rpc && !args.file_args.is_empty() {
        return Err(RPC_FILE_ARGS.to_string());
    }
    check_fork(args)?;
    check_session_id(args)?;
    if let Some(name) = &args.name {
        let trimmed = js_trim(name);
        if trimmed.is_empty() {
            return Err(NAME_REQUIRES_NON_EMPTY.to_string());
        }
        args.name = Some(trimmed.to_string());
    }
    Ok(if args.help {
        Action::Help
    } else if let Some(search) = &args.list_models {
        Action::ListModels {
            search: search.clone(),
        }
    } else {
        Action::Run
    })
}

/// Kind of a flag registered by an extension (`pi.registerFlag(name, { type })`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionFlagType {
    Boolean,
    String,
}

/// Value handed to an extension for its flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtensionFlagValue {
    /// A boolean flag was given (whatever value followed it: `--plan=no` is still `true`).
    True,
    String(String),
}

/// Matches the unknown long flags against the flags extensions registered (Pi's
/// `applyExtensionFlagValues`): the values to hand to the extensions, and the diagnostics
/// (`Extension flag "--x" requires a value` for each bare string flag, in order, then one
/// `Unknown option: --a` / `Unknown options: --a, --b` for all unregistered ones).
/// With no extensions, every unknown flag is an error.
pub fn resolve_extension_flags(
    args: &Args,
    registered: &[(&str, ExtensionFlagType)],
) -> (Vec<(String, ExtensionFlagValue)>, Vec<Diagnostic>) {
    let mut values = Vec::new();
    let mut diagnostics = Vec::new();
    let mut unknown = Vec::new();
    for flag in &args.unknown_flags {
        // A later registration of the same name wins, as in Pi's Map.
        let kind = registered
            .iter()
            .rev()
            .find(|(name, _)| *name == flag.name)
            .map(|(_, kind)| *kind);
        match (kind, &flag.value) {
            (None, _) => unknown.push(format!("--{}", flag.name)),
            (Some(ExtensionFlagType::Boolean), _) => {
                values.push((flag.name.clone(), ExtensionFlagValue::True))
            }
            (Some(ExtensionFlagType::String), Some(value)) => {
                values.push((flag.name.clone(), ExtensionFlagValue::String(value.clone())))
            }
            (Some(ExtensionFlagType::String), None) => diagnostics.push(Diagnostic::error(
                format!("Extension flag \"--{}\" requires a value", flag.name),
            )),
        }
    }
    if !unknown.is_empty() {
        let plural = if unknown.len() == 1 { "" } else { "s" };
        diagnostics.push(Diagnostic::error(format!(
            "Unknown option{plural}: {}",
            unknown.join(", ")
        )));
    }
    (values, diagnostics)
}

/// The argument diagnostics Pi reports while creating the runtime (step 8), given the flags the
/// loaded extensions registered (none: `&[]`): those of [`resolve_extension_flags`], then
/// `--provider` without `--model`. Pi prints them among the other startup diagnostics (after
/// settings/extension-load ones, before `--api-key`'s, see [`api_key_diagnostic`]); any error
/// stops a run with exit 1, while `--help` and `--list-models` go on (exit 0).
pub fn startup_diagnostics(
    args: &Args,
    registered: &[(&str, ExtensionFlagType)],
) -> Vec<Diagnostic> {
    let (_, mut diagnostics) = resolve_extension_flags(args, registered);
    diagnostics.extend(provider_without_model(args).map(Diagnostic::error));
    diagnostics
}

/// `--fork` cannot be combined with `--session`, `--continue`, `--resume` or `--no-session`.
pub fn check_fork(args: &Args) -> Result<(), String> {
    if args.fork.is_none() {
        return Ok(());
    }
    let conflicts = [
        (args.session.is_some(), "--session"),
        (args.continue_session, "--continue"),
        (args.resume, "--resume"),
        (args.no_session, "--no-session"),
    ];
    conflict_error("--fork", &conflicts)
}

/// `--session-id` cannot be combined with `--session`, `--continue` or `--resume`, and must be a
/// valid id.
pub fn check_session_id(args: &Args) -> Result<(), String> {
    let Some(id) = &args.session_id else {
        return Ok(());
    };
    let conflicts = [
        (args.session.is_some(), "--session"),
        (args.continue_session, "--continue"),
        (args.resume, "--resume"),
    ];
    conflict_error("--session-id", &conflicts)?;
    if is_valid_session_id(id) {
        Ok(())
    } else {
        Err(INVALID_SESSION_ID.to_string())
    }
}

fn conflict_error(flag: &str, conflicts: &[(bool, &str)]) -> Result<(), String> {
    let present: Vec<&str> = conflicts
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
    if present.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{flag} cannot be combined with {}",
            present.join(", ")
        ))
    }
}

/// Session ids: ASCII letters and digits, with `.`, `_`, `-` inside (not first or last).
pub fn is_valid_session_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `--provider p` without `--model`.
pub fn provider_without_model(args: &Args) -> Option<String> {
    match (&args.provider, &args.model) {
        (Some(provider), None) => Some(format!(
            "--provider requires --model (for example: --provider {provider} --model <pattern>)"
        )),
        _ => None,
    }
}

/// The `--api-key` check, which needs the model registry: Pi reports it (as an error, after the
/// `--provider` one) when `--api-key` is given but neither `--model` nor the `--models`/
/// `enabledModels` scope selected a model. `model_selected` is whether one was.
pub fn api_key_diagnostic(args: &Args, model_selected: bool) -> Option<Diagnostic> {
    (args.api_key.is_some() && !model_selected).then(|| Diagnostic::error(API_KEY_REQUIRES_MODEL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::parse_flags;

    fn args(list: &[&str]) -> Args {
        let argv: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        let (args, diags) = parse_flags(&argv);
        assert!(diags.is_empty(), "{diags:?}");
        args
    }

    fn checked(list: &[&str]) -> Result<(Action, Vec<Diagnostic>), String> {
        let mut a = args(list);
        let action = check(&mut a)?;
        Ok((action, startup_diagnostics(&a, &[])))
    }

    fn fail(list: &[&str]) -> String {
        match checked(list) {
            Err(message) => message,
            Ok(other) => panic!("{list:?} passed: {other:?}"),
        }
    }

    #[test]
    fn session_ids() {
        for id in ["a", "A9", "a-b", "a.b_c-d", "0", "01a229ff-ec95-747b"] {
            assert!(is_valid_session_id(id), "{id}");
        }
        for id in [
            "", "-a", "a-", ".a", "a.", "_", "a b", "a/b", "é", "a\n", "a:b",
        ] {
            assert!(!is_valid_session_id(id), "{id:?}");
        }
    }

    #[test]
    fn fork_conflicts() {
        assert_eq!(
            fail(&["--fork", "x", "--no-session", "-r", "-c", "--session", "s"]),
            "--fork cannot be combined with --session, --continue, --resume, --no-session"
        );
        assert_eq!(
            fail(&["--fork", "x", "-c"]),
            "--fork cannot be combined with --continue"
        );
        assert!(checked(&["--fork", "x", "--session-id", "abc"]).is_ok());
        // An empty --fork or --session does not count.
        assert!(checked(&["--fork", "", "-c"]).is_ok());
        assert!(checked(&["--fork", "x", "--session", ""]).is_ok());
    }

    #[test]
    fn session_id_checks() {
        assert_eq!(
            fail(&[
                "--session-id",
                "ok",
                "--resume",
                "--session",
                "s",
                "-c",
                "--no-session"
            ]),
            "--session-id cannot be combined with --session, --continue, --resume"
        );
        assert_eq!(fail(&["--session-id", "a-"]), INVALID_SESSION_ID);
        assert_eq!(fail(&["--session-id", ""]), INVALID_SESSION_ID);
        // Conflicts are reported before the syntax.
        assert_eq!(
            fail(&["--session-id", "-", "-c"]),
            "--session-id cannot be combined with --continue"
        );
        assert!(checked(&["--session-id", "abc", "--no-session"]).is_ok());
        // Fork conflicts come first.
        assert_eq!(
            fail(&["--session-id", "-", "--fork", "f", "-c"]),
            "--fork cannot be combined with --continue"
        );
    }

    #[test]
    fn rpc_file_args() {
        assert_eq!(fail(&["--mode", "rpc", "@a"]), RPC_FILE_ARGS);
        assert_eq!(
            fail(&["@a", "--mode", "rpc", "--fork", "x", "-c"]),
            RPC_FILE_ARGS
        );
        assert!(checked(&["--mode", "json", "@a"]).is_ok());
        assert!(checked(&["@a"]).is_ok());
        assert_eq!(fail(&["--mode", "rpc", "--", "@a"]), RPC_FILE_ARGS);
    }

    #[test]
    fn name_checks() {
        assert_eq!(fail(&["--name", " \t"]), NAME_REQUIRES_NON_EMPTY);
        assert_eq!(fail(&["--name", ""]), NAME_REQUIRES_NON_EMPTY);
        assert_eq!(fail(&["--help", "-n", "\u{feff}"]), NAME_REQUIRES_NON_EMPTY);
        let mut a = args(&["--name", "  x y "]);
        assert_eq!(check(&mut a), Ok(Action::Run));
        assert_eq!(a.name.as_deref(), Some("x y"));
    }

    #[test]
    fn provider_needs_model() {
        let msg = "--provider requires --model (for example: --provider openai --model <pattern>)";
        let startup = |list: &[&str]| checked(list).unwrap().1;
        assert_eq!(startup(&["--provider", "openai"]), [Diagnostic::error(msg)]);
        assert_eq!(
            startup(&["--provider", "openai", "--model", ""]),
            [Diagnostic::error(msg)]
        );
        assert_eq!(startup(&["--provider", "openai", "--model", "m"]), []);
        assert_eq!(startup(&["--provider", "", "--api-key", "k"]), []);
        let (action, startup) = checked(&["--provider", "openai", "--help"]).unwrap();
        assert_eq!(action, Action::Help);
        assert_eq!(startup, [Diagnostic::error(msg)]);
    }

    #[test]
    fn extension_flags() {
        use ExtensionFlagType::{Boolean, String as Str};
        let a = args(&["--plan=no", "--level", "3", "--bare", "--x", "--y=1", "--z"]);
        let (values, diags) =
            resolve_extension_flags(&a, &[("plan", Boolean), ("level", Str), ("bare", Str)]);
        assert_eq!(
            values,
            [
                ("plan".to_string(), ExtensionFlagValue::True),
                ("level".to_string(), ExtensionFlagValue::String("3".into())),
            ]
        );
        assert_eq!(
            diags,
            [
                Diagnostic::error("Extension flag \"--bare\" requires a value"),
                Diagnostic::error("Unknown options: --x, --y, --z"),
            ]
        );
        let (_, diags) = resolve_extension_flags(&args(&["--model"]), &[]);
        assert_eq!(diags, [Diagnostic::error("Unknown option: --model")]);
        assert_eq!(resolve_extension_flags(&args(&[]), &[]), (vec![], vec![]));
        // Unknown options come before the --provider error.
        let (_, startup) = checked(&["--provider", "p", "--foo"]).unwrap();
        assert_eq!(
            startup,
            [
                Diagnostic::error("Unknown option: --foo"),
                Diagnostic::error(
                    "--provider requires --model (for example: --provider p --model <pattern>)"
                ),
            ]
        );
    }

    #[test]
    fn api_key() {
        let a = args(&["--api-key", "k"]);
        assert_eq!(
            api_key_diagnostic(&a, false),
            Some(Diagnostic::error(API_KEY_REQUIRES_MODEL))
        );
        assert_eq!(api_key_diagnostic(&a, true), None);
        assert_eq!(api_key_diagnostic(&args(&[]), false), None);
    }

    #[test]
    fn action_precedence() {
        assert_eq!(
            checked(&["--help", "--version"]).unwrap().0,
            Action::Version
        );
        assert_eq!(
            checked(&[
                "--version",
                "--mode",
                "rpc",
                "@f",
                "--fork",
                "x",
                "-c",
                "-n",
                ""
            ])
            .unwrap()
            .0,
            Action::Version
        );
        assert_eq!(
            checked(&["--help", "--export", "in.jsonl", "out.html", "more"])
                .unwrap()
                .0,
            Action::Export {
                input: "in.jsonl".into(),
                output: Some("out.html".into())
            }
        );
        assert_eq!(
            checked(&["--export", "in", "--mode", "rpc", "@f"])
                .unwrap()
                .0,
            Action::Export {
                input: "in".into(),
                output: None
            }
        );
        assert_eq!(fail(&["--help", "--mode", "rpc", "@f"]), RPC_FILE_ARGS);
        assert_eq!(
            fail(&["--help", "--fork", "a", "--no-session"]),
            "--fork cannot be combined with --no-session"
        );
        assert_eq!(
            checked(&["--list-models", "--help"]).unwrap().0,
            Action::Help
        );
        assert_eq!(
            checked(&["--list-models"]).unwrap().0,
            Action::ListModels { search: None }
        );
        assert_eq!(checked(&["-p", "hi"]).unwrap().0, Action::Run);
    }
}
