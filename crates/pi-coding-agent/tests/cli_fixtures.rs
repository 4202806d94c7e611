//! Compares the parser with the recorded behaviour of the reference Pi 1.6.0
//! (`tests/fixtures/cli_errors.jsonl`, written by `tests/cli_reference.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_coding_agent::cli::{Action, DiagnosticKind, parse_cli};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/cli_errors.jsonl");

/// Stderr lines that come from Pi's runtime, not from the arguments (the empty test
/// environment has no models; `--session-id` of a new session warns; `--list-models` output
/// goes to stderr when `--mode` is given).
fn is_runtime_line(line: &str) -> bool {
    line.starts_with("Warning: No models available.")
        || line.starts_with("No models available.")
        || line.starts_with("  <pkg>/docs/")
        || line.starts_with("Warning: No project session found with id ")
}

struct Record {
    scope: String,
    args: Vec<String>,
    exit: i64,
    stderr: Vec<String>,
    stdout: String,
    help: bool,
}

fn records() -> Vec<Record> {
    FIXTURE
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let strings = |key: &str| -> Vec<String> {
                v[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect()
            };
            Record {
                scope: v["scope"].as_str().unwrap().to_string(),
                args: strings("args"),
                exit: v["exit"].as_i64().unwrap(),
                stderr: strings("stderr"),
                stdout: v["stdout"].as_str().unwrap().to_string(),
                help: v["help"].as_bool().unwrap(),
            }
        })
        .collect()
}

/// What our binary prints on stderr for the arguments (no extensions loaded) and its exit code,
/// for the actions decided by the arguments alone.
fn ours(args: &[String]) -> (Option<Action>, Vec<String>, i64) {
    match parse_cli(args) {
        Err(e) => (
            None,
            e.diagnostics.iter().map(|d| d.to_string()).collect(),
            1,
        ),
        Ok(inv) => {
            let startup = inv.startup_diagnostics(&[]);
            let failed = inv.action == Action::Run
                && startup.iter().any(|d| d.kind == DiagnosticKind::Error);
            let lines = inv
                .diagnostics
                .iter()
                .chain(&startup)
                .map(|d| d.to_string())
                .collect();
            (Some(inv.action), lines, i64::from(failed))
        }
    }
}

#[test]
fn fixture_is_substantial() {
    let all = records();
    assert!(all.len() >= 100, "{} records", all.len());
    assert!(
        all.iter()
            .filter(|r| r.exit == 1 && r.scope == "args")
            .count()
            >= 50
    );
}

#[test]
fn argument_outcomes_match_the_reference() {
    let mut failures = Vec::new();
    for r in records().iter().filter(|r| r.scope == "args") {
        let expected: Vec<&String> = r.stderr.iter().filter(|l| !is_runtime_line(l)).collect();
        let (action, lines, exit) = ours(&r.args);
        let lines: Vec<&String> = lines.iter().collect();
        if lines != expected || exit != r.exit {
            failures.push(format!(
                "{:?}\n   pi:   exit {} {:?}\n   ours: exit {} {:?}",
                r.args, r.exit, expected, exit, lines
            ));
            continue;
        }
        if r.help != (action == Some(Action::Help)) {
            failures.push(format!("{:?}: help {} vs {action:?}", r.args, r.help));
        }
        if (r.stdout == "1.6.0") != (action == Some(Action::Version)) {
            failures.push(format!("{:?}: version vs {action:?}", r.args));
        }
        if r.exit == 0 && r.stdout.starts_with("No models available.") {
            assert!(
                matches!(action, Some(Action::ListModels { .. })),
                "{:?}: {action:?}",
                r.args
            );
        }
        // Where help and model lists go (the recording had neither stdin nor stdout on a terminal).
        if matches!(action, Some(Action::Help | Action::ListModels { .. })) {
            let Ok(inv) = parse_cli(&r.args) else {
                unreachable!()
            };
            let on_stdout = r.stdout.starts_with("pi - AI coding assistant")
                || r.stdout.starts_with("No models available.");
            let app_mode = inv.args.app_mode(false, false);
            if inv.args.takes_over_stdout(app_mode) == on_stdout {
                failures.push(format!("{:?}: stdout takeover mismatch", r.args));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn runtime_outcomes_are_left_to_the_runtime() {
    for r in records().iter().filter(|r| r.scope == "runtime") {
        let (action, lines, _) = ours(&r.args);
        assert!(action.is_some(), "{:?} rejected: {lines:?}", r.args);
        // Whatever we report is part of what Pi reports, in the same order.
        let mut pi = r.stderr.iter();
        for line in &lines {
            assert!(
                pi.any(|l| l == line),
                "{:?}: {line} not in {:?}",
                r.args,
                r.stderr
            );
        }
    }
}

#[test]
fn subcommands_and_export_in_the_fixture() {
    for r in records() {
        let Ok(inv) = parse_cli(&r.args) else {
            continue;
        };
        match r.args.first().map(String::as_str) {
            Some("auth" | "list" | "install") => {
                assert!(matches!(inv.action, Action::Command { .. }), "{:?}", r.args)
            }
            _ if r
                .stderr
                .iter()
                .any(|l| l.starts_with("Error: File not found:")) =>
            {
                assert!(matches!(inv.action, Action::Export { .. }), "{:?}", r.args)
            }
            _ => {}
        }
    }
}
