//! Model requests that run in extension code: a provider an extension registered with
//! `streamSimple` streams its models (those of its `api`) from the host (`provider_stream`,
//! events back as `stream_event` notifications), and extensions stream our providers through
//! pi (the `stream` call, events to the host as `stream_event`).

use super::partial::PartialAssistant;
use pi_agent::StreamFn;
use pi_ai::{AssistantStream, LlmContext, StreamEvent, StreamOptions, StreamSender};
use pi_ext_host::Host;
use pi_protocol::assistant_event::{AssistantMessageEvent, DoneReason, ErrorReason};
use pi_protocol::message::AssistantMessage;
use pi_protocol::model::Model;
use pi_protocol::usage::StopReason;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Which `(provider, api)` pairs stream through the host, and the streams under way.
#[derive(Default)]
pub(crate) struct StreamRoutes {
    host: Mutex<Option<Host>>,
    routes: Mutex<Vec<(String, String)>>,
    open: Mutex<HashMap<String, StreamSender>>,
    next: AtomicU64,
}

impl StreamRoutes {
    pub fn set_host(&self, host: Option<Host>) {
        *lock(&self.host) = host;
    }

    /// Routes `provider`'s models of `api` to the host (`None` removes the provider's route).
    pub fn set_route(&self, provider: &str, api: Option<&str>) {
        let mut routes = lock(&self.routes);
        routes.retain(|(p, _)| p != provider);
        if let Some(api) = api {
            routes.push((provider.to_string(), api.to_string()));
        }
    }

    pub fn clear_routes(&self) {
        lock(&self.routes).clear();
    }

    fn routed(&self, model: &Model) -> Option<Host> {
        let routed = lock(&self.routes)
            .iter()
            .any(|(p, a)| *p == model.provider && *a == model.api);
        if !routed {
            return None;
        }
        lock(&self.host).clone().filter(Host::is_alive)
    }

    /// The stream function of the session: routed models go to the host, others to pi-ai.
    pub fn stream_fn(self: &Arc<Self>) -> StreamFn {
        let routes = Arc::clone(self);
        Arc::new(move |model, context, options| match routes.routed(model) {
            Some(host) => routes.start(host, model, context, options),
            None => pi_ai::stream(model, context, options),
        })
    }

