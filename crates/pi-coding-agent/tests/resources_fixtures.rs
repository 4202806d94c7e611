//! Replays the cases recorded from Pi 1.6.0 (`tests/fixtures/resources/<case>/expected/*.json`,
//! written by `tests/fixtures/resources/record.py`) through our settings, trust and resource
//! code, and compares:
//!
//! * the `get_commands` list, exactly (names, descriptions, source info, order);
//! * the system prompt's section names and order, exactly;
//! * the data-bearing sections: `cwd`, `addendum` and a custom `preamble` exactly; the context
//!   files of `project_context` and the `<available_skills>` list of `skills` exactly (the
//!   sentences introducing them are ours); the tools listed in `tools` and the number of rules;
//! * every prompt's text after skill and template expansion, exactly;
//! * the startup warnings on stderr, exactly;
//! * settings files after the `set_*` commands, exactly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_coding_agent::cli::{parse_cli, render_diagnostics};
use pi_coding_agent::resources::session::{Locations, SessionResources};
use pi_coding_agent::resources::system_prompt::ToolPrompt;
use pi_coding_agent::settings::SettingsManager;
use pi_coding_agent::settings::merge::DEFAULT_TOOL_NAMES;
use pi_protocol::QueueMode;
use pi_test_support::TempDir;
use serde_json::Value;
use std::path::{Path, PathBuf};

const BUILTIN_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resources")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Lays the case's trees into `root` and applies the case's and the run's `write`s.
fn lay_out(case_dir: &Path, case: &Value, run: &Value, root: &Path) {
    for entry in std::fs::read_dir(case_dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if entry.file_type().unwrap().is_dir() && name != "expected" {
            copy_tree(&entry.path(), &root.join(&name));
        }
    }
    for sub in ["home", "agent", case["cwd"].as_str().unwrap()] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    for repo in case["git"].as_array().into_iter().flatten() {
        let git = root.join(repo.as_str().unwrap()).join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    let writes = case["write"].as_object().into_iter().flatten();
    for (rel, text) in writes.chain(run["write"].as_object().into_iter().flatten()) {
        let path = root.join(rel);
        match text.as_str() {
            None => {
                let _ = std::fs::remove_file(&path);
            }
            Some(t) => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let root_s = root.display().to_string();
                std::fs::write(&path, t.replace("<root>", &root_s)).unwrap();
            }
        }
    }
}

/// The part of a section after its first line (the sentences before the data are ours).
fn data_part(section: &str, marker: &str) -> String {
    match section.find(marker) {
        Some(i) => section[i..].to_string(),
        None => format!("(no {marker} in) {section}"),
    }
}

