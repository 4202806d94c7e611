//! Pi's TypeScript extensions, as the session runtime sees them: what they registered (tools,
//! commands, flags), the host they run in (`pi_ext_host`), and the points where the runtime
//! hands events to them and applies what they return.
//!
//! * `load.rs`: starting the host at startup, Pi's load-failure report, CLI flags.
//! * `registry.rs`: the registrations, parsed from the host's answers.
//! * `delegate.rs`: what pi does when extension code calls into it.
//! * `tools.rs`: extension tools as agent tools.
//! * `emit.rs`: handing an event to the host and reading the composed result.

mod agent_events;
mod boundary;
mod delegate;
mod emit;
mod js_helpers;
mod lifecycle;
mod llm;
mod load;
mod messages;
pub(crate) mod model_refresh;
mod oauth;
pub(crate) mod operations;
mod partial;
mod prompt;
mod provider;
mod provider_stream;
pub(crate) mod registry;
mod reload;
mod tools;
mod tree;
pub(crate) mod virtual_models;

pub use load::{LoadReport, ProjectTrustPass, load_extensions, needs_hint, project_trust_pass};
pub use registry::{ExtCommand, ExtFlag, ExtTool, Registrations};
pub(crate) use tools::ExtensionTool;

pub(crate) use partial::PartialAssistant;
pub use prompt::{BeforeAgentStart, InputOutcome, StartTrigger};

use pi_agent::ToolUpdateSink;
use pi_ext_host::Host;
use pi_protocol::tool::AgentToolResult;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The loaded extensions of a session; empty (and free) when none are configured.
#[derive(Default)]
pub struct Extensions {
    /// Set at startup; replaced when a session of another project brings its own (Pi's
    /// pre-trust pass for that cwd), or started then when none ran.
    host: Mutex<Option<Host>>,
    /// Set when the host died: everything goes on without extensions.
    gone: AtomicBool,
    registrations: Mutex<Registrations>,
    /// Where the partial results of running extension tools go, by tool call id.
    running_tools: Mutex<HashMap<String, ToolUpdateSink>>,
    /// How running extension tools make nested calls (`ctx.executeTool`), by tool call id.
    nested: Mutex<HashMap<String, (pi_agent::NestedRunner, tokio_util::sync::CancellationToken)>>,
    /// Prompts an extension started (`sendMessage`, `sendUserMessage`) that have not yet got
    /// past their preflight: a command's answer waits for them, as in Pi.
    preflights: tokio::sync::watch::Sender<usize>,
    /// Extension commands whose `prompt` is not answered yet: runs their handlers started
    /// begin after that answer, as in Pi.
    commands: tokio::sync::watch::Sender<usize>,
    /// Providers whose models stream from extension code, and those streams.
    streams: Arc<provider_stream::StreamRoutes>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Extensions {
    pub fn new(host: Option<Host>, registrations: Registrations) -> Extensions {
        let streams = Arc::new(provider_stream::StreamRoutes::default());
        streams.set_host(host.clone());
        Extensions {
            host: Mutex::new(host),
            registrations: Mutex::new(registrations),
            streams,
            ..Extensions::default()
        }
    }

    /// How the session starts model requests: through pi-ai, or through the extension host
    /// for the models of a provider an extension streams itself (`streamSimple`).
    pub fn stream_fn(&self) -> pi_agent::StreamFn {
        self.streams.stream_fn()
    }

    /// Routes the models of providers registered with `streamSimple` to the host (Pi uses an
    /// extension's `streamSimple` for the provider's models of the registered `api`).
    pub fn route_streams(&self, registry: &pi_registry::ModelRegistry) {
        self.streams.clear_routes();
        for id in registry.extension_provider_ids() {
            let config = registry.extension_provider_config(id);
            let streams = config
                .and_then(|c| c.get("streamSimple"))
                .is_some_and(|v| !v.is_null());
            let api = config
                .and_then(|c| c.get("api"))
                .and_then(serde_json::Value::as_str);
            if let (true, Some(api)) = (streams, api) {
                self.streams.set_route(id, Some(api));
            }
        }
    }

    /// A `stream_event` notification from the host.
    pub(crate) async fn stream_event(&self, params: &serde_json::Value) {
        self.streams.event(params).await;
    }

    /// The running host, if extensions are loaded and it is alive.
    pub fn host(&self) -> Option<Host> {
        lock(&self.host)
            .clone()
            .filter(|h| h.is_alive() && !self.gone.load(Ordering::SeqCst))
    }

    /// Whether any extension is loaded (even if its host has died since).
    pub fn loaded(&self) -> bool {
        lock(&self.host).is_some()
    }

    /// Makes `host` the extensions' host; the previous one (if any) ends.
    pub(crate) fn replace_host(&self, host: Host) {
        if let Some(old) = lock(&self.host).replace(host.clone()) {
            // Its end is no news: nothing reports it or marks the extensions gone.
            old.detach();
            old.kill();
        }
        self.gone.store(false, Ordering::SeqCst);
        self.streams.set_host(Some(host));
    }

    /// An extension-started prompt begins (counted until its preflight ends).
    pub(crate) fn preflight_started(&self) {
        self.preflights.send_modify(|n| *n += 1);
    }

    pub(crate) fn preflight_ended(&self) {
        self.preflights.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Resolves once no extension-started prompt is in its preflight.
    pub(crate) async fn preflights_settled(&self) {
        let mut rx = self.preflights.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    pub(crate) fn command_started(&self) {
        self.commands.send_modify(|n| *n += 1);
    }

    /// The command's `prompt` was answered.
    pub fn command_answered(&self) {
        self.commands.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Resolves once every running extension command has been answered.
    pub(crate) async fn commands_answered(&self) {
        let mut rx = self.commands.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    pub(crate) fn host_gone(&self) {
        self.gone.store(true, Ordering::SeqCst);
        lock(&self.running_tools).clear();
    }

    pub(crate) fn track_tool(&self, tool_call_id: &str, sink: ToolUpdateSink) {
        lock(&self.running_tools).insert(tool_call_id.to_string(), sink);
    }

    pub(crate) fn untrack_tool(&self, tool_call_id: &str) {
        lock(&self.running_tools).remove(tool_call_id);
        lock(&self.nested).remove(tool_call_id);
    }

    /// The running tool call's way to call other tools (set while it executes).
    pub(crate) fn track_nested(
        &self,
        tool_call_id: &str,
        runner: pi_agent::NestedRunner,
        cancel: tokio_util::sync::CancellationToken,
    ) {
        lock(&self.nested).insert(tool_call_id.to_string(), (runner, cancel));
    }

    pub(crate) fn nested_runner(
        &self,
        tool_call_id: &str,
    ) -> Option<(pi_agent::NestedRunner, tokio_util::sync::CancellationToken)> {
        lock(&self.nested).get(tool_call_id).cloned()
    }

    /// A partial result from a running extension tool (`onUpdate`).
    pub(crate) fn tool_update(&self, tool_call_id: &str, partial: AgentToolResult) {
        let sink = lock(&self.running_tools).get(tool_call_id).map(Arc::clone);
        if let Some(sink) = sink {
            sink(partial);
        }
    }

    /// Whether an extension handles `event`: events nobody handles are not sent at all.
    pub fn handles(&self, event: &str) -> bool {
        self.host().is_some_and(|h| h.has_handlers(event))
    }

    pub fn registrations(&self) -> MutexGuard<'_, Registrations> {
        lock(&self.registrations)
    }

    /// Ends the host (process group) at shutdown.
    pub fn kill(&self) {
        if let Some(host) = lock(&self.host).as_ref() {
            host.kill();
        }
    }
}
