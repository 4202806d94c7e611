//! Settings: `<agentDir>/settings.json` and the project's `.pi/settings.json`, merged as Pi 1.6.0
//! merges them, every documented key typed with Pi's defaults, and the single-key writes of the
//! RPC commands.
//!
//! * [`SettingsManager::load`] reads both layers (the project one only when trusted, see
//!   `resources::trust`), reports unreadable files as Pi's startup warnings, and gives the typed
//!   [`Settings`].
//! * `set_steering_mode`, `set_follow_up_mode`, `set_compaction_enabled`, `set_retry_enabled`
//!   write one key to the agent-dir file, keeping the rest of it.
//! * [`paths`]: the agent dir (`PI_CODING_AGENT_DIR`, `~/.pi/agent`) and Node-style path rules.
//!
//! Files: `paths.rs`, `merge.rs` (layer merge, migrations, `defaultTools`), `file.rs` (read and
//! write one file), `lock.rs` (the lock Pi shares), `model.rs` (typed view), `manager.rs`.

pub mod file;
pub mod lock;
pub mod manager;
pub mod merge;
pub mod model;
pub mod paths;

pub use manager::{SettingsManager, session_dir};
pub use model::{CompactionSettings, DefaultProjectTrust, RetrySettings, Settings};
