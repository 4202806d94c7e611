//! What pi does when extension code calls into it (see `crates/pi-ext-host/PROTOCOL.md`):
//! synchronous reads of the session and its state, actions that change the session, records
//! the host asks us to write, and the asynchronous calls (model, session and run control).

use crate::runtime::{Core, Runtime, lock};
use pi_ext_host::{BoxFuture, CallResult, Delegate};
use pi_js::parse::parse_js_json;
use pi_protocol::event::SessionEvent;
use pi_protocol::thinking::ThinkingLevel;
use serde_json::{Value, json};
use std::sync::{Arc, Weak};

/// The runtime as the host's counterpart; weak, so the host never keeps the session alive.
pub(crate) struct HostDelegate {
    core: Weak<Core>,
    /// While the extensions load there is no session yet: only pure calls are answered.
    loading: bool,
}

/// What the host hears while the extensions load and pi has no session for it yet.
const NOT_READY: &str = "pi is not ready for this call yet";

impl HostDelegate {
    pub fn new(core: &Arc<Core>) -> Arc<HostDelegate> {
        Arc::new(HostDelegate {
            core: Arc::downgrade(core),
            loading: false,
        })
    }

    /// The delegate of the loading pass (`init`, `extend`): factories may register MCP servers,
    /// which pi validates, before the session exists.
    pub fn loading() -> Arc<HostDelegate> {
        Arc::new(HostDelegate {
            core: Weak::new(),
            loading: true,
        })
    }

    fn runtime(&self) -> Result<Runtime, String> {
        if self.loading {
            return Err(NOT_READY.into());
        }
        let core = self.core.upgrade().ok_or("the session has ended")?;
        let agent = core.agent().ok_or("the session has ended")?;
        Ok(Runtime { agent, core })
    }
}

/// `pi.registerMcpServer`'s check (Pi's `validateMcpServerConfig`): `{config}` with exposure
/// aliases resolved, or `{error}` for the host to throw.
fn validate_mcp_server(params: &Value) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let config = params.get("config").cloned().unwrap_or(Value::Null);
    match pi_mcp::config::validate(name, &config) {
        Ok((config, _)) => json!({ "config": config }),
        Err(error) => json!({ "error": error }),
    }
}

fn text<'a>(params: &'a Value, key: &str) -> Result<&'a str, String> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing {key}"))
}

