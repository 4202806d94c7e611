//! Running many scenarios: recording goldens from the reference, replaying a binary against them
//! in parallel, and the expected-failures bookkeeping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::golden;
use super::process::Target;
use super::runner::{self, RunOptions, RunResult};
use super::scenario::Scenario;

/// Layout of the `conformance/` directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }
    pub fn scenarios(&self) -> PathBuf {
        self.root.join("scenarios")
    }
    /// The golden our binary is compared with (for a deviation: hand-edited, never recorded).
    pub fn golden(&self, name: &str) -> PathBuf {
        self.root.join("goldens").join(format!("{name}.golden"))
    }
    /// For a deviation: what Pi 1.6.0 actually does (recorded, for reference only).
    pub fn reference_golden(&self, name: &str) -> PathBuf {
        self.root.join("goldens").join(format!("{name}.pi.golden"))
    }
    pub fn expected_failures(&self) -> PathBuf {
        self.root.join("expected-failures.txt")
    }
}

#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Scenario names to run; empty = all.
    pub names: Vec<String>,
    pub jobs: usize,
    pub scenario_timeout: Duration,
    pub run: RunOptions,
    /// `record --ours`: record the goldens of addition scenarios from the given (our) binary.
    pub ours: bool,
}

impl SuiteOptions {
    /// Settings for replaying our binary: parallel, short timeouts. A scenario mostly waits (on
    /// the mock's pacing, on its steps), so the pool does not follow the CPU count.
    pub fn replay() -> Self {
        SuiteOptions {
            names: Vec::new(),
            jobs: 16,
            scenario_timeout: Duration::from_secs(30),
            run: RunOptions {
                // Only a failing step waits this out. A step whose record comes from a Node
                // extension host started while 15 other runs share two cores has taken over 5 s.
                step_timeout: Duration::from_secs(15),
                // Scenarios without steps (an extension that fails at startup) spend all of
                // it starting Node, which 16 runs at once on two cores can stretch past 5 s.
                exit_timeout: Duration::from_secs(10),
                keep: false,
            },
            ours: false,
        }
    }

    /// Settings for the (slow to start) reference: sequential, generous timeouts.
    pub fn record() -> Self {
        SuiteOptions {
            names: Vec::new(),
            jobs: 1,
            scenario_timeout: Duration::from_secs(120),
            run: RunOptions {
                step_timeout: Duration::from_secs(30),
                exit_timeout: Duration::from_secs(15),
                keep: false,
            },
            ours: false,
        }
    }
}

fn select(layout: &Layout, names: &[String]) -> Result<Vec<Scenario>, String> {
    let all = Scenario::load_dir(&layout.scenarios())?;
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|s| &s.name == n) {
            return Err(format!("no scenario named {n}"));
        }
    }
    Ok(all
        .into_iter()
        .filter(|s| names.contains(&s.name))
        .collect())
}

/// Runs scenarios in parallel (bounded) with a per-scenario timeout. `expected` gives each
/// scenario's golden for fail-fast comparison.
async fn run_all(
    scenarios: Vec<Scenario>,
    target: &Target,
    opts: &SuiteOptions,
    expected: BTreeMap<String, Vec<String>>,
) -> Vec<(Scenario, RunResult)> {
    let pool = Arc::new(Semaphore::new(opts.jobs.max(1)));
    // A scenario with extensions starts Node, which compiles them: a second or so of CPU. As
    // many at once as there are cores, so none misses its step timeout on a small machine.
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let node_pool = Arc::new(Semaphore::new(opts.jobs.clamp(1, cores)));
    let expected = Arc::new(expected);
    let mut handles = Vec::new();
    for s in scenarios {
        let pool = pool.clone();
        let node_pool = node_pool.clone();
        let target = target.clone();
        let opts = opts.clone();
        let expected = expected.clone();
        handles.push(tokio::spawn(async move {
            let _node_permit = match s.uses_extensions() {
                true => Some(node_pool.acquire_owned().await),
                false => None,
            };
            let _permit = pool.acquire_owned().await;
            let golden = expected.get(&s.name).map(Vec::as_slice);
            let result = match tokio::time::timeout(
                opts.scenario_timeout,
                runner::run(&s, &target, &opts.run, golden),
            )
            .await
            {
                Ok(r) => r,
                Err(_) => RunResult {
                    error: Some(format!(
                        "scenario timed out after {:?}",
                        opts.scenario_timeout
                    )),
                    ..RunResult::default()
                },
            };
            (s, result)
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        if let Ok(r) = h.await {
            out.push(r);
        }
    }
    out
}

/// One line per recorded scenario; `Err` lists the scenarios that could not be recorded.
pub async fn record(
    layout: &Layout,
    target: &Target,
    opts: &SuiteOptions,
) -> Result<Vec<String>, String> {
    let scenarios = select(layout, &opts.names)?;
    if opts.ours
        && let Some(s) = scenarios.iter().find(|s| s.addition.is_none())
    {
        return Err(format!(
            "record --ours writes the goldens of addition scenarios only; {} is Pi's",
            s.name
        ));
    }
    let mut report = Vec::new();
    let mut failed = Vec::new();
    for (s, r) in run_all(scenarios, target, opts, BTreeMap::new()).await {
        if let Some(e) = &r.error {
            failed.push(format!(
                "{}: {e}\n--- stderr (tail) ---\n{}",
                s.name,
                tail(&r.stderr, 2000)
            ));
            continue;
        }
        let path = if s.golden_is_ours() && !opts.ours {
            layout.reference_golden(&s.name)
        } else {
            layout.golden(&s.name)
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        golden::write(&path, &r.transcript)?;
        let mut line = format!("recorded {} ({} lines)", s.name, r.transcript.len());
        if opts.ours {
            line.push_str(" from our binary: review it before committing");
        } else if s.addition.is_some() {
            line.push_str(" as Pi's behaviour; the compared golden is ours (record --ours)");
            if !layout.golden(&s.name).exists() {
                line.push_str(" and MISSING");
            }
        } else if s.deviation.is_some() {
            line.push_str(" as Pi's behaviour; the compared golden is hand-edited");
            if !layout.golden(&s.name).exists() {
                line.push_str(" and MISSING: write it");
            }
        }
        if r.unscripted_requests > 0 {
            line.push_str(&format!(
                "; warning: {} requests beyond the script",
                r.unscripted_requests
            ));
        }
        if r.unused_replies > 0 {
            line.push_str(&format!(
                "; warning: {} scripted replies unused",
                r.unused_replies
            ));
        }
        report.push(line);
    }
    if failed.is_empty() {
        Ok(report)
    } else {
        for l in &report {
            eprintln!("{l}");
        }
        Err(failed.join("\n\n"))
    }
}

/// The outcome of replaying one scenario.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: String,
    pub passed: bool,
    /// Why it failed: the first difference, runner errors, stderr tail.
    pub detail: String,
    /// The expected-failures entry, if listed.
    pub expected_failure: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub outcomes: Vec<Outcome>,
    /// Problems with the bookkeeping itself (unknown names in expected-failures, ...).
    pub setup_problems: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed).count()
    }

    /// `conformance: P/N scenarios match`
    pub fn summary_line(&self) -> String {
        format!(
            "conformance: {}/{} scenarios match",
            self.passed(),
            self.outcomes.len()
        )
    }

    /// Everything that makes the suite fail: unlisted failures, listed passes, setup problems.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.setup_problems.clone();
        for o in &self.outcomes {
            match (o.passed, &o.expected_failure) {
                (false, None) => out.push(format!("FAIL {}\n{}", o.name, o.detail)),
                (true, Some(_)) => out.push(format!(
                    "UNEXPECTED PASS {}: remove it from expected-failures.txt",
                    o.name
                )),
                _ => {}
            }
        }
        out
    }

    pub fn ok(&self) -> bool {
        self.problems().is_empty()
    }
}

