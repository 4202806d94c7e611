//! Boundary events (`turn_end`, `agent_before_settle`): handlers see the session's context as
//! it stands and propose entries to append (`custom`, `custom_message`, `context_edit`,
//! `compaction`), which are appended, each reported by `entry_appended`, before the client
//! hears of the boundary.

use crate::runtime::{Core, lock};
use pi_protocol::event::SessionEvent;
use pi_session::CompactionParams;
use serde_json::{Value, json};

impl crate::runtime::Runtime {
    /// `agent_before_settle`, when the agent would settle (Pi's `_runBeforeSettleBoundary`):
    /// handlers may append entries and ask to go on. True when the agent continues (asked and
    /// able to, or queued messages wait).
    pub(crate) async fn before_settle(&self) -> bool {
        let core = &self.core;
        if !core.ext.handles("agent_before_settle") {
            return self.agent.has_queued_messages();
        }
        let outcome = lock(&core.run).last_outcome.unwrap_or("completed");
        let payload = json!({
            "outcome": outcome,
            "entries": [],
            "continue": false,
            "context": core.boundary_context(),
        });
        let result = core.ext_emit("agent_before_settle", payload).await;
        if let Some(drafts) = result
            .as_ref()
            .and_then(|r| r.get("entries"))
            .and_then(Value::as_array)
        {
            core.apply_boundary_drafts(drafts, "agent_before_settle")
                .await;
        }
        core.flush_held_custom().await;
        if lock(&core.run).abort_requested {
            return false;
        }
        let asked = result
            .as_ref()
            .and_then(|r| r.get("continue"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let queued = self.agent.has_queued_messages();
        if !(asked || queued) {
            return false;
        }
        let runnable = core.boundary_context()["canContinue"] == json!(true) || queued;
        if !runnable {
            if asked {
                core.ext_error(
                    "<boundary>",
                    "agent_before_settle",
                    "agent_before_settle requested continuation without runnable model context",
                )
                .await;
            }
            return false;
        }
        true
    }
}

impl Core {
    /// The `context` of a boundary event: the context entries and messages of the leaf, what
    /// the model would be sent, and whether a run could continue from here.
    pub(crate) fn boundary_context(&self) -> Value {
        let session = lock(&self.session);
        let entries = session.context_entries();
        let messages = session.build_context().into_owned_messages();
        let llm = crate::messages::convert_to_llm(&messages);
        let can_continue = messages
            .iter()
            .rev()
            .find(|m| m.role() != "system")
            .is_some_and(|m| m.role() != "assistant");
        json!({
            "contextEntries": entries,
            "contextMessages": messages,
            "llmMessages": llm,
            "pendingMessages": [],
            "canContinue": can_continue,
        })
    }

    /// Appends the drafts a boundary event's handlers returned, in order.
    pub(crate) async fn apply_boundary_drafts(&self, drafts: &[Value], event: &str) {
        for draft in drafts {
            let appended = {
                let mut session = lock(&self.session);
                let field = |k: &str| draft.get(k).cloned();
                let text = |k: &str| {
                    draft
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let id = match draft.get("type").and_then(Value::as_str) {
                    Some("custom") => {
                        session.append_custom_entry(&text("customType"), field("data"))
                    }
                    Some("custom_message") => {
                        let content = serde_json::from_value(field("content").unwrap_or(json!([])))
                            .unwrap_or_else(|_| {
                                pi_protocol::content::StringOrBlocks::Blocks(Vec::new())
                            });
                        session.append_custom_message_entry(
                            &text("customType"),
                            content,
                            draft
                                .get("display")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                            field("details"),
                        )
                    }
                    Some("context_edit") => {
                        session.append_context_edit(&text("targetId"), field("replacement"))
                    }
                    Some("compaction") => session.append_compaction(CompactionParams {
                        summary: text("summary"),
                        first_kept_entry_id: draft
                            .get("firstKeptEntryId")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        tokens_before: draft
                            .get("tokensBefore")
                            .and_then(Value::as_u64)
                            .unwrap_or(0),
                        details: field("details"),
                        from_hook: Some(true),
                        usage: field("usage").and_then(|u| serde_json::from_value(u).ok()),
                    }),
                    _ => continue,
                };
                id.map(|id| session.entry(&id).cloned())
            };
            match appended {
                Ok(Some(entry)) => self.emit(SessionEvent::EntryAppended { entry }).await,
                Ok(None) => {}
                Err(e) => {
                    self.ext_error(
                        "<boundary>",
                        event,
                        &format!("Invalid boundary entries: {e}"),
                    )
                    .await;
                }
            }
        }
        if !drafts.is_empty() {
            self.refresh_agent_context();
        }
    }
}
