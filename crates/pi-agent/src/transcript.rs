//! Tool declarations carried by the transcript's system messages.
//!
//! What the model may call is whatever the system messages declare, replayed in order
//! (`toolsAdded` then `toolsRemoved`); what the runtime can execute is the agent's tool set.
//! Before a request the difference is declared on a system message, so replaying the
//! transcript always yields exactly the executable set.

use pi_js::json::to_js_string;
use pi_protocol::SharedMessage;
use pi_protocol::message::{AgentMessage, SystemMessage};
use pi_protocol::tool::{Tool, ToolReference};
use std::cell::OnceCell;
use std::sync::Arc;

/// The tools declared after replaying every system message of `messages`, in declaration order
/// (the replay is pi-ai's, which requests use).
pub fn current_tools<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> Vec<&'a Tool> {
    pi_ai::transcript::current_tools(messages.into_iter().filter_map(|m| match m {
        AgentMessage::System(s) => Some(s),
        _ => None,
    }))
}

/// The serialized form declarations compare by, as Pi's do. A tool with nothing beyond its
/// declaration (every tool built in Rust) is written as it is, without a copy.
fn declaration_text(tool: &Tool) -> Option<String> {
    if tool.rest.is_canonical() {
        to_js_string(tool).ok()
    } else {
        to_js_string(&declaration(tool)).ok()
    }
}

/// Whether two tools' declarations are surely written alike, told without writing them: the
/// same description and constrained sampling (typed, so equal ones are written alike), and the
/// very same schema or one with the same keys in the same order and equal values. `false` is
/// not "different": numbers written alike from different representations (`1` and `1.0`) are
/// left to the written text.
fn same_declaration(a: &Tool, b: &Tool) -> bool {
    a.description == b.description
        && a.constrained_sampling == b.constrained_sampling
        && (Arc::ptr_eq(&a.parameters, &b.parameters)
            || written_alike(&a.parameters, &b.parameters))
}

/// `a` and `b` are equal and their objects' keys come in the same order, so any JSON writer
/// (whatever key order it imposes on what it is given) writes them alike.
fn written_alike(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && written_alike(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| written_alike(a, b))
        }
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => false,
        (a, b) => a == b,
    }
}

/// A tool as the transcript records it: name, description, parameters, constrained sampling.
pub fn declaration(tool: &Tool) -> Tool {
    Tool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        parameters: tool.parameters.clone(),
        constrained_sampling: tool.constrained_sampling.clone(),
        rest: Default::default(),
    }
}

/// `(added, removed)` turning `previous` into `current`; a changed definition is both.
pub fn tool_changes(previous: &[&Tool], current: &[Tool]) -> (Vec<Tool>, Vec<ToolReference>) {
    // This runs before every request. A tool declared by this process shares its schema with
    // the executable one, and one read back from a session file has the same keys in the same
    // order, so most pairs are equal without writing either; the others are serialized at most
    // once each.
    let previous_text: Vec<OnceCell<Option<String>>> =
        previous.iter().map(|_| OnceCell::new()).collect();
    let current_text: Vec<OnceCell<Option<String>>> =
        current.iter().map(|_| OnceCell::new()).collect();
    let same = |p: usize, c: usize| {
        let (old, new) = (previous[p], &current[c]);
        old.name == new.name
            && (same_declaration(old, new)
                || previous_text[p].get_or_init(|| declaration_text(old))
                    == current_text[c].get_or_init(|| declaration_text(new)))
    };
    let added = (0..current.len())
        .filter(|&c| !(0..previous.len()).any(|p| same(p, c)))
        .map(|c| declaration(&current[c]))
        .collect();
    let removed = (0..previous.len())
        .filter(|&p| !(0..current.len()).any(|c| same(p, c)))
        .map(|p| &previous[p])
        .map(|p| ToolReference {
            name: p.name.clone(),
            rest: Default::default(),
        })
        .collect();
    (added, removed)
}

fn with_changes(
    mut message: SystemMessage,
    added: Vec<Tool>,
    removed: Vec<ToolReference>,
) -> SystemMessage {
    message.tools_added = (!added.is_empty()).then_some(added);
    message.tools_removed = (!removed.is_empty()).then_some(removed);
    // Pi rebuilds the message with the tool lists after its other keys (`timestamp` first).
    message.rest.set_order(pi_protocol::record::KeyOrder::Fixed(
        SystemMessage::RUN_START_ORDER,
    ));
    message
}

