//! Tool approvals (an addition, not Pi's): a policy of `allow`, `deny` or `ask` per tool name or
//! pattern, set in settings (`toolApprovals`) or by `set_tool_approvals`, applied after the
//! extensions' `tool_call` gate (so it judges the arguments the tool will really get).
//!
//! `ask` rides on the extension UI sub-protocol: a `confirm` dialog with a `timeout`, so any
//! client that renders extension dialogs can approve without knowing about approvals. It never
//! hangs a headless host: no answer within the timeout denies, an abort denies, and without a
//! client (`--mode json`, `-p`) it denies at once. A denial is the tool call's error result;
//! every decision other than a plain `allow` is recorded as a `custom` session entry
//! (`customType: "tool_approval"`), which its `entry_appended` event shows to the client.

use super::{Core, lock};
use crate::settings::model::Settings;
use pi_agent::ToolCallGate;
use pi_protocol::additions::{
    APPROVAL_CUSTOM_TYPE, ApprovalAction, ApprovalDecision, ApprovalReason, ApprovalSubject,
    ToolApprovalPolicy, ToolApprovalRecord,
};
use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::content::ToolCall;
use pi_protocol::event::SessionEvent;
use pi_protocol::extension_ui::{ExtensionUiRequest, UiRequest};
use pi_protocol::record::OrderedMap;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long `ask` waits for the client when no `timeoutMs` is configured.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// The policy in force and the approval dialogs waiting for an answer.
#[derive(Default)]
pub(crate) struct Approvals {
    policy: Mutex<Policy>,
    pending: Mutex<HashMap<String, oneshot::Sender<ExtensionUiResponse>>>,
}

#[derive(Debug, Clone)]
struct Policy {
    rules: OrderedMap<ApprovalAction>,
    /// The user's own rules when a project layer added to them: a decision is never looser
    /// than theirs. Cleared by `set_tool_approvals` (the client decides then).
    floor: Option<OrderedMap<ApprovalAction>>,
    timeout_ms: u64,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            rules: OrderedMap::new(),
            floor: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}

impl Approvals {
    /// The policy of the settings; problems with it come back as warnings (the rest applies).
    pub fn from_settings(settings: &Settings) -> (Approvals, Vec<String>) {
        let mut warnings = Vec::new();
        let mut policy = Policy::default();
        if let Some(value) = &settings.tool_approvals {
            let (rules, timeout) = parse_policy(value, &mut warnings);
            policy.rules = rules;
            policy.timeout_ms = timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        }
        if let Some(user) = &settings.tool_approvals_user
            && settings.tool_approvals.as_ref() != Some(user)
        {
            policy.floor = Some(parse_policy(user, &mut Vec::new()).0);
        }
        let approvals = Approvals {
            policy: Mutex::new(policy),
            pending: Mutex::default(),
        };
        (approvals, warnings)
    }

    /// `get_tool_approvals`.
    pub fn policy(&self) -> ToolApprovalPolicy {
        let policy = lock(&self.policy);
        ToolApprovalPolicy {
            rules: policy.rules.clone(),
            timeout_ms: policy.timeout_ms,
        }
    }

    /// `set_tool_approvals`: replaces the whole policy.
    pub fn set(
        &self,
        rules: OrderedMap<ApprovalAction>,
        timeout_ms: Option<u64>,
    ) -> Result<ToolApprovalPolicy, String> {
        if rules.iter().any(|(pattern, _)| pattern.is_empty()) {
            return Err("Tool approval rules need a non-empty tool name or pattern".into());
        }
        *lock(&self.policy) = Policy {
            rules,
            floor: None,
            timeout_ms: timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
        };
        Ok(self.policy())
    }

    /// The action for `tool`, the rule that gave it (`*` when none matched) and the timeout.
    fn decide(&self, tool: &str) -> (ApprovalAction, String, u64) {
        let policy = lock(&self.policy);
        let (mut rule, mut action) = pick(&policy.rules, tool)
            .map(|(r, a)| (r.to_string(), a))
            .unwrap_or_else(|| ("*".into(), ApprovalAction::Allow));
        if let Some((floor_rule, floor_action)) = policy.floor.as_ref().and_then(|f| pick(f, tool))
            && strictness(floor_action) > strictness(action)
        {
            (rule, action) = (floor_rule.to_string(), floor_action);
        }
        (action, rule, policy.timeout_ms)
    }

    /// Routes a client's `extension_ui_response` to the approval waiting for it; false when no
    /// approval has this id (it is an extension's dialog).
    pub fn answer(&self, response: &ExtensionUiResponse) -> bool {
        match lock(&self.pending).remove(&response.id) {
            Some(waiter) => {
                let _ = waiter.send(response.clone());
                true
            }
            None => false,
        }
    }
}

