//! Runs one scenario against one target: sandbox, mock LLM, process, steps, transcript.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::golden;
use super::normalize::Normalizer;
use super::process::{Agent, Output, Target};
use super::sandbox::Sandbox;
use super::scenario::{Matcher, Scenario, Step};
use super::transcript;
use crate::mock::{MockConfig, MockLlm};

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Longest wait of a single `wait`/`idle`/`await_gate` step.
    pub step_timeout: Duration,
    /// Default for a scenario's `exit_timeout_ms`.
    pub exit_timeout: Duration,
    /// Keep the sandbox directory for inspection.
    pub keep: bool,
}

#[derive(Debug, Clone, Default)]
pub struct RunResult {
    /// Normalized golden lines (possibly partial if the run stopped early).
    pub transcript: Vec<String>,
    pub stderr: String,
    /// A runner problem: timeout, spawn failure, bad scenario.
    pub error: Option<String>,
    /// Replay only: the first stdout record that differed from the golden (the run was stopped).
    pub mismatch: Option<String>,
    /// Mock replies the run did not consume.
    pub unused_replies: usize,
    /// Requests the script had no reply for.
    pub unscripted_requests: usize,
}

/// Normalizes stdout lines as they arrive and, when a golden is given, stops at the first
/// record that differs from it.
struct Checker<'a> {
    expected: Option<Vec<&'a String>>,
    normalized: Vec<String>,
}

impl<'a> Checker<'a> {
    fn new(expected: Option<&'a [String]>) -> Self {
        let expected = expected.map(|lines| {
            lines
                .iter()
                .filter(|l| golden::tag(l).starts_with("stdout"))
                .collect()
        });
        Checker {
            expected,
            normalized: Vec::new(),
        }
    }

    fn sync(&mut self, out: &Output, norm: &mut Normalizer) -> Option<String> {
        while self.normalized.len() < out.lines.len() {
            let i = self.normalized.len();
            self.normalized
                .push(transcript::stdout_line(norm, &out.lines[i]));
            if let Some(exp) = &self.expected
                && exp.get(i).map(|e| e.as_str()) != Some(self.normalized[i].as_str())
            {
                let exp: Vec<String> = exp.iter().map(|s| s.to_string()).collect();
                return Some(golden::describe_difference(&exp, &self.normalized, i));
            }
        }
        None
    }
}

enum Stop {
    Error(String),
    Mismatch(String),
}

struct Run<'a> {
    agent: Agent,
    mock: &'a MockLlm,
    norm: Normalizer,
    checker: Checker<'a>,
    vars: BTreeMap<String, String>,
    wait_counts: HashMap<String, usize>,
    opts: &'a RunOptions,
}

impl Run<'_> {
    /// Waits until `cond` holds, re-checking on every stdout line and at least every 20 ms.
    async fn wait_until(
        &mut self,
        what: &str,
        mut cond: impl FnMut(&Output, &MockLlm) -> bool,
    ) -> Result<(), Stop> {
        let deadline = Instant::now() + self.opts.step_timeout;
        loop {
            let shared = self.agent.notifier();
            let notified = shared.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let out = self.agent.output();
                if let Some(d) = self.checker.sync(&out, &mut self.norm) {
                    return Err(Stop::Mismatch(d));
                }
                if cond(&out, self.mock) {
                    return Ok(());
                }
                if out.stdout_closed {
                    return Err(Stop::Error(format!(
                        "stdout closed while waiting for {what}"
                    )));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Stop::Error(format!(
                    "timed out after {:?} waiting for {what}",
                    self.opts.step_timeout
                )));
            }
            let tick = (deadline - now).min(Duration::from_millis(20));
            let _ = tokio::time::timeout(tick, notified).await;
        }
    }

    async fn step(&mut self, step: &Step) -> Result<(), Stop> {
        match step {
            Step::Send(v) => {
                let mut text = substitute_value(v, &self.vars).to_string();
                text.push('\n');
                self.agent.write(text.as_bytes()).await.map_err(Stop::Error)
            }
            Step::Raw(s) => {
                let text = substitute(s, &self.vars);
                self.agent.write(text.as_bytes()).await.map_err(Stop::Error)
            }
            Step::RawBytes(b) => self.agent.write(b).await.map_err(Stop::Error),
            Step::Wait(m) => self.wait(m).await,
            Step::Idle(ms) => {
                let quiet = Duration::from_millis(*ms);
                self.wait_until(&format!("{ms} ms of quiet"), |out, mock| {
                    out.last_activity.elapsed() >= quiet && mock.active_connections() == 0
                })
                .await
                .or_else(|e| match e {
                    // A process that has exited is quiet.
                    Stop::Error(m) if m.starts_with("stdout closed") => Ok(()),
                    other => Err(other),
                })
            }
            Step::OpenGate(g) => {
                self.mock.open_gate(g);
                Ok(())
            }
            Step::AwaitGate(g) => {
                let name = g.clone();
                self.wait_until(&format!("gate {g} to be reached"), move |_, mock| {
                    mock.gates().was_reached(&name)
                })
                .await
            }
            Step::Sleep(ms) => {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                Ok(())
            }
            Step::CloseStdin(_) => {
                self.agent.close_stdin();
                Ok(())
            }
            Step::Signal(name) => self.agent.signal(name).await.map_err(Stop::Error),
        }
    }

    async fn wait(&mut self, m: &Matcher) -> Result<(), Stop> {
        let key = format!("{:?}", m.identity());
        let count = self.wait_counts.entry(key).or_insert(0);
        *count += 1;
        let nth = m.nth.unwrap_or(*count);
        let mut found: Option<Value> = None;
        self.wait_until(&format!("record #{nth} with {}", m.describe()), |out, _| {
            let hit = out
                .lines
                .iter()
                .filter_map(|l| l.json.as_ref())
                .filter(|v| m.matches(v))
                .nth(nth - 1);
            found = hit.cloned();
            found.is_some()
        })
        .await?;
        if let Some(record) = found {
            for (name, ptr) in &m.capture {
                let v = match record.pointer(ptr) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => {
                        return Err(Stop::Error(format!(
                            "capture {name}: {ptr} not found in {record}"
                        )));
                    }
                };
                self.vars.insert(name.clone(), v);
            }
        }
        Ok(())
    }
}