/// Declares the difference between the transcript's tools and `executable` on the pending
/// messages: on the last pending system message if there is one (its tool fields are treated as
/// intent and replaced by the real delta), else on a new system message inserted before the
/// first non-system pending message. Returns `pending` unchanged when nothing differs.
pub fn declare_tool_changes(
    context: &[SharedMessage],
    mut pending: Vec<AgentMessage>,
    executable: &[Tool],
    now_ms: u64,
) -> Vec<AgentMessage> {
    let system_index = pending
        .iter()
        .rposition(|m| matches!(m, AgentMessage::System(_)));
    let baseline: Vec<AgentMessage> = pending
        .iter()
        .enumerate()
        .map(|(i, m)| match (Some(i) == system_index, m) {
            (true, AgentMessage::System(s)) => {
                AgentMessage::System(with_changes(s.clone(), Vec::new(), Vec::new()))
            }
            _ => m.clone(),
        })
        .collect();
    let declared = current_tools(context.iter().map(|m| &**m).chain(baseline.iter()));
    let (added, removed) = tool_changes(&declared, executable);
    let unchanged = added.is_empty() && removed.is_empty();
    if let Some(index) = system_index {
        if let AgentMessage::System(existing) = &pending[index] {
            let declares_nothing = existing.tools_added.as_ref().is_none_or(Vec::is_empty)
                && existing.tools_removed.as_ref().is_none_or(Vec::is_empty);
            if unchanged && declares_nothing {
                return pending;
            }
            let patched = with_changes(existing.clone(), added, removed);
            let mut out = baseline;
            out[index] = AgentMessage::System(patched);
            return out;
        }
        return pending;
    }
    if unchanged {
        return pending;
    }
    let update = with_changes(
        SystemMessage {
            content: pi_protocol::content::SystemContent::text(""),
            sections: None,
            tools_added: None,
            tools_removed: None,
            timestamp: now_ms,
            // Pi writes a run's system messages with `timestamp` before the tool lists.
            rest: pi_protocol::record::Rest::with_order(SystemMessage::RUN_START_ORDER),
        },
        added,
        removed,
    );
    let at = pending
        .iter()
        .position(|m| !matches!(m, AgentMessage::System(_)))
        .unwrap_or(pending.len());
    pending.insert(at, AgentMessage::System(update));
    pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::tool::{ConstrainedSampling, ConstrainedSamplingConfig, SchemaStrictness};
    use serde_json::json;

    fn tool(name: &str, description: &str, parameters: Arc<serde_json::Value>) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters,
            constrained_sampling: None,
            rest: Default::default(),
        }
    }

    fn names(changes: &(Vec<Tool>, Vec<ToolReference>)) -> (Vec<&str>, Vec<&str>) {
        (
            changes.0.iter().map(|t| t.name.as_str()).collect(),
            changes.1.iter().map(|t| t.name.as_str()).collect(),
        )
    }

    #[test]
    fn changes_are_told_by_what_is_written() {
        let schema =
            Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}}));
        let read = tool("read", "Reads.", schema.clone());
        // The same schema shared, and an equal one parsed apart (a resumed session): unchanged.
        let apart = tool("read", "Reads.", Arc::new((*schema).clone()));
        assert_eq!(
            names(&tool_changes(&[&read], std::slice::from_ref(&read))),
            (vec![], vec![])
        );
        assert_eq!(
            names(&tool_changes(&[&apart], std::slice::from_ref(&read))),
            (vec![], vec![])
        );
        // Another description, or the schema's keys in another order: removed and added.
        let described = tool("read", "Reads a file.", schema.clone());
        assert_eq!(
            names(&tool_changes(&[&read], &[described])),
            (vec!["read"], vec!["read"])
        );
        let reordered = tool(
            "read",
            "Reads.",
            Arc::new(json!({"properties": {"path": {"type": "string"}}, "type": "object"})),
        );
        assert_eq!(
            names(&tool_changes(&[&read], &[reordered])),
            (vec!["read"], vec!["read"])
        );
        // Constrained sampling (as every strict built-in has) equal, or not.
        let strict = |t: &Tool, strict| Tool {
            constrained_sampling: Some(ConstrainedSampling::Config(
                ConstrainedSamplingConfig::JsonSchema { strict },
            )),
            ..t.clone()
        };
        let prefer = strict(&read, SchemaStrictness::Prefer);
        assert!(same_declaration(
            &strict(&apart, SchemaStrictness::Prefer),
            &prefer
        ));
        assert_eq!(
            names(&tool_changes(
                &[&strict(&apart, SchemaStrictness::Prefer)],
                std::slice::from_ref(&prefer)
            )),
            (vec![], vec![])
        );
        assert_eq!(
            names(&tool_changes(&[&read], std::slice::from_ref(&prefer))),
            (vec!["read"], vec!["read"])
        );
        assert_eq!(
            names(&tool_changes(
                &[&strict(&read, SchemaStrictness::Require)],
                std::slice::from_ref(&prefer)
            )),
            (vec!["read"], vec!["read"])
        );
        // Numbers written alike from other representations are told by their text.
        let int = tool("read", "Reads.", Arc::new(json!({"maxItems": 1})));
        let float = tool("read", "Reads.", Arc::new(json!({"maxItems": 1.0})));
        assert!(!same_declaration(&int, &float));
        assert_eq!(
            names(&tool_changes(&[&int], std::slice::from_ref(&float))),
            (vec![], vec![])
        );
        let two = tool("read", "Reads.", Arc::new(json!({"maxItems": 2})));
        assert_eq!(
            names(&tool_changes(&[&int], &[two])),
            (vec!["read"], vec!["read"])
        );
        // A new tool and a tool gone.
        let ls = tool("ls", "Lists.", schema);
        assert_eq!(
            names(&tool_changes(&[&read], &[ls])),
            (vec!["ls"], vec!["read"])
        );
    }
}
