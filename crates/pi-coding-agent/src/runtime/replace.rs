//! Commands that replace the session: `new_session`, `switch_session`, `fork`, `clone`.
//!
//! Pi builds a whole new runtime for the new session; we keep the agent and swap its state,
//! re-running the startup model selection against the new session exactly as Pi's runtime
//! factory does (so a resumed session restores its model and thinking level).

use super::startup::record_initial_selection;
use super::{Runtime, lock};
use pi_protocol::session_entry::SessionEntry;
use pi_registry::SessionModelState;
use pi_session::{ForkPosition, NewSession, SessionStore};
use std::path::Path;

/// Why the session is replaced, as extensions hear it (`session_shutdown`/`session_start`).
#[derive(Clone, Copy)]
enum Reason {
    New,
    Resume,
    Fork,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::Resume => "resume",
            Reason::Fork => "fork",
        }
    }
}

impl Runtime {
    /// Settles the active run, then makes `store` the session; extensions see the old session
    /// shut down and start again on the new one.
    async fn replace_session(&self, mut store: SessionStore, reason: Reason) {
        self.abort().await;
        let previous_file = lock(&self.core.session)
            .session_file()
            .map(|p| p.to_string_lossy().into_owned());
        let target_file = store
            .session_file()
            .map(|p| p.to_string_lossy().into_owned());
        self.ext_session_shutdown(reason.as_str(), target_file)
            .await;
        let cwd = match store.cwd() {
            c if c.as_os_str().is_empty() => self.core.cwd(),
            c => c.to_path_buf(),
        };
        let sources = self.rebind_services(&cwd).await;
        let has_thinking_entry = store
            .branch_entries(None)
            .iter()
            .any(|e| matches!(e, SessionEntry::ThinkingLevelChange(_)));
        // One context for the model state and the messages: what `record_initial_selection`
        // appends (model and thinking changes) adds no message.
        let (state, messages) = {
            let ctx = store.build_context();
            let state = SessionModelState {
                has_messages: !ctx.messages.is_empty(),
                model: ctx
                    .model
                    .as_ref()
                    .map(|m| (m.provider.clone(), m.model_id.clone())),
                thinking_level: has_thinking_entry.then(|| ctx.thinking_level.clone()),
            };
            (state, ctx.into_owned_messages())
        };
        let existing = state.has_messages;
        // The CLI's model request against the new session's settings, as Pi's new runtime
        // makes it.
        let mut request = super::startup::startup_request(&self.core.args, &self.core.settings());
        request.session = state;
        let selection = lock(&self.core.registry).select_startup(&request);
        *lock(&self.core.scoped_models) = selection.scoped_models.clone();
        for d in &selection.diagnostics {
            eprintln!("{}", d.message);
        }
        record_initial_selection(&mut store, &selection, has_thinking_entry, existing);
        let model = selection.model_or_placeholder();
        self.core.tool_session.update(|info| {
            info.session_id = Some(store.session_id().to_string());
            info.session_file = store.session_file().map(Path::to_path_buf);
            info.provider = Some(model.provider.clone());
            info.model_id = Some(model.id.clone());
            info.thinking_level = Some(selection.thinking_level.as_str().to_string());
        });
        *lock(&self.core.session) = store;
        {
            let mut run = lock(&self.core.run);
            run.steering.clear();
            run.follow_up.clear();
            run.retry_attempt = 0;
            run.last_assistant = None;
            run.last_assistant_entry = None;
            run.tool_result_entries.clear();
        }
        self.agent.clear_queues();
        self.agent.with_state(|s| {
            s.messages = messages;
            s.model = model;
            s.thinking_level = selection.thinking_level;
            s.error_message = None;
        });
        // Pi's new runtime starts with the default tools, then takes the loadout the session's
        // transcript recorded.
        let mut names = self.core.default_tools.get().cloned().unwrap_or_default();
        let defaults = match self.core.args.no_tools {
            true => Vec::new(),
            false => self.core.tools.extension_defaults(),
        };
        for name in defaults {
            if !names.contains(&name) && self.core.tools.is_allowed(&name) {
                names.push(name);
            }
        }
        self.set_active_tools_by_name(&names);
        self.restore_tools_from_transcript(true);
        self.ext_session_restart(reason.as_str(), previous_file, &sources)
            .await;
    }

    /// `new_session`: a fresh session in the same directory (in memory stays in memory).
    /// `Ok(true)` when an extension cancelled it.
    pub async fn new_session(&self, parent_session: Option<String>) -> Result<bool, String> {
        if self.ext_before_switch("new", None).await {
            return Ok(true);
        }
        let (cwd, dir, persisted) = {
            let s = lock(&self.core.session);
            (
                s.cwd().to_path_buf(),
                s.session_dir().map(Path::to_path_buf),
                s.is_persisted(),
            )
        };
        let options = NewSession {
            id: None,
            parent_session,
        };
        let store = match dir {
            Some(dir) if persisted => SessionStore::create(&cwd, &dir, options),
            _ => SessionStore::in_memory(&cwd, options),
        }
        .map_err(|e| e.to_string())?;
        self.replace_session(store, Reason::New).await;
        Ok(false)
    }

    /// `switch_session`: opens another file (a missing one becomes a new session bound to it).
    /// `Ok(true)` when an extension cancelled it.
    pub async fn switch_session(&self, session_path: &str) -> Result<bool, String> {
        let path =
            pi_session::paths::resolve_path(session_path, &self.core.env.cwd, &self.core.env.home);
        let target = path.to_string_lossy().into_owned();
        if self.ext_before_switch("resume", Some(&target)).await {
            return Ok(true);
        }
        let store = SessionStore::open(&path, None, None).map_err(|e| e.to_string())?;
        let session_cwd = store.cwd().to_path_buf();
        if store.session_file().is_some()
            && !session_cwd.as_os_str().is_empty()
            && !session_cwd.exists()
        {
            let file = store
                .session_file()
                .map(|f| format!("\nSession file: {}", f.display()))
                .unwrap_or_default();
            return Err(format!(
                "Stored session working directory does not exist: {}{file}\nCurrent working directory: {}",
                session_cwd.display(),
                self.core.cwd().display()
            ));
        }
        self.replace_session(store, Reason::Resume).await;
        Ok(false)
    }

    /// `fork`: a new session ending just before the given user message; returns its text, or
    /// `None` with `true` when an extension cancelled the fork.
    pub async fn fork(&self, entry_id: &str) -> Result<(Option<String>, bool), String> {
        if self.ext_before_fork(entry_id, "before").await {
            return Ok((None, true));
        }
        let forked = lock(&self.core.session)
            .fork(entry_id, ForkPosition::Before)
            .map_err(|e| e.to_string())?;
        self.replace_session(forked.store, Reason::Fork).await;
        Ok((forked.selected_text, false))
    }

    /// `clone`: a new session holding the current branch up to the leaf. `Ok(true)` when an
    /// extension cancelled it.
    pub async fn clone_session(&self) -> Result<bool, String> {
        let leaf = lock(&self.core.session).leaf_id().map(str::to_string);
        if let Some(leaf) = leaf
            && self.ext_before_fork(&leaf, "at").await
        {
            return Ok(true);
        }
        let forked = lock(&self.core.session)
            .clone_session()
            .map_err(|e| e.to_string())?;
        self.replace_session(forked.store, Reason::Fork).await;
        Ok(false)
    }
}