/// Replaces `${NAME}` with variables.
pub fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = s.to_string();
    for (k, v) in vars {
        let pat = format!("${{{k}}}");
        if out.contains(&pat) {
            out = out.replace(&pat, v);
        }
    }
    out
}

fn substitute_value(v: &Value, vars: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute(s, vars)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute_value(x, vars)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute_value(x, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Runs `scenario` against `target`. With `expected`, stdout is compared as it arrives and the
/// run stops at the first difference.
pub async fn run(
    scenario: &Scenario,
    target: &Target,
    opts: &RunOptions,
    expected: Option<&[String]>,
) -> RunResult {
    let mut result = RunResult::default();
    let mut sandbox = match Sandbox::create(opts.keep) {
        Ok(s) => s,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    // The mock streams in lock-step with the records the agent writes (see MockConfig).
    let (progress_tx, progress_rx) = tokio::sync::watch::channel(0u64);
    let defaults = MockConfig::default();
    let config = MockConfig {
        header_delay: scenario
            .header_delay_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.header_delay),
        chunk_delay: Duration::from_millis(scenario.chunk_delay_ms.unwrap_or(2)),
        progress: Some(progress_rx),
        pace_timeout: defaults.pace_timeout,
    };
    let mock = match MockLlm::start_with(scenario.llm.clone(), config).await {
        Ok(m) => m,
        Err(e) => {
            result.error = Some(format!("mock: {e}"));
            return result;
        }
    };
    let port = mock.port();
    if let Err(e) = sandbox.prepare(scenario, port) {
        result.error = Some(e);
        return result;
    }
    let vars = sandbox.vars(port);
    let args: Vec<String> = scenario.args.iter().map(|a| substitute(a, &vars)).collect();
    let mut env = vec![
        ("HOME".to_string(), sandbox.home.display().to_string()),
        (
            "PI_CODING_AGENT_DIR".to_string(),
            sandbox.agent.display().to_string(),
        ),
        ("PI_OFFLINE".to_string(), "1".to_string()),
        ("TMPDIR".to_string(), sandbox.tmp.display().to_string()),
    ];
    for (k, v) in &scenario.env {
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), substitute(v, &vars)));
    }
    env.retain(|(name, _)| !scenario.env_remove.contains(name));
    for (route, body) in &scenario.routes {
        mock.set_route(route, substitute_value(body, &vars));
    }
    let agent = match Agent::spawn(
        target,
        scenario.mode.as_deref(),
        &args,
        &env,
        &sandbox.work,
        progress_tx,
    ) {
        Ok(a) => a,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    let mut run = Run {
        agent,
        mock: &mock,
        norm: Normalizer::new(sandbox.substitutions(port, target.package_dir.as_deref())),
        checker: Checker::new(expected),
        vars,
        wait_counts: HashMap::new(),
        opts,
    };
    let mut stopped = None;
    for step in &scenario.steps {
        if let Err(stop) = run.step(step).await {
            stopped = Some(stop);
            break;
        }
    }
    // A run that stopped early has failed already; do not wait for a clean exit.
    let exit = match &stopped {
        Some(_) => {
            run.agent.kill().await;
            None
        }
        None => {
            let max = scenario
                .exit_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(opts.exit_timeout);
            Some(run.agent.finish(max).await)
        }
    };
    {
        let out = run.agent.output();
        result.stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if stopped.is_none() {
            if let Some(d) = run.checker.sync(&out, &mut run.norm) {
                stopped = Some(Stop::Mismatch(d));
            }
        } else {
            let _ = run.checker.sync(&out, &mut run.norm);
        }
    }
    match stopped {
        Some(Stop::Mismatch(d)) => result.mismatch = Some(d),
        Some(Stop::Error(e)) => result.error = Some(e),
        None => {}
    }
    let mut lines = std::mem::take(&mut run.checker.normalized);
    let mut requests: Vec<String> = mock
        .requests()
        .iter()
        .map(|req| transcript::request_line(&mut run.norm, req))
        .collect();
    if scenario.sort_requests {
        requests.sort();
    }
    lines.extend(requests);
    match sandbox.changes() {
        Ok(changes) => lines.extend(transcript::file_lines(&mut run.norm, changes)),
        Err(e) => {
            result.error.get_or_insert(e);
        }
    }
    if scenario.stderr {
        let kept: String = if scenario.stderr_prefixes.is_empty() {
            result.stderr.clone()
        } else {
            result
                .stderr
                .lines()
                .filter(|l| {
                    scenario
                        .stderr_prefixes
                        .iter()
                        .any(|p| l.starts_with(p.as_str()))
                })
                .map(|l| format!("{l}\n"))
                .collect()
        };
        lines.extend(transcript::stderr_lines(&mut run.norm, &kept));
    }
    if let Some(exit) = exit {
        lines.push(format!("exit {exit}"));
    }
    result.transcript = lines;
    result.unused_replies = mock.remaining();
    result.unscripted_requests = mock.unscripted_requests();
    result
}