fn strictness(action: ApprovalAction) -> u8 {
    match action {
        ApprovalAction::Allow => 0,
        ApprovalAction::Ask => 1,
        ApprovalAction::Deny => 2,
    }
}

/// `{"rules": {pattern: action}, "timeoutMs": n}`; invalid parts are warned about and skipped.
fn parse_policy(
    value: &Value,
    warnings: &mut Vec<String>,
) -> (OrderedMap<ApprovalAction>, Option<u64>) {
    let mut rules = OrderedMap::new();
    let Some(object) = value.as_object() else {
        warnings.push("Invalid toolApprovals setting: expected an object".into());
        return (rules, None);
    };
    match object.get("rules") {
        Some(Value::Object(map)) => {
            for (pattern, action) in map {
                match serde_json::from_value::<ApprovalAction>(action.clone()) {
                    Ok(a) if !pattern.is_empty() => rules.insert(pattern.clone(), a),
                    _ => warnings.push(format!(
                        "Invalid toolApprovals rule \"{pattern}\": expected \"allow\", \"deny\" or \"ask\""
                    )),
                }
            }
        }
        None => {}
        Some(_) => warnings.push("Invalid toolApprovals.rules setting: expected an object".into()),
    }
    let timeout = match object.get("timeoutMs") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(ms) => Some(ms),
            None => {
                warnings
                    .push("Invalid toolApprovals.timeoutMs setting: expected milliseconds".into());
                None
            }
        },
    };
    (rules, timeout)
}

/// The rule for `tool`: its exact name, else the matching pattern with the most literal
/// characters (the first listed on a tie).
fn pick<'a>(
    rules: &'a OrderedMap<ApprovalAction>,
    tool: &str,
) -> Option<(&'a str, ApprovalAction)> {
    if let Some(action) = rules.get(tool) {
        return Some((rules.iter().find(|(k, _)| *k == tool)?.0, *action));
    }
    let mut best: Option<(&str, ApprovalAction, usize)> = None;
    for (pattern, action) in rules.iter() {
        if !glob(pattern.as_bytes(), tool.as_bytes()) {
            continue;
        }
        let literal = pattern.chars().filter(|c| *c != '*' && *c != '?').count();
        if best.is_none_or(|(_, _, l)| literal > l) {
            best = Some((pattern, *action, literal));
        }
    }
    best.map(|(p, a, _)| (p, a))
}

/// `*` matches any run of characters, `?` one; everything else itself.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(b'?') => {
                p += 1;
                n += 1;
            }
            Some(c) if *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

