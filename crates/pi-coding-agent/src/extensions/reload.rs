//! `ctx.reload()`: settings, resources (skills, prompt templates, context files) and the
//! extensions themselves are read again, as Pi's `AgentSession.reload` does: the old
//! extensions hear `session_shutdown` (`reload`), their modules are imported anew, and the new
//! instances get `session_start` and `resources_discover` (`reload`).

use crate::runtime::{Runtime, lock};
use serde_json::json;

impl Runtime {
    pub(crate) async fn ext_reload(&self) -> Result<(), String> {
        if self.core.is_streaming() {
            return Err("Wait for the current response to finish before reloading.".into());
        }
        let compacting = {
            let run = lock(&self.core.run);
            run.compacting || run.auto_compacting
        };
        if compacting {
            return Err("Wait for compaction to finish before reloading.".into());
        }
        let Some(host) = self.core.ext.host() else {
            return Ok(());
        };
        self.ext_session_shutdown("reload", None).await;
        host.notify("invalidate", serde_json::Map::new());

        let env = &self.core.env;
        let cwd = self.core.cwd();
        let (res, diagnostics) = self.read_resources(&self.core.args, &cwd);
        // Pi writes a replacement runtime's diagnostics to stderr and goes on.
        for d in &diagnostics {
            eprintln!("{d}");
        }
        for (path, error) in &res.missing_extensions {
            eprintln!("Error: Failed to load extension \"{path}\": {error}");
        }
        for (path, warning) in &res.package_warnings {
            eprintln!("Warning: Extension package \"{path}\": {warning}");
        }
        let sources = res.extensions.clone();
        *lock(&self.core.res) = res;

        let params = super::load::init_params(&sources, &self.core.args, &cwd, &env.agent_dir);
        match host.request("reload", params).await {
            Ok(value) => self.apply_registrations(value, Some(&sources)),
            Err(e) => {
                self.core
                    .ext_error("<host>", "reload", &e.to_string())
                    .await;
                return Ok(());
            }
        }
        self.core
            .ext_emit("session_start", json!({ "reason": "reload" }))
            .await;
        self.core.ext_resources_discover("reload").await;
        Ok(())
    }
}
