//! The package manager's state and plumbing: where each scope installs (`<agentDir>/npm`,
//! `<agentDir>/git/<host>/<path>`, `<cwd>/.pi/{npm,git}` for the project, hashed folders under
//! `<agentDir>/tmp/extensions/` for `-e` sources), the npm command (`npmCommand` setting), and
//! running npm and git the way Pi does: their output goes to the terminal, or to stderr when
//! stdout carries a protocol; failures become Pi's error texts.

use super::git_url::GitSource;
use super::source::NpmSource;
use crate::settings::paths::{CONFIG_DIR_NAME, lexical_normalize};
use pi_protocol::results::SourceScope;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a query command (`npm view`, `git ls-remote`, `git rev-parse`) may take.
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the output of npm and git goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildOutput {
    /// The terminal, as the `pi install`/`update`/`remove` commands run them.
    Inherit,
    /// Stderr, with no input: stdout belongs to the RPC/JSON protocol or the printed answer.
    Stderr,
}

/// A step of an install, update or removal (Pi's progress events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// `Installing <source>...` and the like.
    Start(String),
    /// A warning along the way.
    Warning(String),
    /// A package that changed: `npm:foo 1.0.0 -> 1.1.0`.
    Updated(String),
}

/// A package that could not be installed at startup (skipped, with a warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallFailure {
    pub source: String,
    pub scope: SourceScope,
    pub message: String,
}

impl InstallFailure {
    /// Pi's startup warning text after `Extension package "<source>": `.
    pub fn description(&self) -> String {
        let hint = match self.scope {
            SourceScope::Temporary => "Check the source and try again.".to_string(),
            SourceScope::Project => format!(
                "Run \"pi remove {} --local\" to remove it from settings.json.",
                self.source
            ),
            SourceScope::User => format!(
                "Run \"pi remove {}\" to remove it from settings.json.",
                self.source
            ),
        };
        format!("failed to install ({}). {hint}", self.message)
    }
}

/// Packages of one working directory.
pub struct PackageManager {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
    /// The agent-dir settings layer.
    pub global: Map<String, Value>,
    /// The project layer (empty unless the project is trusted).
    pub project: Map<String, Value>,
    pub project_trusted: bool,
    /// `npmCommand` of the merged settings: argv used instead of `npm`.
    pub npm_command: Option<Vec<String>>,
    /// `PI_OFFLINE`: nothing is installed or checked for updates.
    pub offline: bool,
    pub output: ChildOutput,
    progress: Option<Box<dyn FnMut(Progress)>>,
    global_npm_root: Option<(Vec<String>, Option<PathBuf>)>,
}

/// `PI_OFFLINE` set to `1`, `true` or `yes` (any case).
pub fn offline_from_env() -> bool {
    crate::cli::env::is_truthy_env_flag(std::env::var("PI_OFFLINE").ok().as_deref())
}

impl PackageManager {
    pub fn new(
        cwd: &Path,
        agent_dir: &Path,
        home: &Path,
        settings: &crate::settings::SettingsManager,
        output: ChildOutput,
    ) -> PackageManager {
        let mut pm = PackageManager::with_layers(
            cwd,
            agent_dir,
            home,
            (
                settings.global_layer(),
                settings.project_layer(),
                settings.is_project_trusted(),
            ),
            output,
        );
        pm.npm_command = settings.settings().npm_command.clone();
        pm
    }

