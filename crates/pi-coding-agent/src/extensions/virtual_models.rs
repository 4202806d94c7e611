//! Routing a virtual model (`pi.registerVirtualModel`) for one request, as Pi's
//! `prepareRequest` does: the extension's router (in the host) sees the request and the state it
//! stored on the session branch, names a physical model and thinking level, and may store new
//! state (a `pi.virtual-model-state` custom entry, reported by `entry_appended`).

use crate::runtime::{Core, lock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::session_entry::SessionEntry;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::StopReason;
use serde_json::{Map, Value, json};

/// The custom entry type a router's state is stored under.
const STATE_ENTRY: &str = "pi.virtual-model-state";

/// Why a request is routed (`ModelRouteRequest.reason`).
#[derive(Clone, Copy)]
pub(crate) enum RouteReason {
    /// A user message started this turn.
    User,
    /// A later request of the same run (after tool results).
    Continuation,
    /// The request retries a failed response.
    Retry,
    /// A request outside the agent loop (compaction and branch summaries).
    Direct,
}

impl RouteReason {
    fn as_str(self) -> &'static str {
        match self {
            RouteReason::User => "user",
            RouteReason::Continuation => "continuation",
            RouteReason::Retry => "retry",
            RouteReason::Direct => "direct",
        }
    }

    /// For a request of the agent loop: a user message after the last response starts a turn.
    pub(crate) fn of_context(
        context: &[pi_protocol::SharedMessage],
        retrying: bool,
    ) -> RouteReason {
        if retrying {
            return RouteReason::Retry;
        }
        let last_response = context.iter().rposition(|m| m.role() == "assistant");
        let after = last_response.map_or(0, |i| i + 1);
        if context[after..].iter().any(|m| m.role() == "user") {
            RouteReason::User
        } else {
            RouteReason::Continuation
        }
    }
}

impl Core {
    /// The router's state for `model` on the current branch (the latest state entry).
    fn virtual_state(&self, model: &Model) -> Option<Value> {
        let session = lock(&self.session);
        session
            .branch_entries(None)
            .iter()
            .rev()
            .find_map(|e| match e {
                SessionEntry::Custom(c) if c.custom_type == STATE_ENTRY => {
                    let data = c.data.as_ref()?;
                    let ours = data.get("provider").and_then(Value::as_str)
                        == Some(&model.provider)
                        && data.get("modelId").and_then(Value::as_str) == Some(&model.id);
                    ours.then(|| data.get("state").cloned().unwrap_or(Value::Null))
                }
                _ => None,
            })
    }

    /// [`Self::route_virtual`] for a request outside the agent loop (compaction, branch
    /// summaries).
    pub(crate) async fn route_virtual_direct(
        &self,
        model: &Model,
        reasoning: Option<ThinkingLevel>,
        context: &[pi_protocol::SharedMessage],
    ) -> Result<(Model, Option<ThinkingLevel>), String> {
        self.route_virtual(model, reasoning, context, RouteReason::Direct)
            .await
    }

    /// Routes one request for the virtual `model`: the physical model and thinking level, or
    /// the text the response fails with.
    pub(crate) async fn route_virtual(
        &self,
        model: &Model,
        reasoning: Option<ThinkingLevel>,
        context: &[pi_protocol::SharedMessage],
        reason: RouteReason,
    ) -> Result<(Model, Option<ThinkingLevel>), String> {
        let name = format!("Virtual model {}/{}", model.provider, model.id);
        let Some(host) = self.ext.host() else {
            return Err(format!("{name} is not registered."));
        };
        let state = self.virtual_state(model);
        let level = reasoning.unwrap_or(ThinkingLevel::Off);
        let llm = crate::messages::convert_to_llm(context);
        let mut request = json!({
            "reason": reason.as_str(),
            "thinkingLevel": level,
            "model": model,
            "messages": llm,
        });
        // The latest successful response names the model the router chose last time.
        let latest = context.iter().rev().find_map(|m| match &**m {
            AgentMessage::Assistant(a)
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
            {
                Some(a)
            }
            _ => None,
        });
        if let Some(a) = latest {
            let physical = lock(&self.registry).find_physical(&a.provider, &a.model);
            if let Some(previous) = physical {
                let mut p = json!({ "model": &*previous });
                if let Some(l) = a.thinking_level {
                    p["thinkingLevel"] = json!(l);
                }
                request["previous"] = p;
            }
        }
        if let Some(s) = &state {
            request["state"] = s.clone();
        }
        let mut params = Map::new();
        params.insert("provider".into(), json!(model.provider));
        params.insert("modelId".into(), json!(model.id));
        params.insert("request".into(), request);
        params.insert("ctx".into(), self.ext_ctx());
        let answer = host
            .request("route_model", params)
            .await
            .map_err(|e| e.to_string())?;
        let text = |k: &str| {
            answer
                .get("model")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let target = lock(&self.registry).resolve_route(model, &text("provider"), &text("id"))?;
        let asked = answer
            .get("thinkingLevel")
            .cloned()
            .and_then(|l| serde_json::from_value::<ThinkingLevel>(l).ok())
            .unwrap_or(ThinkingLevel::Off);
        let clamped = pi_registry::clamp_thinking(&target, asked);
        if let Some(new_state) = answer.get("state")
            && Some(new_state) != state.as_ref()
        {
            self.store_route_state(model, new_state.clone()).await;
        }
        let reasoning = (clamped != ThinkingLevel::Off).then_some(clamped);
        Ok(((*target).clone(), reasoning))
    }

    async fn store_route_state(&self, model: &Model, state: Value) {
        let data = json!({ "provider": model.provider, "modelId": model.id, "state": state });
        let entry = {
            let mut session = lock(&self.session);
            session
                .append_custom_entry(STATE_ENTRY, Some(data))
                .ok()
                .and_then(|id| session.entry(&id).cloned())
        };
        if let Some(entry) = entry {
            self.emit(SessionEvent::EntryAppended { entry }).await;
        }
    }
}