/// One run: returns the mismatches.
fn replay(
    case_dir: &Path,
    case: &Value,
    run_name: &str,
    run: &Value,
    expected: &Value,
) -> Vec<String> {
    let tmp = TempDir::new();
    let root = tmp.path();
    lay_out(case_dir, case, run, root);
    let norm = |s: &str| s.replace(&root.display().to_string(), "<root>");
    let mut failures = Vec::new();
    let mut check = |what: &str, ours: String, pi: String| {
        if ours != pi {
            failures.push(format!("{run_name}: {what}\n  ours: {ours}\n  pi:   {pi}"));
        }
    };

    let mut argv: Vec<String> = [
        "--mode",
        "rpc",
        "--no-session",
        "--provider",
        "mock-openai",
        "--model",
        "mock-gpt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(
        run["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    let args = parse_cli(&argv).unwrap().args;
    let cwd = root.join(case["cwd"].as_str().unwrap());
    let agent = root.join("agent");
    let home = root.join("home");

    // Startup: settings read as if trusted (Pi does, for sessionDir), then the session.
    let mut startup = SettingsManager::load(&cwd, &agent, true);
    let at = Locations {
        cwd: &cwd,
        agent_dir: &agent,
        home: &home,
        process_cwd: &cwd,
        needs_trust: &std::cell::OnceCell::new(),
    };
    let (mut session, stderr) = SessionResources::load(&args, at, &mut startup);
    let pi_stderr: String = expected["stderr"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{}\n", l.as_str().unwrap()))
        .collect();
    check("stderr", norm(&render_diagnostics(&stderr)), pi_stderr);

    let commands = session.commands(Vec::new());
    check(
        "get_commands",
        norm(&pi_js::json::to_js_string(&commands).unwrap()),
        serde_json::to_string(&expected["commands"]).unwrap(),
    );

    // System prompt sections, with the tools the arguments select.
    let selected: Vec<String> = if args.no_tools {
        Vec::new()
    } else {
        match &args.tools {
            Some(t) => t.clone(),
            None => DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect(),
        }
    };
    let registry: Vec<ToolPrompt> = BUILTIN_TOOLS
        .iter()
        .map(|t| ToolPrompt::builtin(t))
        .collect();
    let sections = session
        .prompt_sections(&selected, &[], &registry, Path::new("/pkg"))
        .unwrap();
    let pi_sections = expected["system"][0].as_object().unwrap();
    let ours_names: Vec<&str> = sections.iter().map(|(k, _)| k).collect();
    let pi_names: Vec<&str> = pi_sections.keys().map(String::as_str).collect();
    check(
        "section names",
        format!("{ours_names:?}"),
        format!("{pi_names:?}"),
    );
    let pi_default_preamble = "You are a coding assistant running inside pi";
    for (name, text) in sections.iter() {
        let Some(pi) = pi_sections.get(name).and_then(Value::as_str) else {
            continue;
        };
        let ours = norm(text);
        match name {
            "cwd" | "addendum" => check(name, ours, pi.to_string()),
            "preamble" if !pi.starts_with(pi_default_preamble) => check(name, ours, pi.to_string()),
            "project_context" => check(
                name,
                data_part(&ours, "<project_instructions"),
                data_part(pi, "<project_instructions"),
            ),
            "skills" => check(
                name,
                data_part(&ours, "<available_skills>"),
                data_part(pi, "<available_skills>"),
            ),
            "tools" => {
                let listed = |s: &str| -> Vec<String> {
                    s.lines()
                        .filter(|l| l.starts_with("- ") || *l == "(none)")
                        .map(|l| l.split(':').next().unwrap_or(l).to_string())
                        .collect()
                };
                check(
                    name,
                    format!("{:?}", listed(&ours)),
                    format!("{:?}", listed(pi)),
                );
            }
            "rules" => check(
                "number of rules",
                ours.lines().count().to_string(),
                pi.lines().count().to_string(),
            ),
            _ => {}
        }
    }
    let resources = &session.resources;

    // Prompt expansion.
    let prompts: Vec<&str> = run["prompts"]
        .as_array()
        .map(|p| p.iter().map(|v| v.as_str().unwrap()).collect())
        .unwrap_or_else(|| vec!["hello"]);
    for (i, text) in prompts.iter().enumerate() {
        let ours = norm(&resources.expand_input(text).text);
        let pi = expected["user_texts"][i]
            .as_str()
            .unwrap_or("(missing)")
            .to_string();
        check(&format!("expansion of {text:?}"), ours, pi);
    }

    // Settings writes.
    for step in run["steps"].as_array().into_iter().flatten() {
        let mode = |v: &Value| match v.as_str() {
            Some("all") => QueueMode::All,
            _ => QueueMode::OneAtATime,
        };
        let enabled = step["enabled"].as_bool().unwrap_or(false);
        let settings = &mut session.settings;
        let _ = match step["type"].as_str().unwrap() {
            "set_steering_mode" => settings.set_steering_mode(mode(&step["mode"])),
            "set_follow_up_mode" => settings.set_follow_up_mode(mode(&step["mode"])),
            "set_auto_compaction" => settings.set_compaction_enabled(enabled),
            "set_auto_retry" => settings.set_retry_enabled(enabled),
            _ => Ok(()),
        };
    }
    for (rel, pi) in expected["files"].as_object().into_iter().flatten() {
        let ours = std::fs::read_to_string(root.join(rel)).ok();
        check(
            &format!("file {rel}"),
            format!("{ours:?}"),
            format!("{:?}", pi.as_str()),
        );
    }
    failures
}

#[test]
fn resources_match_the_reference_recordings() {
    let mut failures = Vec::new();
    let mut runs = 0;
    let mut cases: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    cases.sort();
    for case_dir in cases {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(case_dir.join("case.json")).unwrap())
                .unwrap();
        let name = case_dir.file_name().unwrap().to_string_lossy().into_owned();
        for (run_name, run) in case["runs"].as_object().unwrap() {
            let path = case_dir.join("expected").join(format!("{run_name}.json"));
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            failures.extend(replay(
                &case_dir,
                &case,
                &format!("{name}/{run_name}"),
                run,
                &expected,
            ));
            runs += 1;
        }
    }
    assert!(runs >= 30, "only {runs} recorded runs found");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
