//! The settings of one working directory: the agent-dir layer (`<agentDir>/settings.json`) and
//! the project layer (`<cwd>/.pi/settings.json`, only when the project is trusted), merged and
//! typed, plus the writes the RPC commands make (`set_steering_mode`, `set_follow_up_mode`,
//! `set_auto_compaction`, `set_auto_retry`), which go to the agent-dir file only.

use super::file::{KeyUpdate, persist, read_layer};
use super::merge::merge_layers;
use super::model::Settings;
use super::paths::{CONFIG_DIR_NAME, normalize_path};
use crate::cli::Diagnostic;
use pi_protocol::QueueMode;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Loaded settings layers and their merged, typed view.
#[derive(Debug, Clone)]
pub struct SettingsManager {
    global_path: PathBuf,
    project_path: PathBuf,
    global: Map<String, Value>,
    project: Map<String, Value>,
    /// Pi never writes over a settings file it could not read (the user's text would be lost).
    global_unreadable: bool,
    project_unreadable: bool,
    project_trusted: bool,
    settings: Settings,
    diagnostics: Vec<Diagnostic>,
    /// Files that could not be read: `(project?, message)`.
    load_errors: Vec<(bool, String)>,
}

impl SettingsManager {
    /// Reads `<agent_dir>/settings.json` and, when `project_trusted`, `<cwd>/.pi/settings.json`.
    ///
    /// A file that cannot be parsed counts as empty and yields the warning
    /// `Invalid settings file <path>: <error>`. The project file's warning is reported even when
    /// the project is not trusted: Pi reads it once before deciding trust (for `sessionDir`).
    pub fn load(cwd: &Path, agent_dir: &Path, project_trusted: bool) -> SettingsManager {
        let global_path = agent_dir.join("settings.json");
        let project_path = cwd.join(CONFIG_DIR_NAME).join("settings.json");
        let mut diagnostics = Vec::new();
        let mut load_errors = Vec::new();
        let mut read = |path: &Path, project: bool| match read_layer(path) {
            Ok(layer) => (layer, false),
            Err(message) => {
                diagnostics.push(Diagnostic::warning(format!(
                    "Invalid settings file {}: {message}",
                    path.display()
                )));
                load_errors.push((project, message));
                (Map::new(), true)
            }
        };
        let (global, global_unreadable) = read(&global_path, false);
        let (project, project_unreadable) = read(&project_path, true);
        let project = if project_trusted { project } else { Map::new() };
        let settings = Settings::from_layers(&global, &merge_layers(&global, &project));
        diagnostics.extend(settings.warnings.iter().cloned().map(Diagnostic::warning));
        SettingsManager {
            global_path,
            project_path,
            global,
            project,
            global_unreadable,
            project_unreadable,
            project_trusted,
            settings,
            diagnostics,
            load_errors,
        }
    }

    /// What [`SettingsManager::load`] would read again for `cwd` and `agent_dir` with the
    /// project trusted, when this manager read those very files that way (startup reads the
    /// process cwd's settings as if trusted, then the session's). Its diagnostics come along:
    /// startup's list drops repeats. `None`: load them.
    pub fn reread(&self, cwd: &Path, agent_dir: &Path, project_trusted: bool) -> Option<Self> {
        (project_trusted
            && self.project_trusted
            && self.global_path == agent_dir.join("settings.json")
            && self.project_path == cwd.join(CONFIG_DIR_NAME).join("settings.json"))
        .then(|| self.clone())
    }

    /// The files that could not be read, as `(project?, message)` (Pi's `drainErrors`).
    pub fn load_errors(&self) -> &[(bool, String)] {
        &self.load_errors
    }

    /// The merged, typed settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Both layers merged as Pi merges them (`getSettings()` of extensions).
    pub fn merged(&self) -> Map<String, Value> {
        merge_layers(&self.global, &self.project)
    }

    /// The agent-dir layer as read (after Pi's migrations).
    pub fn global_layer(&self) -> &Map<String, Value> {
        &self.global
    }

    /// The project layer as read (empty when the project is not trusted).
    pub fn project_layer(&self) -> &Map<String, Value> {
        &self.project
    }

    pub fn is_project_trusted(&self) -> bool {
        self.project_trusted
    }

    pub fn global_path(&self) -> &Path {
        &self.global_path
    }

    pub fn project_path(&self) -> &Path {
        &self.project_path
    }

