//! The resource tools Codex and OpenCode use, over every enabled server with resources:
//! `list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`.

use crate::connection::Connection;
use crate::tool::write_output_file;
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{ImageContent, TextContent, UserBlock};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub const LIST_RESOURCES: &str = "list_mcp_resources";
pub const LIST_TEMPLATES: &str = "list_mcp_resource_templates";
pub const READ_RESOURCE: &str = "read_mcp_resource";

pub fn is_resource_tool(name: &str) -> bool {
    [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE].contains(&name)
}

/// The servers the resource tools reach.
pub trait ResourceServers: Send + Sync {
    fn resource_servers(&self) -> Vec<Arc<Connection>>;
}

#[derive(Clone, Copy)]
enum Kind {
    Resources,
    Templates,
    Read,
}

struct ResourceTool {
    kind: Kind,
    declaration: Tool,
    servers: Arc<dyn ResourceServers>,
}

fn list_parameters() -> Value {
    json!({"type": "object", "properties": {
        "server": {"type": "string", "description": "MCP server name. Omit to list every server with resources."},
        "cursor": {"type": "string", "description": "Opaque cursor from a previous call with the same server; omit for the first page."}
    }, "additionalProperties": false})
}

/// The three tools, sharing one view of the servers.
pub fn resource_tools(servers: Arc<dyn ResourceServers>) -> Vec<Arc<dyn AgentTool>> {
    let make =
        |kind: Kind, name: &str, description: &str, parameters: Value| -> Arc<dyn AgentTool> {
            Arc::new(ResourceTool {
                kind,
                declaration: Tool {
                    name: name.into(),
                    description: description.into(),
                    parameters: parameters.into(),
                    constrained_sampling: None,
                    rest: Default::default(),
                },
                servers: Arc::clone(&servers),
            })
        };
    vec![
        make(
            Kind::Resources,
            LIST_RESOURCES,
            "Lists resources provided by MCP servers, such as files, database schemas, or application data, as JSON. Prefer resources over web search when they cover the question.",
            list_parameters(),
        ),
        make(
            Kind::Templates,
            LIST_TEMPLATES,
            "Lists the URI templates of resources MCP servers can produce from parameters, as JSON.",
            list_parameters(),
        ),
        make(
            Kind::Read,
            READ_RESOURCE,
            "Reads one resource of an MCP server by server name and URI.",
            json!({"type": "object", "properties": {
                "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
                "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."}
            }, "required": ["server", "uri"], "additionalProperties": false}),
        ),
    ]
}

fn string_arg(args: &Map<String, Value>, key: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(pi_js::trim(s).to_string()).filter(|s| !s.is_empty())),
        Some(_) => Err(ToolError(format!("{key} must be a string"))),
    }
}

