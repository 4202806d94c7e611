//! `ctx.navigateTree(targetId, options)` (Pi's `AgentSession.navigateTree`): the session's leaf
//! moves to another entry of its tree, optionally leaving a summary of the branch it leaves
//! (`session_before_tree` may cancel, supply the summary or change the instructions;
//! `session_tree` reports the result).

use crate::compaction::SummarizeError;
use crate::runtime::{Runtime, lock};
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::SessionEntry;
use pi_session::BranchSummaryParams;
use serde_json::{Value, json};

/// What the branch summary is, once decided.
struct Summary {
    text: String,
    details: Option<Value>,
    usage: Option<pi_protocol::usage::Usage>,
    from_extension: bool,
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

impl Runtime {
    pub(crate) async fn ext_navigate_tree(&self, params: &Value) -> Result<Value, String> {
        let core = &self.core;
        if core.is_streaming() {
            return Err(
                "Wait for the current response to finish before navigating the session tree."
                    .into(),
            );
        }
        let compacting = {
            let run = lock(&core.run);
            run.compacting || run.auto_compacting
        };
        if compacting {
            return Err("Wait for the current compaction or tree navigation to finish before navigating the session tree.".into());
        }
        let target = params
            .get("targetId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let summarize = params.get("summarize").and_then(Value::as_bool) == Some(true);
        let old_leaf = lock(&core.session).leaf_id().map(str::to_string);
        if old_leaf.as_deref() == Some(target.as_str()) {
            return Ok(json!({ "cancelled": false }));
        }
        if summarize && core.current_model().is_none() {
            return Err("No model available for summarization".into());
        }
        let (target_entry, entries, common) = {
            let session = lock(&core.session);
            let Some(entry) = session.entry(&target).cloned() else {
                return Err(format!("Entry {target} not found"));
            };
            let (entries, common) =
                crate::compaction::branch::collect_entries(&session, old_leaf.as_deref(), &target);
            (entry, entries, common)
        };
        let mut custom = opt_str(params, "customInstructions");
        let mut replace = params.get("replaceInstructions").cloned();
        let mut label = opt_str(params, "label");

        let cancel = core.begin_compaction(false);
        let outcome = self
            .navigate(
                &target,
                &target_entry,
                &entries,
                common,
                old_leaf.clone(),
                summarize,
                (&mut custom, &mut replace, &mut label),
                &cancel,
            )
            .await;
        if let Some(done) = core.end_compaction(false) {
            done.cancel();
        }
        let summary_entry = match outcome? {
            Navigation::Cancelled { aborted } => {
                let mut answer = json!({ "cancelled": true });
                if aborted {
                    answer["aborted"] = json!(true);
                }
                return Ok(answer);
            }
            Navigation::Done(summary) => summary,
        };
        let new_leaf = lock(&core.session).leaf_id().map(str::to_string);
        let mut payload = json!({ "newLeafId": new_leaf, "oldLeafId": old_leaf });
        if let Some((entry, from_extension)) = summary_entry {
            payload["summaryEntry"] = serde_json::to_value(entry).unwrap_or(Value::Null);
            payload["fromExtension"] = json!(from_extension);
        }
        core.ext_emit("session_tree", payload).await;
        Ok(json!({ "cancelled": false }))
    }

    #[allow(clippy::too_many_arguments)]
    async fn navigate(
        &self,
        target: &str,
        target_entry: &SessionEntry,
        entries: &[SessionEntry],
        common: Option<String>,
        old_leaf: Option<String>,
        summarize: bool,
        (custom, replace, label): (&mut Option<String>, &mut Option<Value>, &mut Option<String>),
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Navigation, String> {
        let core = &self.core;
        let mut summary: Option<Summary> = None;
        if core.ext.handles("session_before_tree") {
            let mut preparation = json!({
                "targetId": target,
                "oldLeafId": old_leaf,
                "commonAncestorId": common,
                "entriesToSummarize": entries,
                "userWantsSummary": summarize,
            });
            if let Some(c) = custom.as_ref() {
                preparation["customInstructions"] = json!(c);
            }
            if let Some(r) = replace.as_ref() {
                preparation["replaceInstructions"] = r.clone();
            }
            if let Some(l) = label.as_ref() {
                preparation["label"] = json!(l);
            }
            let result = core
                .ext_emit("session_before_tree", json!({ "preparation": preparation }))
                .await
                .unwrap_or(Value::Null);
            if result.get("cancel").and_then(Value::as_bool) == Some(true) {
                return Ok(Navigation::Cancelled { aborted: false });
            }
            if summarize && let Some(s) = result.get("summary").filter(|s| s.is_object()) {
                summary = Some(Summary {
                    text: opt_str(s, "summary").unwrap_or_default(),
                    details: s.get("details").cloned(),
                    usage: s
                        .get("usage")
                        .cloned()
                        .and_then(|u| serde_json::from_value(u).ok()),
                    from_extension: true,
                });
            }
            if let Some(c) = result.get("customInstructions") {
                *custom = c.as_str().map(str::to_string);
            }
            if let Some(r) = result.get("replaceInstructions") {
                *replace = Some(r.clone());
            }
            if let Some(l) = result.get("label") {
                *label = l.as_str().map(str::to_string);
            }
        }
        if summarize && !entries.is_empty() && summary.is_none() {
            let replace = replace.as_ref().is_some_and(pi_js::value::truthy);
            match core
                .summarize_branch(entries, custom.as_deref(), replace, cancel)
                .await
            {
                Err(SummarizeError::Cancelled) => {
                    return Ok(Navigation::Cancelled { aborted: true });
                }
                Err(SummarizeError::Failed(m)) => return Err(m),
                Ok((text, usage, lists)) => {
                    summary = Some(Summary {
                        text,
                        details: serde_json::to_value(lists).ok(),
                        usage,
                        from_extension: false,
                    })
                }
            }
        }
        // A user or custom message is edited again: the leaf goes to its parent.
        let new_leaf = match target_entry {
            SessionEntry::Message(m) if matches!(*m.message, AgentMessage::User(_)) => {
                target_entry.parent_id().map(str::to_string)
            }
            SessionEntry::CustomMessage(_) => target_entry.parent_id().map(str::to_string),
            _ => Some(target.to_string()),
        };
        let appended = {
            let mut session = lock(&core.session);
            let result = match summary.filter(|s| !s.text.is_empty()) {
                Some(s) => session
                    .branch_with_summary(
                        new_leaf.as_deref(),
                        BranchSummaryParams {
                            summary: s.text,
                            details: s.details,
                            from_hook: Some(s.from_extension),
                            usage: s.usage,
                        },
                    )
                    .and_then(|id| {
                        if let Some(l) = label.as_deref() {
                            session.append_label_change(&id, Some(l))?;
                        }
                        Ok(session.entry(&id).cloned().map(|e| (e, s.from_extension)))
                    }),
                None => {
                    let moved = match new_leaf.as_deref() {
                        None => {
                            session.reset_leaf();
                            Ok(())
                        }
                        Some(id) => session.branch(id),
                    };
                    moved.and_then(|()| {
                        if let Some(l) = label.as_deref() {
                            session.append_label_change(target, Some(l))?;
                        }
                        Ok(None)
                    })
                }
            };
            result.map_err(|e| e.to_string())?
        };
        core.refresh_agent_context();
        self.restore_tools_from_transcript(false);
        Ok(Navigation::Done(appended))
    }
}

enum Navigation {
    Cancelled {
        aborted: bool,
    },
    /// The summary entry appended, and whether an extension wrote it.
    Done(Option<(SessionEntry, bool)>),
}