/// Parses `expected-failures.txt`: `<scenario> <note naming the issue, e.g. #5 ...>` per line.
pub fn read_expected_failures(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, note) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let note = note.trim();
        let names_issue = note.split_whitespace().any(|w| {
            w.strip_prefix('#')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
        if !names_issue {
            return Err(format!(
                "{}:{}: {name}: name the open issue it waits on (e.g. `#5 agent loop`)",
                path.display(),
                i + 1
            ));
        }
        out.insert(name.to_string(), note.to_string());
    }
    Ok(out)
}

/// Replays scenarios against `target` and compares with the goldens. With `reference` the
/// target is Pi itself: deviations are compared with what Pi did and nothing is expected to fail.
pub async fn replay(
    layout: &Layout,
    target: &Target,
    opts: &SuiteOptions,
    reference: bool,
) -> Report {
    let mut report = Report::default();
    let scenarios = match select(layout, &opts.names) {
        Ok(s) => s,
        Err(e) => {
            report.setup_problems.push(e);
            return report;
        }
    };
    let xfail = if reference {
        BTreeMap::new()
    } else {
        match read_expected_failures(&layout.expected_failures()) {
            Ok(x) => x,
            Err(e) => {
                report.setup_problems.push(e);
                BTreeMap::new()
            }
        }
    };
    for name in xfail.keys() {
        if !layout.scenarios().join(format!("{name}.json")).exists() {
            report.setup_problems.push(format!(
                "expected-failures.txt lists unknown scenario {name}"
            ));
        }
    }
    let mut expected = BTreeMap::new();
    let mut runnable = Vec::new();
    for s in scenarios {
        let path = if reference && s.golden_is_ours() {
            layout.reference_golden(&s.name)
        } else {
            layout.golden(&s.name)
        };
        match golden::read(&path) {
            Ok(lines) => {
                expected.insert(s.name.clone(), lines);
                runnable.push(s);
            }
            Err(e) => report.outcomes.push(Outcome {
                name: s.name.clone(),
                passed: false,
                detail: format!("no golden: {e} (run conformance/record {})", s.name),
                expected_failure: xfail.get(&s.name).cloned(),
            }),
        }
    }
    for (s, r) in run_all(runnable, target, opts, expected.clone()).await {
        let golden = expected.get(&s.name).cloned().unwrap_or_default();
        let diff = r
            .mismatch
            .clone()
            .or_else(|| golden::compare(&golden, &r.transcript));
        let passed = diff.is_none() && r.error.is_none();
        let mut detail = String::new();
        if let Some(d) = diff {
            detail.push_str(&d);
        }
        if let Some(e) = &r.error {
            detail.push_str(&format!("runner: {e}\n"));
        }
        if !passed && !r.stderr.trim().is_empty() {
            detail.push_str(&format!("stderr (tail):\n{}\n", tail(&r.stderr, 1500)));
        }
        report.outcomes.push(Outcome {
            name: s.name.clone(),
            passed,
            detail,
            expected_failure: xfail.get(&s.name).cloned(),
        });
    }
    report.outcomes.sort_by(|a, b| a.name.cmp(&b.name));
    report
}

/// Blocking wrapper for `cargo test`.
pub fn replay_blocking(layout: &Layout, target: &Target, opts: &SuiteOptions) -> Report {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(replay(layout, target, opts, false)),
        Err(e) => Report {
            setup_problems: vec![format!("tokio runtime: {e}")],
            ..Report::default()
        },
    }
}

fn tail(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    chars[chars.len() - max..].iter().collect()
}