fn is_app_resource(item: &Value) -> bool {
    let uri = item
        .get("uri")
        .or_else(|| item.get("uriTemplate"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("");
    uri.starts_with("ui://")
        || mime
            .to_lowercase()
            .replace(' ', "")
            .contains("profile=mcp-app")
        || mime
            .to_lowercase()
            .replace(' ', "")
            .contains("profile=\"mcp-app\"")
}

fn listed(server: &str, item: &Value, name_key: &str) -> Value {
    let mut out = Map::new();
    out.insert("server".into(), json!(server));
    if let Value::Object(m) = item {
        for (k, v) in m {
            if k != "_meta" && k != "icons" {
                out.insert(k.clone(), v.clone());
            }
        }
        if !out.contains_key("name")
            && let Some(n) = m.get(name_key)
        {
            out.insert("name".into(), n.clone());
        }
    }
    Value::Object(out)
}

fn json_result(tool: &str, server: Option<&str>, payload: Value) -> AgentToolResult {
    let text = pi_js::json::to_js_string(&payload).unwrap_or_default();
    let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
    r.details = Some(json!({"server": server.unwrap_or(""), "tool": tool}));
    r.structured_content = Some(payload);
    r
}

impl ResourceTool {
    fn find(&self, name: &str) -> Result<Arc<Connection>, ToolError> {
        let servers = self.servers.resource_servers();
        if let Some(s) = servers.iter().find(|s| s.name() == name) {
            return Ok(Arc::clone(s));
        }
        let available: Vec<&str> = servers.iter().map(|s| s.name()).collect();
        let hint = if available.is_empty() {
            String::new()
        } else {
            format!(". Servers with resources: {}", available.join(", "))
        };
        Err(ToolError(format!(
            "MCP server \"{name}\" has no resources{hint}"
        )))
    }

    async fn list(&self, args: Map<String, Value>) -> Result<AgentToolResult, ToolError> {
        let (method, key, name_key, tool) = match self.kind {
            Kind::Templates => (
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
                LIST_TEMPLATES,
            ),
            _ => ("resources/list", "resources", "uri", LIST_RESOURCES),
        };
        let server = string_arg(&args, "server")?;
        let cursor = string_arg(&args, "cursor")?;
        if let Some(name) = &server {
            let conn = self.find(name)?;
            let page = conn
                .request(method, cursor.map(|c| json!({"cursor": c})))
                .await;
            let page = match page {
                Err(e)
                    if matches!(self.kind, Kind::Templates)
                        && e.starts_with("Method not found") =>
                {
                    json!({})
                }
                other => other.map_err(ToolError)?,
            };
            let items: Vec<Value> = page
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter(|i| !is_app_resource(i))
                        .map(|i| listed(name, i, name_key))
                        .collect()
                })
                .unwrap_or_default();
            let mut payload = json!({"server": name, key: items});
            if let Some(c) = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
            {
                payload["nextCursor"] = json!(c);
            }
            return Ok(json_result(tool, Some(name), payload));
        }
        if cursor.is_some() {
            return Err(ToolError(
                "cursor can only be used when a server is specified".into(),
            ));
        }
        let mut servers = self.servers.resource_servers();
        servers.sort_by(|a, b| pi_js::locale_compare(a.name(), b.name()));
        let mut items = Vec::new();
        let mut errors = Vec::new();
        for conn in servers {
            let result = match conn.client().await {
                Ok(client) => client
                    .list_all(method, key)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match result {
                Ok(list) => items.extend(
                    list.iter()
                        .filter(|i| !is_app_resource(i))
                        .map(|i| listed(conn.name(), i, name_key)),
                ),
                Err(e)
                    if matches!(self.kind, Kind::Templates)
                        && e.starts_with("Method not found") => {}
                Err(e) => errors.push(json!({"server": conn.name(), "error": e})),
            }
        }
        let mut payload = json!({key: items});
        if !errors.is_empty() {
            payload["errors"] = json!(errors);
        }
        Ok(json_result(tool, None, payload))
    }

    async fn read(&self, args: Map<String, Value>) -> Result<AgentToolResult, ToolError> {
        let server = string_arg(&args, "server")?
            .ok_or_else(|| ToolError("server must be provided".into()))?;
        let uri =
            string_arg(&args, "uri")?.ok_or_else(|| ToolError("uri must be provided".into()))?;
        let conn = self.find(&server)?;
        let result = conn
            .request("resources/read", Some(json!({"uri": uri})))
            .await
            .map_err(ToolError)?;
        let contents = result
            .get("contents")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut content = Vec::new();
        for c in &contents {
            let s = |k: &str| c.get(k).and_then(Value::as_str);
            if contents.len() > 1 {
                content.push(UserBlock::Text(TextContent::new(format!(
                    "{}:",
                    s("uri").unwrap_or("")
                ))));
            }
            if let Some(t) = s("text") {
                content.push(UserBlock::Text(TextContent::new(t)));
            } else if let Some(blob) = s("blob") {
                let mime = s("mimeType");
                if mime.is_some_and(|m| m.starts_with("image/")) {
                    content.push(UserBlock::Image(ImageContent {
                        data: blob.into(),
                        mime_type: mime.unwrap_or("").into(),
                    }));
                } else {
                    let data =
                        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, blob)
                            .unwrap_or_default();
                    let kind = format!(
                        "{}, {}",
                        mime.unwrap_or("unknown type"),
                        crate::tool::format_size(data.len() as u64)
                    );
                    let text = match write_output_file("pi-mcp", ".bin", &data) {
                        Ok(p) => format!(
                            "[Binary resource {} ({kind}) saved to {p}]",
                            s("uri").unwrap_or("")
                        ),
                        Err(e) => format!(
                            "[Binary resource {} ({kind}) could not be saved: {e}]",
                            s("uri").unwrap_or("")
                        ),
                    };
                    content.push(UserBlock::Text(TextContent::new(text)));
                }
            }
        }
        let mut r = AgentToolResult::new(content);
        r.details = Some(json!({"server": server, "tool": READ_RESOURCE}));
        r.structured_content = Some(json!({"server": server, "uri": uri, "contents": contents}));
        Ok(r)
    }
}

impl AgentTool for ResourceTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, inv: ToolInvocation) -> ToolFuture {
        let this = ResourceTool {
            kind: self.kind,
            declaration: self.declaration.clone(),
            servers: Arc::clone(&self.servers),
        };
        Box::pin(async move {
            match this.kind {
                Kind::Read => this.read(inv.args).await,
                _ => this.list(inv.args).await,
            }
        })
    }
}
