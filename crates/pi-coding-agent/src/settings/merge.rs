//! How settings layers combine, as Pi does it: the project layer is deep-merged over the agent-dir
//! layer (objects merge key by key, everything else is replaced), except `defaultTools`, where a
//! list of only `+name`/`-name` entries extends the inherited list instead of replacing it.
//! Also the migrations Pi applies to every settings object it reads (old key names).

use serde_json::{Map, Value};

/// Tools enabled when no `defaultTools` setting changes them.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// `overrides` deep-merged over `base` (Pi's `deepMergeSettings`).
pub fn merge_layers(
    base: &Map<String, Value>,
    overrides: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = deep_merge(base, overrides);
    if let Some(tools) =
        merge_default_tools(base.get("defaultTools"), overrides.get("defaultTools"))
    {
        merged.insert("defaultTools".into(), tools);
    }
    merged
}

fn deep_merge(base: &Map<String, Value>, overrides: &Map<String, Value>) -> Map<String, Value> {
    let mut result = base.clone();
    for (key, value) in overrides {
        let merged = match (base.get(key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => Value::Object(deep_merge(b, o)),
            _ => value.clone(),
        };
        result.insert(key.clone(), merged);
    }
    result
}

/// Whether a tool selection entry is a `+name` or `-name` modifier.
pub fn is_tool_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

fn merge_default_tools(base: Option<&Value>, overrides: Option<&Value>) -> Option<Value> {
    let overrides = overrides?;
    match (base, overrides) {
        (Some(Value::Array(b)), Value::Array(o))
            if o.iter().all(|e| e.as_str().is_some_and(is_tool_modifier)) =>
        {
            Some(Value::Array(b.iter().chain(o).cloned().collect()))
        }
        _ => Some(overrides.clone()),
    }
}

/// Applies `+name`/`-name` entries of `entries` to `base` in order (others are ignored).
pub fn apply_tool_modifiers(base: &[String], entries: &[String]) -> Vec<String> {
    let mut tools = base.to_vec();
    for entry in entries.iter().filter(|e| is_tool_modifier(e)) {
        let name = &entry[1..];
        let index = tools.iter().position(|t| t == name);
        match (entry.starts_with('+'), index) {
            (true, None) if !name.is_empty() => tools.push(name.to_string()),
            (false, Some(i)) => {
                tools.remove(i);
            }
            _ => {}
        }
    }
    tools
}

/// The merged `defaultTools` list resolved to tool names: plain names replace the defaults,
/// then the modifiers apply in order (Pi's `resolveDefaultTools`).
pub fn resolve_default_tools(entries: &[String]) -> Vec<String> {
    let plain: Vec<String> = entries
        .iter()
        .filter(|e| !is_tool_modifier(e))
        .cloned()
        .collect();
    let base = if !plain.is_empty() || entries.is_empty() {
        plain
    } else {
        DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect()
    };
    apply_tool_modifiers(&base, entries)
}

/// Pi's `migrateSettings`: `queueMode` → `steeringMode`, `websockets` → `transport`, the old
/// `skills` object → `skills` list + `enableSkillCommands`, `retry.maxDelayMs` →
/// `retry.provider.maxRetryDelayMs`. Moved keys go to the end, as JavaScript's delete-and-add does.
pub fn migrate(settings: &mut Map<String, Value>) {
    if settings.contains_key("queueMode") && !settings.contains_key("steeringMode") {
        let v = settings.shift_remove("queueMode").unwrap_or(Value::Null);
        settings.insert("steeringMode".into(), v);
    }
    if !settings.contains_key("transport")
        && let Some(Value::Bool(ws)) = settings.get("websockets").cloned()
    {
        let transport = if ws { "websocket" } else { "sse" };
        settings.insert("transport".into(), Value::String(transport.into()));
        settings.shift_remove("websockets");
    }
    if let Some(Value::Object(skills)) = settings.get("skills").cloned() {
        if let Some(enable) = skills.get("enableSkillCommands")
            && !settings.contains_key("enableSkillCommands")
        {
            settings.insert("enableSkillCommands".into(), enable.clone());
        }
        match skills.get("customDirectories") {
            Some(Value::Array(dirs)) if !dirs.is_empty() => {
                settings.insert("skills".into(), Value::Array(dirs.clone()));
            }
            _ => {
                settings.shift_remove("skills");
            }
        }
    }
    if let Some(Value::Object(retry)) = settings.get_mut("retry") {
        let provider_max = match retry.get("provider") {
            Some(Value::Object(p)) => p.get("maxRetryDelayMs").filter(|v| !v.is_null()).cloned(),
            _ => None,
        };
        if let Some(max_delay @ Value::Number(_)) = retry.get("maxDelayMs").cloned()
            && provider_max.is_none()
        {
            let mut provider = match retry.get("provider") {
                Some(Value::Object(p)) => p.clone(),
                _ => Map::new(),
            };
            provider.insert("maxRetryDelayMs".into(), max_delay);
            retry.insert("provider".into(), Value::Object(provider));
        }
        retry.shift_remove("maxDelayMs");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn project_layer_merges_deeply() {
        let global = obj(
            json!({"compaction": {"enabled": false, "reserveTokens": 1}, "skills": ["a"], "theme": "x"}),
        );
        let project =
            obj(json!({"compaction": {"reserveTokens": 2}, "skills": ["b"], "theme": null}));
        let merged = merge_layers(&global, &project);
        assert_eq!(
            Value::Object(merged),
            json!({"compaction": {"enabled": false, "reserveTokens": 2}, "skills": ["b"], "theme": null})
        );
    }

    #[test]
    fn default_tools_modifiers_extend() {
        let global = obj(json!({"defaultTools": ["read", "+grep"]}));
        let project = obj(json!({"defaultTools": ["-read", "+ls"]}));
        let merged = merge_layers(&global, &project);
        assert_eq!(
            merged["defaultTools"],
            json!(["read", "+grep", "-read", "+ls"])
        );
        let project = obj(json!({"defaultTools": ["bash", "+ls"]}));
        assert_eq!(
            merge_layers(&global, &project)["defaultTools"],
            json!(["bash", "+ls"])
        );
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            resolve_default_tools(&s(&["read", "+grep", "-read", "+ls"])),
            s(&["grep", "ls"])
        );
        assert_eq!(
            resolve_default_tools(&s(&["-bash", "+powershell", "+grep"])),
            s(&["read", "edit", "write", "powershell", "grep"])
        );
        assert_eq!(resolve_default_tools(&[]), Vec::<String>::new());
    }

    #[test]
    fn migrations() {
        let mut s = obj(json!({"queueMode": "all", "websockets": true, "a": 1,
            "skills": {"enableSkillCommands": false, "customDirectories": ["d"]},
            "retry": {"maxDelayMs": 5, "enabled": true}}));
        migrate(&mut s);
        // Key order matters: these objects are written back to settings.json.
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"a":1,"skills":["d"],"retry":{"enabled":true,"provider":{"maxRetryDelayMs":5}},"steeringMode":"all","transport":"websocket","enableSkillCommands":false}"#
        );
        let mut s = obj(
            json!({"skills": {"customDirectories": []}, "retry": {"maxDelayMs": 5, "provider": {"maxRetryDelayMs": 1}}}),
        );
        migrate(&mut s);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"retry":{"provider":{"maxRetryDelayMs":1}}}"#
        );
    }
}
