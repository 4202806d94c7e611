//! Handing events to the extensions and reading back what their handlers composed.

use crate::runtime::{Core, lock};
use pi_ext_host::HostError;
use pi_protocol::event::SessionEvent;
use serde_json::{Map, Value, json};

/// The session's current state that the cheap synchronous getters of `ctx` answer from
/// (`ctx.model`, `ctx.isIdle()`, …); everything else the host asks for when needed.
fn ctx_state(core: &Core) -> Value {
    let (model, level) = match core.agent() {
        Some(agent) => agent.with_state(|s| (json!(s.model), json!(s.thinking_level))),
        None => (Value::Null, json!("off")),
    };
    let pending = {
        let run = lock(&core.run);
        !run.steering.is_empty() || !run.follow_up.is_empty()
    };
    let version = {
        let session = lock(&core.session);
        format!(
            "{}/{}/{}",
            session.session_id(),
            session.entry_count(),
            session.leaf_id().unwrap_or("")
        )
    };
    json!({
        "model": model,
        "thinkingLevel": level,
        "isIdle": !core.is_streaming(),
        "hasPendingMessages": pending,
        "sessionVersion": version,
    })
}

impl Core {
    /// The `ctx` state sent with every dispatch.
    pub(crate) fn ext_ctx(&self) -> Value {
        ctx_state(self)
    }

    /// Runs the handlers of `event` with `payload` (Pi's event object without `type`) and
    /// returns their composed result; `None` when no extension handles the event or the host
    /// failed (a host failure is reported once, as `extension_error`).
    pub(crate) async fn ext_emit(&self, event: &str, payload: Value) -> Option<Value> {
        if !self.ext.handles(event) {
            return None;
        }
        let host = self.ext.host()?;
        let mut params = Map::new();
        params.insert("event".into(), json!(event));
        params.insert("payload".into(), payload);
        params.insert("ctx".into(), self.ext_ctx());
        match host.request("emit", params).await {
            Ok(value) => Some(value),
            Err(HostError::Failed(error)) => {
                self.ext_error("<host>", event, &error).await;
                None
            }
            Err(HostError::Gone(_)) => None,
        }
    }

    /// Tells the host that a run started or ended (`ctx.signal`), or was aborted.
    pub(crate) fn ext_run_state(&self, kind: &str, active: Option<bool>) {
        if let Some(host) = self.ext.host() {
            let mut params = Map::new();
            if let Some(active) = active {
                params.insert("active".into(), json!(active));
            }
            host.notify(kind, params);
        }
    }

    /// Writes `{"type":"extension_error","extensionPath","event","error"}`.
    pub(crate) async fn ext_error(&self, extension_path: &str, event: &str, error: &str) {
        self.emit(SessionEvent::ExtensionError {
            extension_path: extension_path.to_string(),
            event: event.to_string(),
            error: error.to_string(),
        })
        .await;
    }
}