fn to_json<T: serde::Serialize>(value: &T) -> CallResult {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

impl Delegate for HostDelegate {
    fn sync_call<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a, CallResult> {
        Box::pin(async move {
            if method == "mcp_validate" {
                return Ok(validate_mcp_server(&params));
            }
            let rt = self.runtime()?;
            match method {
                "session" => session_query(&rt, &params),
                "state" => state_query(&rt, &params),
                "models" => models_query(&rt, &params),
                "append_entry" => {
                    let custom_type = text(&params, "customType")?;
                    let data = params.get("data").cloned();
                    let (id, entry) = {
                        let mut session = lock(&rt.core.session);
                        let id = session
                            .append_custom_entry(custom_type, data)
                            .map_err(|e| e.to_string())?;
                        (id.clone(), session.entry(&id).cloned())
                    };
                    if let Some(entry) = entry {
                        rt.core.emit(SessionEvent::EntryAppended { entry }).await;
                    }
                    Ok(json!(id))
                }
                "set_label" => {
                    let id = text(&params, "entryId")?;
                    let label = params.get("label").and_then(Value::as_str);
                    lock(&rt.core.session)
                        .append_label_change(id, label)
                        .map_err(|e| e.to_string())?;
                    Ok(Value::Null)
                }
                "set_session_name" => {
                    let name = pi_js::trim(text(&params, "name")?).to_string();
                    let current = {
                        let mut session = lock(&rt.core.session);
                        session
                            .append_session_info(&name)
                            .map_err(|e| e.to_string())?;
                        session.session_name()
                    };
                    rt.core
                        .emit(SessionEvent::SessionInfoChanged {
                            name: current.clone(),
                        })
                        .await;
                    // The host starts the handlers itself, before its call returns (as in Pi).
                    Ok(json!({ "event": { "name": current } }))
                }
                "set_active_tools" => {
                    let names: Vec<String> = params
                        .get("names")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|n| n.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    rt.set_active_tools_by_name(&names);
                    Ok(Value::Null)
                }
                "set_thinking_level" => {
                    let level: ThinkingLevel =
                        serde_json::from_value(params.get("level").cloned().unwrap_or(Value::Null))
                            .map_err(|e| e.to_string())?;
                    // The host starts `thinking_level_select` itself, before its call returns.
                    Ok(match rt.change_thinking_level(level).await {
                        Some(event) => json!({ "event": event }),
                        None => Value::Null,
                    })
                }
                "boundary_context" => Ok(rt.core.boundary_context()),
                "js" => {
                    let function = text(&params, "fn")?;
                    let args = params
                        .get("args")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if function == "buildSystemPrompt" {
                        use crate::resources::prompt_options::{PromptOptions, render};
                        let base = rt.core.prompt_options(&rt.agent);
                        let options = match args.first() {
                            Some(v) if v.is_object() => PromptOptions::from_json(v, &base),
                            _ => base,
                        };
                        return options
                            .build(&rt.core.env.package_dir)
                            .map(|s| json!(render(&s)));
                    }
                    super::js_helpers::call(function, &args)
                }
                "register_provider" => {
                    let mut registry = lock(&rt.core.registry);
                    super::registry::apply_provider(&mut registry, &params)?;
                    rt.core.ext.route_streams(&registry);
                    drop(registry);
                    // Pi refreshes the catalog (without network) after every registration.
                    if let Some(host) = rt.core.ext.host() {
                        let core = rt.core.clone();
                        tokio::spawn(async move {
                            let options = super::model_refresh::RefreshOptions::default();
                            super::model_refresh::refresh(&host, &core.registry, options).await;
                        });
                    }
                    Ok(Value::Null)
                }
                "register_virtual_model" => {
                    let definition = params.get("definition").cloned().unwrap_or(Value::Null);
                    let mut registry = lock(&rt.core.registry);
                    super::registry::apply_virtual_model(&mut registry, &definition)?;
                    Ok(Value::Null)
                }
                "unregister_virtual_model" => {
                    let mut registry = lock(&rt.core.registry);
                    registry
                        .unregister_virtual_model(text(&params, "provider")?, text(&params, "id")?);
                    Ok(Value::Null)
                }
                "unregister_provider" => {
                    let mut registry = lock(&rt.core.registry);
                    registry.unregister_extension_provider(text(&params, "name")?);
                    rt.core.ext.route_streams(&registry);
                    Ok(Value::Null)
                }
                "register_tool" => {
                    let path = text(&params, "path")?.to_string();
                    let def: super::ExtTool =
                        serde_json::from_value(params.clone()).map_err(|e| e.to_string())?;
                    rt.register_extension_tool(&path, def);
                    Ok(Value::Null)
                }
                "register_command" => {
                    // The whole list: a new duplicate renames earlier commands (`name:1`, …).
                    let commands: Vec<super::registry::PathCommand> = serde_json::from_value(
                        params.get("commands").cloned().unwrap_or(Value::Null),
                    )
                    .map_err(|e| e.to_string())?;
                    rt.core.ext.registrations().set_commands(commands);
                    Ok(Value::Null)
                }
                other => Err(format!("pi in Rust does not support `{other}` yet")),
            }
        })
    }

    fn effect<'a>(&'a self, method: &'a str, params: Value) -> BoxFuture<'a> {
        Box::pin(async move {
            let Some(core) = self.core.upgrade() else {
                return;
            };
            match method {
                "ui" => {
                    if let Some(request) = params.get("request")
                        && request.get("type").and_then(Value::as_str)
                            == Some("extension_ui_request")
                    {
                        core.write(request).await;
                    }
                }
                // The overlay itself is applied by the host channel; credentials follow it.
                "env" => lock(&core.registry).reload_env(),
                "extension_error" => {
                    let field = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or("");
                    core.ext_error(field("extensionPath"), field("event"), field("error"))
                        .await;
                }
                "mcp_servers" => {
                    // The whole registry after a `registerMcpServer`/`unregisterMcpServer`
                    // made once the extensions were bound.
                    let servers = params.get("servers").cloned().unwrap_or(Value::Null);
                    match serde_json::from_value(servers) {
                        Ok(servers) => {
                            core.ext.registrations().mcp_servers = servers;
                            core.mcp_servers_changed().await;
                        }
                        Err(e) => {
                            eprintln!("pi: unexpected MCP servers from the extension host: {e}")
                        }
                    }
                }
                "tool_update" => {
                    let id = params
                        .get("toolCallId")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if let Some(partial) = params.get("partialResult").cloned()
                        && let Ok(result) = serde_json::from_value(partial)
                    {
                        core.ext.tool_update(id, result);
                    }
                }
                _ => {}
            }
        })
    }

    fn call(self: Arc<Self>, method: String, params: Value) -> BoxFuture<'static, CallResult> {
        // Counted now, in the order the host sent it: a command that started a prompt is
        // answered only once that prompt got past its preflight (Pi's order).
        let counted = matches!(method.as_str(), "send_message" | "send_user_message");
        if counted && let Some(core) = self.core.upgrade() {
            core.ext.preflight_started();
        }
        Box::pin(async move {
            let result = self.call_now(&method, params).await;
            if counted && let Some(core) = self.core.upgrade() {
                core.ext.preflight_ended();
            }
            result
        })
    }

    fn notification<'a>(&'a self, kind: &'a str, message: Value) -> BoxFuture<'a> {
        Box::pin(async move {
            match kind {
                "stream_event" => {
                    if let Some(core) = self.core.upgrade() {
                        core.ext.stream_event(&message).await;
                    }
                }
                "op_data" => super::operations::exec_output(&message),
                _ => {}
            }
        })
    }

    fn gone(&self, reason: String) {
        self.gone_now(reason);
    }
}

