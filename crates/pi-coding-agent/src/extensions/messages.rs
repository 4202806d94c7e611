//! Messages extensions send into the session: `pi.sendMessage` (custom messages, Pi's
//! `sendCustomMessage`) and `pi.sendUserMessage` (a prompt from the extension).

use super::StartTrigger;
use crate::runtime::{Preflight, PromptOrigin, PromptRequest, Runtime, lock};
use pi_protocol::SharedMessage;
use pi_protocol::StreamingBehavior;
use pi_protocol::content::ImageContent;
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AgentMessage;
use serde_json::Value;

impl Runtime {
    /// `pi.sendMessage(message, {triggerTurn, deliverAs})`.
    pub(crate) async fn ext_send_message(&self, params: &Value) -> Result<(), String> {
        let message = params
            .get("message")
            .cloned()
            .and_then(crate::runtime::custom_message)
            .ok_or("sendMessage needs a message with a customType")?;
        let trigger = params.get("triggerTurn").and_then(Value::as_bool);
        let deliver_as = params.get("deliverAs").and_then(Value::as_str);
        let streaming = self.core.is_streaming();
        if deliver_as == Some("nextTurn") {
            lock(&self.core.run).next_turn.push(message);
        } else if streaming && trigger != Some(false) {
            if deliver_as == Some("followUp") {
                self.agent.follow_up(message);
            } else {
                self.agent.steer(message);
            }
        } else if trigger == Some(true) {
            self.start_custom_run(message).await?;
        } else if streaming {
            // Appending now could split a tool call from its result: wait for the turn's end.
            lock(&self.core.run).held_custom.push(message);
        } else {
            self.core.append_custom(message).await;
        }
        Ok(())
    }

    /// A run started by a custom message (`triggerTurn` while idle).
    async fn start_custom_run(&self, message: AgentMessage) -> Result<(), String> {
        if self.core.is_streaming() {
            return Err("Agent is already processing.".into());
        }
        self.core.busy.send_replace(true);
        lock(&self.core.run).abort_requested = false;
        let started = self
            .core
            .ext_before_agent_start(StartTrigger::Custom(&message))
            .await;
        let messages = self.starting_messages(message, started);
        self.spawn_extension_run(messages);
        Ok(())
    }

    /// `pi.sendUserMessage(content, {deliverAs, expandPromptTemplates})`: a prompt from the
    /// extension; problems become `extension_error` (`<runtime>`, `send_user_message`).
    pub(crate) async fn ext_send_user_message(&self, params: &Value) {
        let (text, images) = user_content(params.get("content"));
        let behavior = match params.get("deliverAs").and_then(Value::as_str) {
            Some("steer") => Some(StreamingBehavior::Steer),
            Some("followUp") => Some(StreamingBehavior::FollowUp),
            _ => None,
        };
        let expand = params
            .get("expandPromptTemplates")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if expand && let Some((name, args)) = self.extension_command(&text) {
            self.run_extension_command(&name, &args).await;
            self.extension_command_answered();
            return;
        }
        let request = PromptRequest {
            text,
            images,
            streaming_behavior: behavior,
        };
        match self
            .prompt_preflight_from(request, PromptOrigin::Extension { expand })
            .await
        {
            Preflight::Started(messages) => self.spawn_extension_run(messages),
            // Reported once a command that sent it has been answered (Pi's order).
            Preflight::Rejected(error) => {
                let core = std::sync::Arc::clone(&self.core);
                tokio::spawn(async move {
                    core.ext.commands_answered().await;
                    core.ext_error("<runtime>", "send_user_message", &error)
                        .await;
                });
            }
            Preflight::Queued | Preflight::Handled => {}
        }
    }
}

/// A string, or content parts: text parts joined by a newline, images collected.
fn user_content(content: Option<&Value>) -> (String, Vec<ImageContent>) {
    match content {
        Some(Value::String(s)) => (s.clone(), Vec::new()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        texts.push(part.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    Some("image") => {
                        if let Ok(image) = serde_json::from_value(part.clone()) {
                            images.push(image);
                        }
                    }
                    _ => {}
                }
            }
            (texts.join("\n"), images)
        }
        _ => (String::new(), Vec::new()),
    }
}

impl crate::runtime::Core {
    /// A custom message appended outside a run: its entry, its records, the transcript.
    pub(crate) async fn append_custom(&self, message: AgentMessage) {
        if let AgentMessage::Custom(c) = &message {
            let appended = lock(&self.session).append_custom_message_entry(
                &c.custom_type,
                c.content.clone(),
                c.display,
                c.details.clone(),
            );
            if let Err(e) = appended {
                eprintln!("pi: could not write to the session file: {e}");
                return;
            }
        }
        self.refresh_agent_context();
        if let Some(agent) = self.agent() {
            agent.add_to_run_context(SharedMessage::new(message.clone()));
        }
        self.emit(SessionEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        self.emit(SessionEvent::MessageEnd { message }).await;
    }

    /// Appends the custom messages held during a turn (at its end, and when a run ends).
    pub(crate) async fn flush_held_custom(&self) {
        let held = std::mem::take(&mut lock(&self.run).held_custom);
        for message in held {
            self.append_custom(message).await;
        }
    }
}
