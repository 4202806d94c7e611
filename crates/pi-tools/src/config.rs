//! What the tools need to know about their session: the cwd, the agent dir, the shell settings,
//! the image settings and the live session facts the bash tool exports (`PI_SESSION_ID`, ...).

use crate::image::ResizeLimits;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// Facts about the session that change while it runs (model switches, new sessions). The bash
/// tool exports them to its commands; `read` uses the model's image support and limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub session_id: Option<String>,
    /// Only for persisted sessions.
    pub session_file: Option<PathBuf>,
    pub provider: Option<String>,
    pub model_id: Option<String>,
    /// The thinking level (`off`, `low`, ...).
    pub thinking_level: Option<String>,
    /// Whether the current model takes image input; `None` when no model is known.
    pub model_accepts_images: Option<bool>,
    /// The model's `inputLimits.images.resize`, overriding the default image limits.
    pub image_limits: Option<ResizeLimits>,
}

/// A shared, updatable [`SessionInfo`]: the session runtime writes, the tools read per call.
#[derive(Debug, Clone, Default)]
pub struct SessionHandle(Arc<RwLock<SessionInfo>>);

impl SessionHandle {
    pub fn new(info: SessionInfo) -> SessionHandle {
        SessionHandle(Arc::new(RwLock::new(info)))
    }

    /// A copy of the current facts.
    pub fn get(&self) -> SessionInfo {
        match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn update(&self, change: impl FnOnce(&mut SessionInfo)) {
        match self.0.write() {
            Ok(mut guard) => change(&mut guard),
            Err(poisoned) => change(&mut poisoned.into_inner()),
        }
    }
}

/// Settings and context shared by every tool of a session.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// The session cwd: relative paths resolve here and commands run here.
    pub cwd: PathBuf,
    /// `~/.pi/agent` or `PI_CODING_AGENT_DIR`; `<agent_dir>/bin` is prepended to `PATH`.
    pub agent_dir: PathBuf,
    /// The `shellPath` setting.
    pub shell_path: Option<PathBuf>,
    /// The `shellCommandPrefix` setting, prepended to every command with a newline.
    pub shell_command_prefix: Option<String>,
    /// The `images.autoResize` setting.
    pub auto_resize_images: bool,
    /// The environment commands start from; `None` means this process's environment.
    pub base_env: Option<Vec<(OsString, OsString)>>,
    /// `base_env` already carries the session variables the command should see (an
    /// extension's bash `spawnHook` built it): they are neither removed nor set again.
    pub base_env_is_final: bool,
    pub session: SessionHandle,
    /// The I/O of read, write, edit and bash goes here instead of this machine (an extension's
    /// custom `operations`).
    pub operations: Option<std::sync::Arc<dyn crate::operations::ToolOperations>>,
}

impl ToolsConfig {
    pub fn new(cwd: impl Into<PathBuf>, agent_dir: impl Into<PathBuf>) -> ToolsConfig {
        ToolsConfig {
            cwd: cwd.into(),
            agent_dir: agent_dir.into(),
            shell_path: None,
            shell_command_prefix: None,
            auto_resize_images: true,
            base_env: None,
            base_env_is_final: false,
            operations: None,
            session: SessionHandle::default(),
        }
    }

    pub fn bin_dir(&self) -> PathBuf {
        self.agent_dir.join("bin")
    }
}