    /// From settings layers (agent dir, project, whether the project is trusted).
    pub fn with_layers(
        cwd: &Path,
        agent_dir: &Path,
        home: &Path,
        (global, project, trusted): (&Map<String, Value>, &Map<String, Value>, bool),
        output: ChildOutput,
    ) -> PackageManager {
        let npm_command = crate::settings::merge::merge_layers(global, project)
            .get("npmCommand")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            });
        PackageManager {
            cwd: cwd.to_path_buf(),
            agent_dir: agent_dir.to_path_buf(),
            home: home.to_path_buf(),
            global: global.clone(),
            project: project.clone(),
            project_trusted: trusted,
            npm_command,
            offline: offline_from_env(),
            output,
            progress: None,
            global_npm_root: None,
        }
    }

    /// Reports each step to `f` (the CLI prints them).
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + 'static) {
        self.progress = Some(Box::new(f));
    }

    pub(super) fn emit(&mut self, p: Progress) {
        if let Some(f) = self.progress.as_mut() {
            f(p);
        }
    }

    pub(super) fn assert_trusted(&self, scope: SourceScope) -> Result<(), String> {
        if scope == SourceScope::Project && !self.project_trusted {
            return Err(
                "Project is not trusted; refusing to access project package storage".into(),
            );
        }
        Ok(())
    }

    // ---- locations ----------------------------------------------------------------------

    /// `<agentDir>/tmp/extensions`, private to the user.
    fn temp_root(&self) -> PathBuf {
        let dir = self.agent_dir.join("tmp").join("extensions");
        let _ = std::fs::create_dir_all(&dir);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        dir
    }

    /// A folder per `-e` source: `<temp>/<prefix>/<8 hex of sha256>/<suffix>`.
    fn temporary_dir(
        &self,
        prefix: &str,
        suffix: Option<&str>,
        git_ref: Option<&str>,
    ) -> Result<PathBuf, String> {
        let root = managed_path(&self.temp_root(), &[prefix])?;
        let key = format!(
            "{prefix}-{}{}",
            suffix.unwrap_or(""),
            git_ref.map(|r| format!("@{r}")).unwrap_or_default()
        );
        let digest = Sha256::digest(key.as_bytes());
        let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        managed_path(&root, &[&hash, suffix.unwrap_or("")])
    }

    /// The npm project a scope installs into.
    pub(super) fn npm_root(&self, scope: SourceScope) -> Result<PathBuf, String> {
        match scope {
            SourceScope::Temporary => self.temporary_dir("npm", None, None),
            SourceScope::Project => {
                self.assert_trusted(scope)?;
                Ok(self.cwd.join(CONFIG_DIR_NAME).join("npm"))
            }
            SourceScope::User => Ok(self.agent_dir.join("npm")),
        }
    }

    /// Where a managed npm package lives.
    pub(super) fn managed_npm_path(
        &self,
        source: &NpmSource,
        scope: SourceScope,
    ) -> Result<PathBuf, String> {
        Ok(self
            .npm_root(scope)?
            .join("node_modules")
            .join(&source.name))
    }

    /// Where an npm package is found: the managed copy, or for the user scope a copy installed
    /// globally by older versions of Pi.
    pub(super) fn npm_path(
        &mut self,
        source: &NpmSource,
        scope: SourceScope,
    ) -> Result<PathBuf, String> {
        let managed = self.managed_npm_path(source, scope)?;
        if scope != SourceScope::User || managed.exists() {
            return Ok(managed);
        }
        match self.global_npm_root() {
            Some(root) if root.join(&source.name).exists() => Ok(root.join(&source.name)),
            _ => Ok(managed),
        }
    }

    fn global_npm_root(&mut self) -> Option<PathBuf> {
        let argv = self.npm_argv();
        if let Some((key, root)) = &self.global_npm_root
            && *key == argv
        {
            return root.clone();
        }
        let root = match self.package_manager_name().ok()?.as_str() {
            "bun" => self.npm_sync(&["pm", "bin", "-g"]).map(|bin| {
                Path::new(&bin)
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join("install/global/node_modules")
            }),
            _ => self.npm_sync(&["root", "-g"]).map(PathBuf::from),
        };
        self.global_npm_root = Some((argv, root.clone()));
        root
    }

    /// The git checkout of a source.
    pub(super) fn git_path(
        &self,
        source: &GitSource,
        scope: SourceScope,
    ) -> Result<PathBuf, String> {
        if scope == SourceScope::Temporary {
            return self.temporary_dir(
                &format!("git-{}", source.host),
                Some(&source.path),
                source.git_ref.as_deref(),
            );
        }
        let root = self.git_root(scope)?.ok_or("Missing git install root")?;
        managed_path(&root, &[&source.host, &source.path])
    }

    pub(super) fn git_root(&self, scope: SourceScope) -> Result<Option<PathBuf>, String> {
        match scope {
            SourceScope::Temporary => Ok(None),
            SourceScope::Project => {
                self.assert_trusted(scope)?;
                Ok(Some(self.cwd.join(CONFIG_DIR_NAME).join("git")))
            }
            SourceScope::User => Ok(Some(self.agent_dir.join("git"))),
        }
    }

    /// The folder local sources of a scope resolve from.
    pub(super) fn scope_base(&self, scope: SourceScope) -> Result<PathBuf, String> {
        self.assert_trusted(scope)?;
        Ok(super::source::scope_base(scope, &self.cwd, &self.agent_dir))
    }

    // ---- the npm command ----------------------------------------------------------------

    /// `npmCommand` as argv, or `npm`.
    pub(super) fn npm_argv(&self) -> Vec<String> {
        match &self.npm_command {
            Some(argv) if !argv.is_empty() => argv.clone(),
            _ => vec!["npm".into()],
        }
    }

    fn npm_split(&self) -> Result<(String, Vec<String>), String> {
        let mut argv = self.npm_argv();
        let command = argv.remove(0);
        if command.is_empty() {
            return Err("Invalid npmCommand: first array entry must be a non-empty command".into());
        }
        Ok((command, argv))
    }

    /// npm, pnpm or bun: the command itself, the one after a `--`, or the one package
    /// manager named among a wrapper's arguments.
    pub(super) fn package_manager_name(&self) -> Result<String, String> {
        let (command, args) = self.npm_split()?;
        let short = |c: &str| -> String {
            let base = Path::new(c)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let lower = base.to_ascii_lowercase();
            if lower.ends_with(".cmd") || lower.ends_with(".exe") {
                base[..base.len() - 4].to_string()
            } else {
                base
            }
        };
        let supported = ["npm", "pnpm", "bun"];
        let direct = short(&command);
        if let Some(sep) = args.iter().rposition(|a| a == "--") {
            return Ok(args.get(sep + 1).map(|c| short(c)).unwrap_or(direct));
        }
        if supported.contains(&direct.as_str()) {
            return Ok(direct);
        }
        let mut wrapped: Vec<String> = Vec::new();
        for a in args.iter().map(|a| short(a)) {
            if supported.contains(&a.as_str()) && !wrapped.contains(&a) {
                wrapped.push(a);
            }
        }
        if wrapped.len() > 1 {
            return Err(format!(
                "Ambiguous npmCommand package managers: {}",
                wrapped.join(", ")
            ));
        }
        Ok(wrapped.pop().unwrap_or(direct))
    }

    /// Runs the npm command with `args` (output to the terminal or stderr).
    pub(super) fn npm(&self, args: &[String], cwd: Option<&Path>) -> Result<(), String> {
        let (command, mut argv) = self.npm_split()?;
        argv.extend(args.iter().cloned());
        self.run(&command, &argv, cwd)
    }

    fn npm_sync(&self, args: &[&str]) -> Option<String> {
        let (command, mut argv) = self.npm_split().ok()?;
        argv.extend(args.iter().map(|s| s.to_string()));
        let out = Command::new(&command)
            .args(&argv)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let text = if stdout.is_empty() {
            String::from_utf8_lossy(&out.stderr).trim().to_string()
        } else {
            stdout
        };
        Some(text)
    }

    /// Runs a command whose output the user sees. `Err` is Pi's message.
    pub(super) fn run(
        &self,
        command: &str,
        args: &[String],
        cwd: Option<&Path>,
    ) -> Result<(), String> {
        let mut cmd = Command::new(command);
        cmd.args(args);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        if self.output == ChildOutput::Stderr {
            cmd.stdin(Stdio::null());
            cmd.stdout(stderr_stdio());
        }
        let status = cmd.status().map_err(|e| spawn_error(command, &e))?;
        if status.success() {
            return Ok(());
        }
        Err(format!(
            "{command} {} failed with code {}",
            args.join(" "),
            exit_code_text(&status)
        ))
    }
}