    fn start(
        self: &Arc<Self>,
        host: Host,
        model: &Model,
        context: LlmContext,
        options: StreamOptions,
    ) -> AssistantStream {
        let (tx, rx) = AssistantStream::channel();
        let stream_id = format!("ps-{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        lock(&self.open).insert(stream_id.clone(), tx.clone());
        let mut params = Map::new();
        params.insert("streamId".into(), json!(stream_id));
        params.insert("api".into(), json!(model.api));
        params.insert(
            "model".into(),
            serde_json::to_value(model).unwrap_or(Value::Null),
        );
        params.insert("context".into(), json!({ "messages": context.messages }));
        params.insert("options".into(), request_options(&options));
        let routes = Arc::clone(self);
        let model = model.clone();
        let started = Instant::now();
        tokio::spawn(async move {
            let request = host.request("provider_stream", params);
            tokio::pin!(request);
            let result = tokio::select! {
                r = &mut request => r,
                () = options.cancel.cancelled() => {
                    let mut abort = Map::new();
                    abort.insert("streamId".into(), json!(stream_id));
                    host.notify("stream_abort", abort);
                    request.await
                }
            };
            // Still open: the stream ended without `done`/`error`.
            if lock(&routes.open).remove(&stream_id).is_some() {
                let text = match result {
                    Err(e) => e.to_string(),
                    Ok(_) if options.cancel.is_cancelled() => "Request was aborted".to_string(),
                    Ok(_) => "Provider stream ended without a final event".to_string(),
                };
                let event = pi_ai::request::setup_error(&model, text, started, pi_js::now_ms());
                let event = match (event, options.cancel.is_cancelled()) {
                    (StreamEvent::Error { mut message }, true) => {
                        message.stop_reason = StopReason::Aborted;
                        StreamEvent::Error { message }
                    }
                    (event, _) => event,
                };
                tx.send(event).await;
            }
        });
        rx
    }

    /// A `stream_event` from the host for one of our open streams.
    pub async fn event(&self, params: &Value) {
        let Some(id) = params.get("streamId").and_then(Value::as_str) else {
            return;
        };
        let Some(tx) = lock(&self.open).get(id).cloned() else {
            return;
        };
        let parsed = params
            .get("event")
            .cloned()
            .map(serde_json::from_value::<AssistantMessageEvent>);
        let event = match parsed {
            Some(Ok(event)) => from_pi_event(event),
            Some(Err(e)) => {
                let mut message = AssistantMessage::new("", "", "", StopReason::Error, 0);
                message.error_message = Some(format!("Invalid provider stream event: {e}"));
                StreamEvent::Error { message }
            }
            None => return,
        };
        if event.is_terminal() {
            lock(&self.open).remove(id);
        }
        tx.send(event).await;
    }
}

/// Pi's `SimpleStreamOptions` for the extension's `streamSimple` (the data members).
fn request_options(options: &StreamOptions) -> Value {
    let mut out = Map::new();
    if let Some(key) = &options.api_key {
        out.insert("apiKey".into(), json!(key));
    }
    if let Some(level) = options.reasoning {
        out.insert("reasoning".into(), json!(level));
    }
    if let Some(n) = options.max_tokens {
        out.insert("maxTokens".into(), json!(n));
    }
    if let Some(t) = options.temperature {
        out.insert("temperature".into(), json!(t));
    }
    if let Some(id) = &options.session_id {
        out.insert("sessionId".into(), json!(id));
    }
    if !options.headers.is_empty() {
        out.insert("headers".into(), json!(options.headers));
    }
    Value::Object(out)
}

fn index(i: u64) -> usize {
    usize::try_from(i).unwrap_or(usize::MAX)
}

/// One of Pi's events as ours: deltas and the usage so far (the partial message is dropped).
fn from_pi_event(event: AssistantMessageEvent) -> StreamEvent {
    use AssistantMessageEvent as E;
    let usage = |m: &AssistantMessage| (*m.usage).clone();
    match event {
        E::Start { partial } => StreamEvent::Start { partial },
        E::TextStart {
            content_index,
            partial,
        } => StreamEvent::TextStart {
            index: index(content_index),
            usage: usage(&partial),
        },
        E::TextDelta {
            content_index,
            delta,
            partial,
        } => StreamEvent::TextDelta {
            index: index(content_index),
            delta,
            usage: usage(&partial),
        },
        E::TextEnd {
            content_index,
            content,
            content_signature,
            partial,
        } => StreamEvent::TextEnd {
            index: index(content_index),
            content,
            signature: content_signature,
            usage: usage(&partial),
        },
        E::ThinkingStart {
            content_index,
            partial,
        } => StreamEvent::ThinkingStart {
            index: index(content_index),
            usage: usage(&partial),
        },
        E::ThinkingDelta {
            content_index,
            delta,
            partial,
        } => StreamEvent::ThinkingDelta {
            index: index(content_index),
            delta,
            usage: usage(&partial),
        },
        E::ThinkingEnd {
            content_index,
            content,
            content_signature,
            partial,
        } => StreamEvent::ThinkingEnd {
            index: index(content_index),
            content,
            signature: content_signature,
            usage: usage(&partial),
        },
        E::ToolcallStart {
            content_index,
            partial,
        } => {
            let (id, name) = match partial.content.get(index(content_index)) {
                Some(pi_protocol::content::AssistantBlock::ToolCall(call)) => {
                    (call.id.clone(), call.name.clone())
                }
                _ => (String::new(), String::new()),
            };
            StreamEvent::ToolcallStart {
                index: index(content_index),
                id,
                name,
                usage: usage(&partial),
            }
        }
        E::ToolcallDelta {
            content_index,
            delta,
            partial,
        } => StreamEvent::ToolcallDelta {
            index: index(content_index),
            delta,
            usage: usage(&partial),
        },
        E::ToolcallEnd {
            content_index,
            tool_call,
            partial,
        } => StreamEvent::ToolcallEnd {
            index: index(content_index),
            tool_call,
            usage: usage(&partial),
        },
        E::Done { message, .. } => StreamEvent::Done { message },
        E::Error { error, .. } => StreamEvent::Error { message: error },
    }
}

/// Our event as Pi's, with the response so far (`partial`, kept up to date by the caller).
pub(crate) fn to_pi_event(event: &StreamEvent, partial: &mut PartialAssistant) -> Value {
    use AssistantMessageEvent as E;
    partial.apply(event);
    let p = || partial.message.clone();
    let i = |n: &usize| *n as u64;
    let event = match event {
        StreamEvent::Start { partial } => E::Start {
            partial: partial.clone(),
        },
        StreamEvent::TextStart { index, .. } => E::TextStart {
            content_index: i(index),
            partial: p(),
        },
        StreamEvent::TextDelta { index, delta, .. } => E::TextDelta {
            content_index: i(index),
            delta: delta.clone(),
            partial: p(),
        },
        StreamEvent::TextEnd {
            index,
            content,
            signature,
            ..
        } => E::TextEnd {
            content_index: i(index),
            content: content.clone(),
            content_signature: signature.clone(),
            partial: p(),
        },
        StreamEvent::ThinkingStart { index, .. } => E::ThinkingStart {
            content_index: i(index),
            partial: p(),
        },
        StreamEvent::ThinkingDelta { index, delta, .. } => E::ThinkingDelta {
            content_index: i(index),
            delta: delta.clone(),
            partial: p(),
        },
        StreamEvent::ThinkingEnd {
            index,
            content,
            signature,
            ..
        } => E::ThinkingEnd {
            content_index: i(index),
            content: content.clone(),
            content_signature: signature.clone(),
            partial: p(),
        },
        StreamEvent::ToolcallStart { index, .. } => E::ToolcallStart {
            content_index: i(index),
            partial: p(),
        },
        StreamEvent::ToolcallDelta { index, delta, .. } => E::ToolcallDelta {
            content_index: i(index),
            delta: delta.clone(),
            partial: p(),
        },
        StreamEvent::ToolcallEnd {
            index, tool_call, ..
        } => E::ToolcallEnd {
            content_index: i(index),
            tool_call: tool_call.clone(),
            partial: p(),
        },
        StreamEvent::Done { message } => E::Done {
            reason: match message.stop_reason {
                StopReason::Length => DoneReason::Length,
                StopReason::ToolUse => DoneReason::ToolUse,
                StopReason::Deferred => DoneReason::Deferred,
                _ => DoneReason::Stop,
            },
            message: message.clone(),
        },
        StreamEvent::Error { message } => E::Error {
            reason: match message.stop_reason {
                StopReason::Aborted => ErrorReason::Aborted,
                _ => ErrorReason::Error,
            },
            error: message.clone(),
        },
    };
    serde_json::to_value(event).unwrap_or(Value::Null)
}