    /// The startup warnings (unreadable files, values Pi would throw on), once.
    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diagnostics)
    }

    /// `set_steering_mode`: `steeringMode` in the agent-dir file.
    pub fn set_steering_mode(&mut self, mode: QueueMode) -> Result<(), String> {
        self.update(KeyUpdate::Top {
            key: "steeringMode".into(),
            value: queue_mode_value(mode),
        })
    }

    /// `set_follow_up_mode`: `followUpMode` in the agent-dir file.
    pub fn set_follow_up_mode(&mut self, mode: QueueMode) -> Result<(), String> {
        self.update(KeyUpdate::Top {
            key: "followUpMode".into(),
            value: queue_mode_value(mode),
        })
    }

    /// `set_auto_compaction`: `compaction.enabled` in the agent-dir file.
    pub fn set_compaction_enabled(&mut self, enabled: bool) -> Result<(), String> {
        self.update(KeyUpdate::Nested {
            key: "compaction".into(),
            member: "enabled".into(),
            value: Value::Bool(enabled),
        })
    }

    /// `set_auto_retry`: `retry.enabled` in the agent-dir file.
    pub fn set_retry_enabled(&mut self, enabled: bool) -> Result<(), String> {
        self.update(KeyUpdate::Nested {
            key: "retry".into(),
            member: "enabled".into(),
            value: Value::Bool(enabled),
        })
    }

    /// `packages` of the agent-dir file, or of the project's (which needs trust), as
    /// `pi install`/`pi remove` and `pi config` write them.
    pub fn set_packages(&mut self, project: bool, packages: Vec<Value>) -> Result<(), String> {
        self.set_list(project, "packages", packages)
    }

    /// One resource list (`extensions`, `skills`, `prompts`, `themes`, `packages`) of either
    /// file; the rest of the file is kept.
    pub fn set_list(&mut self, project: bool, key: &str, values: Vec<Value>) -> Result<(), String> {
        let update = KeyUpdate::Top {
            key: key.into(),
            value: Value::Array(values),
        };
        if !project {
            return self.update(update);
        }
        if !self.project_trusted {
            return Err("Project is not trusted; refusing to write project settings".into());
        }
        if let KeyUpdate::Top { key, value } = &update {
            self.project.insert(key.clone(), value.clone());
        }
        self.settings =
            Settings::from_layers(&self.global, &merge_layers(&self.global, &self.project));
        if self.project_unreadable {
            return Ok(());
        }
        persist(&self.project_path, &[update])
    }

    /// Changes the agent-dir layer in memory, re-merges, and writes the one key to the file
    /// (unless the file was unreadable at startup). `Err` is the write failure; the in-memory
    /// change stands either way, as in Pi.
    fn update(&mut self, update: KeyUpdate) -> Result<(), String> {
        match &update {
            KeyUpdate::Top { key, value } => {
                self.global.insert(key.clone(), value.clone());
            }
            KeyUpdate::Nested { key, member, value } => {
                let slot = self
                    .global
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(m) = slot {
                    m.insert(member.clone(), value.clone());
                }
            }
        }
        self.settings =
            Settings::from_layers(&self.global, &merge_layers(&self.global, &self.project));
        if self.global_unreadable {
            return Ok(());
        }
        persist(&self.global_path, &[update])
    }
}

fn queue_mode_value(mode: QueueMode) -> Value {
    Value::String(
        match mode {
            QueueMode::All => "all",
            QueueMode::OneAtATime => "one-at-a-time",
        }
        .into(),
    )
}