impl HostDelegate {
    async fn call_now(&self, method: &str, params: Value) -> CallResult {
        let rt = self.runtime()?;
        match method {
            "set_model" => {
                let provider = text(&params, "provider")?;
                let id = text(&params, "id")?;
                let usable = lock(&rt.core.registry).has_configured_auth(provider);
                if !usable {
                    return Ok(json!(false));
                }
                Ok(json!(rt.set_model(provider, id).await.is_ok()))
            }
            "abort" => {
                rt.abort().await;
                Ok(Value::Null)
            }
            "send_message" => rt.ext_send_message(&params).await.map(|()| Value::Null),
            "complete" => rt.ext_complete(&params).await,
            "stream" => rt.ext_stream(&params).await,
            "reload" => rt.ext_reload().await.map(|()| Value::Null),
            "navigate_tree" => rt.ext_navigate_tree(&params).await,
            "execute_tool" => rt.ext_execute_tool(&params).await,
            "refresh_models" => {
                let Some(host) = rt.core.ext.host() else {
                    return Ok(json!({ "errors": {} }));
                };
                let providers = params.get("providers").and_then(Value::as_array).map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(str::to_string))
                        .collect()
                });
                let options = super::model_refresh::RefreshOptions {
                    providers,
                    // Pi's default: the network unless PI_OFFLINE is set.
                    allow_network: params
                        .get("allowNetwork")
                        .and_then(Value::as_bool)
                        .unwrap_or_else(|| std::env::var_os("PI_OFFLINE").is_none()),
                    force: params.get("force").and_then(Value::as_bool),
                };
                let (allow_network, force) = (options.allow_network, options.force);
                let selected = options.providers.clone();
                let mut errors =
                    super::model_refresh::refresh(&host, &rt.core.registry, options).await;
                // Built-in providers' catalogs (Pi's catalog service, the llama.cpp server).
                if allow_network {
                    let builtin = crate::runtime::refresh_builtin(
                        &rt.core,
                        selected.as_deref(),
                        force == Some(true),
                    )
                    .await;
                    errors.extend(builtin);
                }
                lock(&rt.core.registry).reload_store();
                Ok(json!({ "errors": errors }))
            }
            // `ctx.modelRegistry.classify()` / `generateImages()`: the model as the extension
            // gives it, credentials of its provider.
            "classify" | "generate_images" => {
                let model = params
                    .get("model")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let context = params.get("context").cloned().unwrap_or(Value::Null);
                let classify = method == "classify";
                let (want, noun) = if classify {
                    ("classifier", "a classifier")
                } else {
                    ("image", "an image")
                };
                let actual = model.get("type").and_then(Value::as_str).unwrap_or("chat");
                if actual != want {
                    let text = format!(
                        "Model {}/{} is not {noun} model",
                        model.get("provider").and_then(Value::as_str).unwrap_or(""),
                        model.get("id").and_then(Value::as_str).unwrap_or("")
                    );
                    return Ok(if classify {
                        pi_ai::classify::error_result(&model, &text, false)
                    } else {
                        pi_ai::images::error_result(&model, &text, false)
                    });
                }
                let host = crate::runtime::codemode_models::SessionModels {
                    core: Arc::downgrade(&rt.core),
                };
                let cancel = tokio_util::sync::CancellationToken::new();
                let kind = if classify {
                    crate::runtime::codemode_models::Kind::Classify
                } else {
                    crate::runtime::codemode_models::Kind::Images
                };
                // No signal: `ctx.modelRegistry.classify(model, context, options)` passes none.
                let options = params.get("options");
                let tuning = crate::runtime::codemode_models::Tuning {
                    signal: false,
                    temperature: options
                        .and_then(|o| o.get("temperature"))
                        .and_then(Value::as_f64),
                    max_retries: options
                        .and_then(|o| o.get("maxRetries"))
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok()),
                };
                Ok(host.run_with(kind, model, context, cancel, tuning).await)
            }
            "get_api_key" => {
                let provider = text(&params, "provider")?;
                let model = lock(&rt.core.registry)
                    .all_models()
                    .into_iter()
                    .find(|m| m.provider == provider);
                let auth = match model {
                    Some(m) => pi_registry::request_auth_shared(&rt.core.registry, &m)
                        .await
                        .ok(),
                    None => None,
                };
                match auth {
                    Some(auth) => Ok(json!({"apiKey": auth.api_key})),
                    None => Ok(json!({})),
                }
            }
            "new_session" => {
                let parent = params
                    .get("parentSession")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let cancelled = rt.new_session(parent).await?;
                Ok(json!({ "cancelled": cancelled }))
            }
            "switch_session" => {
                let cancelled = rt.switch_session(text(&params, "sessionPath")?).await?;
                Ok(json!({ "cancelled": cancelled }))
            }
            "fork" => {
                let (_, cancelled) = rt.fork(text(&params, "entryId")?).await?;
                Ok(json!({ "cancelled": cancelled }))
            }
            "shutdown" => {
                rt.core.request_shutdown();
                Ok(Value::Null)
            }
            "run_builtin_tool" => rt.run_builtin_tool(&params).await,
            "send_user_message" => {
                rt.ext_send_user_message(&params).await;
                Ok(Value::Null)
            }
            "wait_for_idle" => {
                let mut busy = rt.core.busy.subscribe();
                let _ = busy.wait_for(|b| !*b).await;
                Ok(Value::Null)
            }
            "compact" => {
                let instructions = params
                    .get("customInstructions")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                rt.compact(instructions).await.and_then(|r| to_json(&r))
            }
            other => Err(format!("pi in Rust does not support `{other}` yet")),
        }
    }

    fn gone_now(&self, reason: String) {
        let Some(core) = self.core.upgrade() else {
            return;
        };
        eprintln!("pi: {reason}; the session goes on without extensions");
        let core2 = Arc::clone(&core);
        tokio::spawn(async move {
            core2.ext_error("<host>", "host", &reason).await;
        });
        core.ext.host_gone();
    }
}

