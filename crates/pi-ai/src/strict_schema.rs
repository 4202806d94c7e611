//! Strict JSON-schema tool declarations (Pi's `constrained-sampling.js`, JSON-schema part): a
//! tool with `constrainedSampling: {type:"json_schema"}` is sent with `strict: true` and a
//! schema rewritten to the strict subset when the API supports it.

use pi_protocol::tool::{ConstrainedSampling, ConstrainedSamplingConfig, SchemaStrictness, Tool};
use serde_json::{Map, Value, json};

const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// Extra keywords an API's strict mode rejects (`key`, `value`).
pub type KeywordFilter = fn(&str, &Value) -> bool;

fn structured(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    types.contains(&"object")
        || types.contains(&"array")
        || o.contains_key("properties")
        || o.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(o) = schema.as_object() else {
        return false;
    };
    match o.get("type") {
        Some(Value::String(s)) if s == "null" => return true,
        Some(Value::Array(a)) if a.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    if o.get("const") == Some(&Value::Null)
        || o.get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
    {
        return true;
    }
    o.get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(allows_null))
}

fn strict_node(schema: &mut Value, filter: Option<KeywordFilter>) -> Result<(), String> {
    let Some(o) = schema.as_object_mut() else {
        return Err("boolean schemas are unsupported".into());
    };
    for key in UNSUPPORTED_KEYS {
        if o.contains_key(key) {
            return Err(format!("{key} schemas are unsupported"));
        }
    }
    if let Some(f) = filter {
        for (k, v) in o.iter() {
            if f(k, v) {
                return Err(format!(
                    "{k}: {} is unsupported",
                    pi_js::json::to_js_string(v).unwrap_or_default()
                ));
            }
        }
    }
    if !o.contains_key("type") && !o.contains_key("anyOf") && !o.contains_key("enum") {
        return Err("schemas without a type are unsupported".into());
    }
    if let Some(any) = o.get_mut("anyOf") {
        let Some(variants) = any.as_array_mut().filter(|a| !a.is_empty()) else {
            return Err("anyOf must contain at least one schema".into());
        };
        for v in variants {
            if structured(v) {
                return Err("object and array unions are unsupported".into());
            }
            strict_node(v, filter)?;
        }
    }
    if let Some(items) = o.get_mut("items") {
        if items.is_array() {
            return Err("tuple schemas are unsupported".into());
        }
        strict_node(items, filter)?;
    }
    let is_object = o.get("type").and_then(Value::as_str) == Some("object");
    if o.contains_key("properties") && !is_object {
        return Err("properties require type object".into());
    }
    if !is_object {
        return Ok(());
    }
    if o.get("additionalProperties")
        .is_some_and(|v| v != &Value::Bool(false))
    {
        return Err("schema-valued or true additionalProperties is unsupported".into());
    }
    if o.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("object properties must be a schema map".into());
    }
    let required: Vec<String> = match o.get("required") {
        None => vec![],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        Some(_) => return Err("object required must be a string array".into()),
    };
    // Taken out of the working copy (and put back in place below), not copied again.
    let mut props = match o.get_mut("properties") {
        Some(Value::Object(p)) => std::mem::take(p),
        _ => Map::new(),
    };
    if required.iter().any(|k| !props.contains_key(k)) {
        return Err("required contains an unknown property".into());
    }
    let names: Vec<String> = props.keys().cloned().collect();
    for (k, prop) in props.iter_mut() {
        strict_node(prop, filter)?;
        if !required.contains(k) && !allows_null(prop) {
            // Moved, not copied (`json!` would serialize the property into a new value).
            let variants = vec![std::mem::take(prop), json!({"type": "null"})];
            let mut wrapped = Map::new();
            wrapped.insert("anyOf".into(), Value::Array(variants));
            *prop = Value::Object(wrapped);
        }
    }
    if o.contains_key("properties") {
        o.insert("properties".into(), Value::Object(props));
    }
    o.insert("required".into(), Value::from(names));
    o.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// The schema rewritten to the strict subset, or why it cannot be.
pub fn make_strict(schema: &Value, filter: Option<KeywordFilter>) -> Result<Value, String> {
    let mut s = schema.clone();
    if !s.is_object() {
        return Err("root schema must have type object".into());
    }
    strict_node(&mut s, filter)?;
    if s.get("type").and_then(Value::as_str) != Some("object") {
        return Err("root schema must have type object".into());
    }
    Ok(s)
}

fn json_schema_config(tool: &Tool) -> Option<SchemaStrictness> {
    match &tool.constrained_sampling {
        Some(ConstrainedSampling::Config(ConstrainedSamplingConfig::JsonSchema { strict })) => {
            Some(*strict)
        }
        _ => None,
    }
}

/// Whether the tool asks for strict sampling only when possible (`strict: "prefer"`).
pub fn prefers_strict(tool: &Tool) -> bool {
    json_schema_config(tool) == Some(SchemaStrictness::Prefer)
}

/// `Some(true)` when the tool goes out strict, `None` when not; an error when the tool requires
/// strict sampling the API or schema cannot give (Pi's message).
pub fn resolve_strict(
    tool: &Tool,
    supported: bool,
    filter: Option<KeywordFilter>,
) -> Result<Option<bool>, String> {
    resolve(tool, supported, filter).map(|strict| strict.map(|_| true))
}

/// [`resolve_strict`] and the parameters to send with it: the strict rewrite when the tool goes
/// out strict, else the declared schema. The rewrite is made once for both answers (a filter
/// only refuses schemas, it never changes a rewrite).
pub fn resolve_with_schema(
    tool: &Tool,
    supported: bool,
    filter: Option<KeywordFilter>,
) -> Result<(Option<bool>, Value), String> {
    Ok(match resolve(tool, supported, filter)? {
        Some(strict) => (Some(true), strict),
        None => (None, Value::clone(&tool.parameters)),
    })
}

/// The strict rewrite when the tool goes out strict.
fn resolve(
    tool: &Tool,
    supported: bool,
    filter: Option<KeywordFilter>,
) -> Result<Option<Value>, String> {
    let Some(strictness) = json_schema_config(tool) else {
        return Ok(None);
    };
    let require = strictness == SchemaStrictness::Require;
    if supported {
        return match make_strict(&tool.parameters, filter) {
            Ok(strict) => Ok(Some(strict)),
            Err(_) if !require => Ok(None),
            Err(e) => Err(format!(
                "Tool \"{}\" requires JSON-schema constrained sampling, but {e}.",
                tool.name
            )),
        };
    }
    if require {
        return Err(format!(
            "Tool \"{}\" requires JSON-schema constrained sampling, but strict tools are unsupported.",
            tool.name
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn optional_properties_become_nullable_and_all_required() {
        let s = json!({"type":"object","required":["path"],"properties":{"path":{"type":"string"},"limit":{"type":"number"}}});
        assert_eq!(
            to_js_string(&make_strict(&s, None).unwrap()).unwrap(),
            r#"{"type":"object","required":["path","limit"],"properties":{"path":{"type":"string"},"limit":{"anyOf":[{"type":"number"},{"type":"null"}]}},"additionalProperties":false}"#
        );
        assert_eq!(
            make_strict(&json!({"type":"object","properties":{"a":{}}}), None).unwrap_err(),
            "schemas without a type are unsupported"
        );
    }
}