/// The session directory before `--session`/`--resume` pick a session (Pi's `main`):
/// `--session-dir`, else `PI_CODING_AGENT_SESSION_DIR`, else the `sessionDir` setting, each with
/// `~` expanded. Relative results resolve from the cwd. Pass settings loaded as if the project
/// were trusted: Pi reads the project's `sessionDir` before it decides trust.
pub fn session_dir(
    cli: Option<&str>,
    env: Option<&str>,
    settings: &Settings,
    home: &Path,
) -> Option<String> {
    cli.filter(|s| !s.is_empty())
        .or(env.filter(|s| !s.is_empty()))
        .map(|s| normalize_path(s, home))
        .or_else(|| settings.session_dir.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    #[test]
    fn project_layer_needs_trust_but_its_errors_are_reported() {
        let tmp = TempDir::new();
        tmp.write(
            "agent/settings.json",
            r#"{"steeringMode": "all", "retry": {"maxRetries": 1}}"#,
        );
        tmp.write("work/.pi/settings.json", r#"{"retry": {"enabled": false}}"#);
        let agent = tmp.path().join("agent");
        let cwd = tmp.path().join("work");
        let s = SettingsManager::load(&cwd, &agent, true);
        assert_eq!(s.settings().steering_mode, QueueMode::All);
        assert!(!s.settings().retry.enabled);
        assert_eq!(s.settings().retry.max_retries, 1.0);
        let s = SettingsManager::load(&cwd, &agent, false);
        assert!(s.settings().retry.enabled);

        tmp.write("work/.pi/settings.json", "[1, 2");
        let mut s = SettingsManager::load(&cwd, &agent, false);
        assert_eq!(
            crate::cli::render_diagnostics(&s.take_diagnostics()),
            format!(
                "Warning: Invalid settings file {}/work/.pi/settings.json: Expected ',' or ']' after array element in JSON at position 5 (line 1 column 6)\n",
                tmp.path().display()
            )
        );
        assert!(s.take_diagnostics().is_empty());
    }

    #[test]
    fn a_reread_of_the_same_files_is_the_same_manager() {
        let tmp = TempDir::new();
        tmp.write("agent/settings.json", r#"{"steeringMode": "all"}"#);
        tmp.write("work/.pi/settings.json", r#"{"retry": {"enabled": false}}"#);
        let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
        let startup = SettingsManager::load(&cwd, &agent, true);
        let again = startup.reread(&cwd, &agent, true).unwrap();
        assert_eq!(
            format!("{again:?}"),
            format!("{:?}", SettingsManager::load(&cwd, &agent, true))
        );
        // Untrusted, another folder, or a manager that left the project out: read anew.
        assert!(startup.reread(&cwd, &agent, false).is_none());
        assert!(startup.reread(tmp.path(), &agent, true).is_none());
        let untrusted = SettingsManager::load(&cwd, &agent, false);
        assert!(untrusted.reread(&cwd, &agent, true).is_none());
    }

    #[test]
    fn setters_write_the_agent_dir_file_only() {
        // Recorded from Pi: persist/expected/project_overrides.json.
        let tmp = TempDir::new();
        tmp.write(
            "agent/settings.json",
            "{\n    \"zeta\": 1,\n    \"compaction\": {\"reserveTokens\": 1000},\n    \"steeringMode\": \"one-at-a-time\",\n    \"defaultModel\": \"x\"\n}",
        );
        let project = r#"{"steeringMode": "all", "retry": {"enabled": false}}"#;
        tmp.write("work/.pi/settings.json", project);
        let mut s =
            SettingsManager::load(&tmp.path().join("work"), &tmp.path().join("agent"), true);
        s.set_steering_mode(QueueMode::OneAtATime).unwrap();
        s.set_retry_enabled(true).unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("agent/settings.json")).unwrap(),
            "{\n  \"zeta\": 1,\n  \"compaction\": {\n    \"reserveTokens\": 1000\n  },\n  \"steeringMode\": \"one-at-a-time\",\n  \"defaultModel\": \"x\",\n  \"retry\": {\n    \"enabled\": true\n  }\n}"
        );
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("work/.pi/settings.json")).unwrap(),
            project
        );
        // The project layer still wins in the merged view.
        assert_eq!(s.settings().steering_mode, QueueMode::All);
    }

    #[test]
    fn an_unreadable_file_is_not_overwritten() {
        let tmp = TempDir::new();
        tmp.write("agent/settings.json", "{broken");
        let mut s = SettingsManager::load(tmp.path(), &tmp.path().join("agent"), true);
        s.set_steering_mode(QueueMode::All).unwrap();
        assert_eq!(s.settings().steering_mode, QueueMode::All);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("agent/settings.json")).unwrap(),
            "{broken"
        );
    }

    #[test]
    fn session_dir_precedence() {
        let home = Path::new("/h");
        let m = serde_json::json!({"sessionDir": "rel/sessions"});
        let m = m.as_object().cloned().unwrap_or_default();
        let s = Settings::from_layers(&m, &m);
        assert_eq!(
            session_dir(Some("~/a"), Some("b"), &s, home).as_deref(),
            Some("/h/a")
        );
        assert_eq!(
            session_dir(None, Some("~/b"), &s, home).as_deref(),
            Some("/h/b")
        );
        assert_eq!(
            session_dir(None, Some(""), &s, home).as_deref(),
            Some("rel/sessions")
        );
    }
}