/// The dialog's text: the tool's arguments, one `key: value` line each (strings as they are),
/// cut to a readable length.
fn describe(args: &Map<String, Value>) -> String {
    const MAX: usize = 2000;
    let text = args
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join("\n");
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

impl Core {
    /// The approval gate of a call the extensions let through.
    pub(crate) async fn approve(&self, call: &ToolCall, args: Map<String, Value>) -> ToolCallGate {
        let (action, rule, timeout_ms) = self.approvals.decide(&call.name);
        let (reason, text) = match action {
            ApprovalAction::Allow => return ToolCallGate::Run(args),
            ApprovalAction::Deny => (
                ApprovalReason::Policy,
                format!("Tool call denied by the tool approval policy (rule \"{rule}\")."),
            ),
            ApprovalAction::Ask if self.args.mode != crate::cli::Mode::Rpc => (
                ApprovalReason::NoClient,
                "Tool call denied: it needs approval and there is no client to ask.".to_string(),
            ),
            ApprovalAction::Ask => match self.ask(call, &args, timeout_ms).await {
                None => {
                    self.record_approval(
                        call,
                        ApprovalDecision::Approved,
                        ApprovalReason::Client,
                        &rule,
                    )
                    .await;
                    return ToolCallGate::Run(args);
                }
                Some(denial) => denial,
            },
        };
        self.record_approval(call, ApprovalDecision::Denied, reason, &rule)
            .await;
        ToolCallGate::Block {
            reason: Some(text),
            terminate: false,
        }
    }

    /// Asks the client; `None` when it approved, else why not and the tool error's text.
    async fn ask(
        &self,
        call: &ToolCall,
        args: &Map<String, Value>,
        timeout_ms: u64,
    ) -> Option<(ApprovalReason, String)> {
        let id = pi_session::ids::uuid_v4();
        let (tx, rx) = oneshot::channel();
        lock(&self.approvals.pending).insert(id.clone(), tx);
        let mut request = ExtensionUiRequest::new(
            id.clone(),
            UiRequest::Confirm {
                title: format!("Allow {}?", call.name),
                message: describe(args),
                timeout: Some(timeout_ms),
            },
        );
        request.approval = Some(ApprovalSubject {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: Value::Object(args.clone()),
        });
        self.write(&request).await;
        let cancel = self.agent().and_then(|a| a.run_cancellation());
        let aborted = async {
            match cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            answer = rx => match answer {
                Ok(r) if r.cancelled != Some(true) && r.confirmed == Some(true) => None,
                _ => Some((ApprovalReason::Client, "Tool call denied by the user.".to_string())),
            },
            () = tokio::time::sleep(Duration::from_millis(timeout_ms)) => Some((
                ApprovalReason::Timeout,
                format!("Tool call denied: no approval within {timeout_ms} ms."),
            )),
            () = aborted => Some((ApprovalReason::Aborted, "Operation aborted".to_string())),
        };
        lock(&self.approvals.pending).remove(&id);
        outcome
    }

    /// The session record of a decision, reported by `entry_appended`.
    async fn record_approval(
        &self,
        call: &ToolCall,
        decision: ApprovalDecision,
        reason: ApprovalReason,
        rule: &str,
    ) {
        let record = ToolApprovalRecord {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            decision,
            reason,
            rule: rule.to_string(),
        };
        let entry = {
            let mut session = lock(&self.session);
            let data = serde_json::to_value(&record).ok();
            match session.append_custom_entry(APPROVAL_CUSTOM_TYPE, data) {
                Ok(id) => session.entry(&id).cloned(),
                Err(e) => {
                    eprintln!("pi: could not write to the session file: {e}");
                    None
                }
            }
        };
        if let Some(entry) = entry {
            self.emit(SessionEvent::EntryAppended { entry }).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pairs: &[(&str, ApprovalAction)]) -> OrderedMap<ApprovalAction> {
        pairs.iter().map(|(k, a)| (k.to_string(), *a)).collect()
    }

    #[test]
    fn exact_names_beat_patterns_and_longer_patterns_beat_shorter() {
        use ApprovalAction::*;
        let r = rules(&[
            ("*", Ask),
            ("mcp__*", Deny),
            ("mcp__git__*", Allow),
            ("bash", Allow),
        ]);
        assert_eq!(pick(&r, "bash"), Some(("bash", Allow)));
        assert_eq!(pick(&r, "mcp__git__log"), Some(("mcp__git__*", Allow)));
        assert_eq!(pick(&r, "mcp__web__fetch"), Some(("mcp__*", Deny)));
        assert_eq!(pick(&r, "read"), Some(("*", Ask)));
        assert_eq!(
            pick(&rules(&[("b?sh", Deny)]), "bash"),
            Some(("b?sh", Deny))
        );
        assert_eq!(pick(&rules(&[("ba", Deny)]), "bash"), None);
    }

    #[test]
    fn globs() {
        assert!(glob(b"*", b""));
        assert!(glob(b"a*c", b"abbbc"));
        assert!(glob(b"*x*", b"axb"));
        assert!(!glob(b"a*c", b"abcd"));
        assert!(glob(b"a*c*", b"abcd"));
        assert!(!glob(b"?", b""));
    }

    #[test]
    fn a_project_cannot_loosen_the_users_rules() {
        let approvals = Approvals::default();
        {
            let mut p = lock(&approvals.policy);
            p.rules = rules(&[("bash", ApprovalAction::Allow), ("*", ApprovalAction::Ask)]);
            p.floor = Some(rules(&[("bash", ApprovalAction::Ask)]));
        }
        assert_eq!(approvals.decide("bash").0, ApprovalAction::Ask);
        assert_eq!(approvals.decide("read").0, ApprovalAction::Ask);
        approvals
            .set(rules(&[("bash", ApprovalAction::Allow)]), None)
            .unwrap();
        assert_eq!(approvals.decide("bash").0, ApprovalAction::Allow);
        assert_eq!(
            approvals.decide("read"),
            (ApprovalAction::Allow, "*".into(), DEFAULT_TIMEOUT_MS)
        );
    }

    #[test]
    fn settings_problems_are_warnings() {
        let mut w = Vec::new();
        let (r, t) = parse_policy(
            &serde_json::json!({"rules": {"bash": "ask", "x": "maybe"}, "timeoutMs": "soon"}),
            &mut w,
        );
        assert_eq!(r, rules(&[("bash", ApprovalAction::Ask)]));
        assert_eq!(t, None);
        assert_eq!(w.len(), 2);
    }
}
