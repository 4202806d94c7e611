//! Loading `<agent-dir>/models.json` (`model-config.js`): a missing file is an empty config; a
//! file that cannot be read, parsed or validated is ignored *entirely* and described by one error
//! text in Pi's words (shown by `--list-models`, silent in RPC mode).

use super::jsonc::strip_json_comments;
use super::schema::{SchemaError, validate_models_json};
use serde_json::{Map, Value};
use std::io::ErrorKind;
use std::path::Path;

pub(crate) type JsObject = Map<String, Value>;

/// One provider entry of `models.json`, already validated against Pi's schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProviderConfig {
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub api: Option<String>,
    pub oauth: Option<String>,
    /// The display name of an OAuth login an extension registered with the provider
    /// (`registerProvider(id, { oauth })`); its functions run in the extension host.
    pub extension_oauth: Option<String>,
    pub headers: Option<Vec<(String, String)>>,
    pub compat: Option<JsObject>,
    pub auth_header: Option<bool>,
    pub models: Option<Vec<JsObject>>,
    pub model_overrides: Option<Vec<(String, JsObject)>>,
}

impl ProviderConfig {
    pub(crate) fn from_object(obj: &JsObject) -> ProviderConfig {
        let string = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let object = |k: &str| obj.get(k).and_then(Value::as_object).cloned();
        ProviderConfig {
            name: string("name"),
            base_url: string("baseUrl"),
            api_key: string("apiKey"),
            api: string("api"),
            oauth: string("oauth"),
            extension_oauth: None,
            headers: obj.get("headers").and_then(Value::as_object).map(|h| {
                h.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            }),
            compat: object("compat"),
            auth_header: obj.get("authHeader").and_then(Value::as_bool),
            models: obj
                .get("models")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|m| m.as_object().cloned()).collect()),
            model_overrides: obj
                .get("modelOverrides")
                .and_then(Value::as_object)
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_object()?.clone())))
                        .collect()
                }),
        }
    }

    pub(crate) fn model_override(&self, id: &str) -> Option<&JsObject> {
        self.model_overrides
            .as_ref()?
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, v)| v)
    }

    pub(crate) fn model_definition(&self, id: &str) -> Option<&JsObject> {
        self.models
            .as_ref()?
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
    }
}

/// One load of `models.json`: providers in file order, or the reason it was ignored.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelsConfig {
    pub providers: Vec<(String, ProviderConfig)>,
    pub error: Option<String>,
}

impl ModelsConfig {
    pub(crate) fn provider(&self, id: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|(k, _)| k == id).map(|(_, c)| c)
    }

    pub(crate) fn load(path: &Path) -> ModelsConfig {
        let shown = path.display();
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return ModelsConfig::default(),
            Err(e) => {
                return ModelsConfig::failed(format!(
                    "Failed to load models.json: {}\n\nFile: {shown}",
                    node_read_error(&e, path)
                ));
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        ModelsConfig::parse(&text, &shown.to_string())
    }

    pub(crate) fn parse(text: &str, shown_path: &str) -> ModelsConfig {
        let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
        let parsed = match pi_js::parse::parse_js_json(&strip_json_comments(text)) {
            Ok(v) => v,
            Err(msg) => {
                return ModelsConfig::failed(format!(
                    "Failed to parse models.json: {msg}\n\nFile: {shown_path}"
                ));
            }
        };
        let errors = validate_models_json(&parsed);
        if !errors.is_empty() {
            let lines: Vec<String> = errors.iter().map(format_schema_error).collect();
            return ModelsConfig::failed(format!(
                "Invalid models.json schema:\n{}\n\nFile: {shown_path}",
                lines.join("\n")
            ));
        }
        let providers = parsed
            .get("providers")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter_map(|(id, v)| {
                        Some((id.clone(), ProviderConfig::from_object(v.as_object()?)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        ModelsConfig {
            providers,
            error: None,
        }
    }

    fn failed(error: String) -> ModelsConfig {
        ModelsConfig {
            providers: Vec::new(),
            error: Some(error),
        }
    }
}

/// `  - <dotted path>: <message>`; a `required` error names the missing key in the path.
fn format_schema_error(e: &SchemaError) -> String {
    let base = e.instance_path.trim_start_matches('/').replace('/', ".");
    let path = match (&e.missing, e.keyword) {
        (Some(missing), "required") if base.is_empty() => missing.clone(),
        (Some(missing), "required") => format!("{base}.{missing}"),
        _ if base.is_empty() => "root".to_string(),
        _ => base,
    };
    format!("  - {path}: {}", e.message)
}

/// Node's `readFile` error message for the common cases.
fn node_read_error(e: &std::io::Error, path: &Path) -> String {
    match (e.kind(), e.raw_os_error()) {
        (ErrorKind::PermissionDenied, _) => {
            format!("EACCES: permission denied, open '{}'", path.display())
        }
        (_, Some(21)) => "EISDIR: illegal operation on a directory, read".to_string(),
        _ => e.to_string(),
    }
}

/// A string member of an optional object.
pub(crate) fn str_of<'a>(obj: Option<&'a JsObject>, key: &str) -> Option<&'a str> {
    obj?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let c = ModelsConfig::parse(
            "{\n // x\n \"providers\": {\"p\": {\"baseUrl\": \"u\", \"apiKey\": \"k\",},},\n}",
            "/a/models.json",
        );
        assert_eq!(c.error, None);
        assert_eq!(c.providers.len(), 1);
        assert_eq!(c.providers[0].1.api_key.as_deref(), Some("k"));
    }

    #[test]
    fn parse_errors_use_v8_messages() {
        let c = ModelsConfig::parse("{\"providers\": ", "/a/models.json");
        assert_eq!(
            c.error.as_deref(),
            Some(
                "Failed to parse models.json: Unexpected end of JSON input\n\nFile: /a/models.json"
            )
        );
    }

    #[test]
    fn schema_errors_are_listed_with_dotted_paths() {
        let c = ModelsConfig::parse(
            r#"{"providers": {"p": {"models": [{"name": ""}]}}}"#,
            "/a/models.json",
        );
        assert_eq!(
            c.error.as_deref(),
            Some(
                "Invalid models.json schema:\n  - providers.p.models.0.id: must have required properties id\n  - providers.p.models.0.name: must not have fewer than 1 characters\n\nFile: /a/models.json"
            )
        );
        assert!(c.providers.is_empty());
    }
}