/// Pi's `resolveManagedPath`: joins and refuses anything that leaves `root`.
pub fn managed_path(root: &Path, parts: &[&str]) -> Result<PathBuf, String> {
    let root = lexical_normalize(root);
    let mut path = root.clone();
    for p in parts {
        path.push(p);
    }
    let path = lexical_normalize(&path);
    if path != root && !path.starts_with(&root) {
        return Err(format!(
            "Refusing to use path outside package install root: {}",
            path.display()
        ));
    }
    Ok(path)
}

/// A copy of our stderr to hand to a child as its stdout.
fn stderr_stdio() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    }
}

/// Node's `spawn` error text (`spawn npm ENOENT`).
pub fn spawn_error(command: &str, e: &std::io::Error) -> String {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => "ENOENT".to_string(),
        std::io::ErrorKind::PermissionDenied => "EACCES".to_string(),
        _ => e.to_string(),
    };
    format!("spawn {command} {code}")
}

/// The exit code as Node reports it (`null` after a signal).
fn exit_code_text(status: &std::process::ExitStatus) -> String {
    status
        .code()
        .map(|c| c.to_string())
        .unwrap_or_else(|| "null".into())
}

/// Runs a command with its output captured (Pi's `runCommandCapture`): trimmed stdout, or
/// `<command> <args> failed with code <n>: <stderr or stdout>`.
pub fn run_capture(
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    timeout: Option<Duration>,
    env: &[(&str, &str)],
) -> Result<String, String> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(command, &e))?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            let _ = child.kill();
            timed_out = true;
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let joined = args.join(" ");
    if timed_out {
        return Err(format!(
            "{command} {joined} timed out after {}ms",
            timeout.map(|t| t.as_millis()).unwrap_or(0)
        ));
    }
    match status {
        Some(s) if s.success() => Ok(stdout.trim().to_string()),
        Some(s) => {
            let detail = if stderr.is_empty() { &stdout } else { &stderr };
            Err(format!(
                "{command} {joined} failed with code {}: {detail}",
                exit_code_text(&s)
            ))
        }
        None => Err(format!("{command} {joined} failed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_paths_stay_inside() {
        let root = Path::new("/a/git");
        assert_eq!(
            managed_path(root, &["host", "o/r"]).unwrap(),
            PathBuf::from("/a/git/host/o/r")
        );
        assert_eq!(
            managed_path(root, &["..", "x"]).unwrap_err(),
            "Refusing to use path outside package install root: /a/x"
        );
    }

    #[test]
    fn failures_read_like_pi() {
        let f = InstallFailure {
            source: "npm:x".into(),
            scope: SourceScope::Project,
            message: "boom".into(),
        };
        assert_eq!(
            f.description(),
            "failed to install (boom). Run \"pi remove npm:x --local\" to remove it from settings.json."
        );
        assert_eq!(
            run_capture("false", &["a".into()], None, None, &[]).unwrap_err(),
            "false a failed with code 1: "
        );
        assert_eq!(
            run_capture("pi-no-such-command", &[], None, None, &[]).unwrap_err(),
            "spawn pi-no-such-command ENOENT"
        );
    }
}
