//! The extensions' view of the session's life: bound once the runtime exists
//! (`session_start`, `resources_discover`), told when pi quits (`session_shutdown`).

use super::HostDelegate;
use crate::runtime::{Runtime, lock};
use serde_json::json;

impl Runtime {
    /// Connects the loaded extensions to the session: their calls reach the runtime from now
    /// on, startup problems are reported, and `session_start` runs (before any command is
    /// handled, as in Pi).
    pub async fn bind_extensions(&self) {
        let pending = std::mem::take(&mut *lock(&self.core.pending_ext_errors));
        for (path, error) in pending {
            self.core.ext_error(&path, "load", &error).await;
        }
        let Some(host) = self.core.ext.host() else {
            return;
        };
        host.set_delegate(HostDelegate::new(&self.core));
        self.core
            .ext_emit("session_start", json!({ "reason": "startup" }))
            .await;
        self.core
            .ext_emit(
                "resources_discover",
                json!({ "cwd": self.core.env.cwd, "reason": "startup" }),
            )
            .await;
    }

    /// An `extension_ui_response` from the client, for the dialog with its id (unknown ids are
    /// ignored by the host, as Pi ignores them).
    pub fn extension_ui_response(&self, response: &pi_protocol::command::ExtensionUiResponse) {
        let Some(host) = self.core.ext.host() else {
            return;
        };
        if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(response) {
            host.notify("ui_response", map);
        }
    }

    /// `session_shutdown` (`reason: "quit"`), then the host ends.
    pub async fn shutdown_extensions(&self) {
        if self.core.ext.host().is_none() {
            return;
        }
        self.core
            .ext_emit("session_shutdown", json!({ "reason": "quit" }))
            .await;
        self.core.ext.kill();
    }
}