/// `ctx.sessionManager`'s read-only methods.
fn session_query(rt: &Runtime, params: &Value) -> CallResult {
    let session = lock(&rt.core.session);
    match text(params, "what")? {
        "header" => Ok(Value::Object(session.header().clone())),
        "entries" => to_json(&session.entries()),
        "branch" => {
            let from = params.get("fromId").and_then(Value::as_str);
            to_json(&session.branch_entries(from))
        }
        "tree" => session
            .tree()
            .to_json()
            .map_err(|e| e.to_string())
            .and_then(|t| parse_js_json(&t)),
        "leafId" => Ok(json!(session.leaf_id())),
        "leafEntry" => to_json(&session.leaf_entry()),
        "entry" => to_json(&session.entry(text(params, "id")?)),
        "label" => Ok(json!(
            session.label(text(params, "id")?).map(|l| l.label.clone())
        )),
        "sessionFile" => Ok(json!(session.session_file())),
        "sessionDir" => Ok(json!(session.session_dir())),
        "sessionId" => Ok(json!(session.session_id())),
        "sessionName" => Ok(json!(session.session_name())),
        "cwd" => Ok(json!(session.cwd())),
        "contextEntries" => to_json(&session.context_entries()),
        other => Err(format!("unknown session query `{other}`")),
    }
}

