//! The extension steps of a prompt (Pi's `prompt`): `/command` dispatch, the `input` gate,
//! and `before_agent_start`.

use crate::runtime::{Core, Runtime};
use pi_protocol::content::ImageContent;
use serde_json::{Map, Value, json};

/// What the `input` handlers decided.
pub enum InputOutcome {
    /// Go on with this text and these images.
    Continue(String, Vec<ImageContent>),
    /// An extension took care of it; answer `disposition: "handled"`.
    Handled,
}

/// What starts a run, as `before_agent_start` handlers see it.
pub enum StartTrigger<'a> {
    User {
        prompt: &'a str,
        images: &'a [ImageContent],
    },
    Custom(&'a pi_protocol::message::AgentMessage),
}

/// What `before_agent_start` handlers added to the run.
#[derive(Default)]
pub struct BeforeAgentStart {
    /// Custom messages to send after the starting message.
    pub messages: Vec<Value>,
    /// A system prompt that replaces the whole prompt for this run.
    pub system_prompt: Option<String>,
    /// System prompt options the handlers edited: they build this run's prompt and name its
    /// tools.
    pub(crate) prompt_options: Option<crate::resources::prompt_options::PromptOptions>,
}

impl Runtime {
    /// The extension command a prompt text names (`/name args`), if one is registered.
    pub fn extension_command(&self, text: &str) -> Option<(String, String)> {
        let rest = text.strip_prefix('/')?;
        let (name, args) = match rest.find(' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        self.core
            .ext
            .registrations()
            .has_command(name)
            .then(|| (name.to_string(), args.to_string()))
    }

    /// Runs an extension command to its end; a throw is reported by the host as
    /// `extension_error` (`command:<name>`). The caller answers the `prompt`, then calls
    /// [`Runtime::extension_command_answered`].
    pub async fn run_extension_command(&self, name: &str, args: &str) {
        self.core.ext.command_started();
        let Some(host) = self.core.ext.host() else {
            return;
        };
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        params.insert("args".into(), json!(args));
        params.insert("ctx".into(), self.core.ext_ctx());
        if let Err(e) = host.request("command", params).await {
            self.core
                .ext_error(&format!("command:{name}"), "command", &e.to_string())
                .await;
        }
        self.core.ext.preflights_settled().await;
    }

    /// The `prompt` of an extension command was answered: runs its handler started may begin.
    pub fn extension_command_answered(&self) {
        self.core.ext.command_answered();
    }

    /// A run an extension started: it begins once commands running now have been answered.
    pub(crate) fn spawn_extension_run(&self, messages: Vec<pi_protocol::message::AgentMessage>) {
        let rt = self.clone();
        tokio::spawn(async move {
            rt.core.ext.commands_answered().await;
            rt.run_session(messages).await;
        });
    }
}

impl Core {
    /// Pi's `_runInputHandlers`: `source` is `rpc` or `extension`; `streaming_behavior` only
    /// while a run is active.
    pub(crate) async fn ext_input(
        &self,
        text: String,
        images: Vec<ImageContent>,
        source: &str,
        streaming_behavior: Option<&str>,
    ) -> InputOutcome {
        if !self.ext.handles("input") {
            return InputOutcome::Continue(text, images);
        }
        let mut payload = json!({ "text": text, "source": source });
        if !images.is_empty() {
            payload["images"] = json!(images);
        }
        if let Some(b) = streaming_behavior {
            payload["streamingBehavior"] = json!(b);
        }
        let Some(result) = self.ext_emit("input", payload).await else {
            return InputOutcome::Continue(text, images);
        };
        match result.get("action").and_then(Value::as_str) {
            Some("handled") => InputOutcome::Handled,
            Some("transform") => {
                let text = result
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or(text);
                let images = match result.get("images") {
                    Some(v) if !v.is_null() => serde_json::from_value(v.clone()).unwrap_or(images),
                    _ => images,
                };
                InputOutcome::Continue(text, images)
            }
            _ => InputOutcome::Continue(text, images),
        }
    }

    /// `before_agent_start` for a user prompt (after expansion) or a custom message.
    pub(crate) async fn ext_before_agent_start(
        &self,
        trigger: StartTrigger<'_>,
    ) -> BeforeAgentStart {
        if !self.ext.handles("before_agent_start") {
            return BeforeAgentStart::default();
        }
        let mut payload = match trigger {
            StartTrigger::User { prompt, images } => {
                let mut p = json!({ "messageType": "user", "prompt": prompt });
                if !images.is_empty() {
                    p["images"] = json!(images);
                }
                p
            }
            StartTrigger::Custom(message) => json!({ "messageType": "custom", "message": message }),
        };
        let base = self.agent().map(|agent| {
            payload["systemPrompt"] = json!(self.system_prompt_text(&agent));
            self.prompt_options(&agent)
        });
        if let Some(base) = &base {
            payload["systemPromptOptions"] = base.to_json();
        }
        let Some(result) = self.ext_emit("before_agent_start", payload).await else {
            return BeforeAgentStart::default();
        };
        BeforeAgentStart {
            prompt_options: result.get("systemPromptOptions").zip(base.as_ref()).map(
                |(v, base)| crate::resources::prompt_options::PromptOptions::from_json(v, base),
            ),
            messages: result
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            system_prompt: result
                .get("systemPrompt")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}