/// The state getters of `pi` and `ctx` that the dispatch state does not carry.
fn state_query(rt: &Runtime, params: &Value) -> CallResult {
    match text(params, "what")? {
        "activeTools" => Ok(json!(rt.active_tool_names())),
        "allTools" => Ok(Value::Array(rt.all_tool_infos())),
        "commands" => to_json(&rt.commands()),
        "settings" => Ok(Value::Object(lock(&rt.core.res).settings.merged())),
        "contextUsage" => to_json(&rt.context_usage()),
        // During a run whose before_agent_start forced a prompt, that prompt is the effective one.
        "systemPrompt" => {
            let forced = lock(&rt.core.run).forced_system_prompt.clone();
            Ok(json!(
                forced.unwrap_or_else(|| rt.core.system_prompt_text(&rt.agent))
            ))
        }
        "systemPromptOptions" => {
            let base = rt.core.prompt_options(&rt.agent);
            let run = lock(&rt.core.run).prompt_options.clone();
            Ok(run.unwrap_or(base).to_json())
        }
        "thinkingLevel" => to_json(&rt.thinking_level()),
        "availableThinkingLevels" => to_json(&rt.available_thinking_levels()),
        "scopedModels" => Ok(Value::Array(
            lock(&rt.core.scoped_models)
                .iter()
                .map(|s| json!({"model": s.model, "thinkingLevel": s.thinking}))
                .collect(),
        )),
        "projectTrusted" => Ok(json!(lock(&rt.core.res).project_trusted)),
        other => Err(format!("unknown state query `{other}`")),
    }
}

/// `ctx.modelRegistry`'s synchronous methods.
fn models_query(rt: &Runtime, params: &Value) -> CallResult {
    let registry = lock(&rt.core.registry);
    match text(params, "what")? {
        "all" => to_json(&registry.all_models()),
        "available" => to_json(&registry.available_models()),
        "find" => to_json(&registry.find(text(params, "provider")?, text(params, "id")?)),
        "hasConfiguredAuth" => Ok(json!(
            registry.has_configured_auth(text(params, "provider")?)
        )),
        "isUsingOAuth" => Ok(json!(registry.is_using_oauth(text(params, "provider")?))),
        "providers" => Ok(json!(registry.provider_ids())),
        // Classifier and image models (chat models go through `all`/`available`).
        "ofType" => to_json(&registry.models_of_type(
            text(params, "type")?,
            params.get("provider").and_then(Value::as_str),
        )),
        "availableOfType" => to_json(&registry.available_of_type(
            text(params, "type")?,
            params.get("provider").and_then(Value::as_str),
        )),
        "modelOfType" => to_json(&registry.model_of_type(
            text(params, "type")?,
            text(params, "provider")?,
            text(params, "id")?,
        )),
        other => Err(format!("unknown model query `{other}`")),
    }
}
