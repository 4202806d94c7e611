//! The JSON Schema check Pi runs over `models.json` (TypeBox 1.x `Errors`), reduced to the
//! keywords that schema uses, reporting errors in TypeBox's order with its English messages and
//! its cap of 8 errors. The schema itself is Pi's, exported by `scripts/gen-catalog.mjs`.

use serde_json::{Map, Value};
use std::sync::OnceLock;

static SCHEMA_TEXT: &str = include_str!("../data/models-schema.json");
const MAX_ERRORS: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SchemaError {
    pub keyword: &'static str,
    /// JSON pointer of the offending value (`/providers/x/models/0`), keys unescaped.
    pub instance_path: String,
    pub message: String,
    /// For `required`: the first missing property.
    pub missing: Option<String>,
}

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| serde_json::from_str(SCHEMA_TEXT).unwrap_or(Value::Bool(true)))
}

/// Errors of `value` against Pi's models.json schema (empty when valid).
pub(crate) fn validate_models_json(value: &Value) -> Vec<SchemaError> {
    let mut ctx = Ctx::default();
    check(&mut ctx, schema(), "", value);
    ctx.errors
}

#[derive(Default)]
struct Ctx {
    errors: Vec<SchemaError>,
}

impl Ctx {
    fn full(&self) -> bool {
        self.errors.len() >= MAX_ERRORS
    }

    fn add(&mut self, keyword: &'static str, path: &str, message: String) -> bool {
        self.add_error(SchemaError {
            keyword,
            instance_path: path.to_string(),
            message,
            missing: None,
        })
    }

    fn add_error(&mut self, error: SchemaError) -> bool {
        if !self.full() {
            self.errors.push(error);
        }
        false
    }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "number" => value.as_f64().is_some_and(f64::is_finite),
        "null" => value.is_null(),
        "string" => value.is_string(),
        _ => true,
    }
}

/// `^.*$` without the `s` flag: keys with line terminators do not match.
fn pattern_matches(pattern: &str, key: &str) -> bool {
    if pattern == "^.*$" {
        return !key.contains(['\n', '\r', '\u{2028}', '\u{2029}']);
    }
    true
}

/// One schema against one value; `&` (not `&&`) everywhere so every keyword reports, as TypeBox's
/// `ErrorSchema` does.
fn check(ctx: &mut Ctx, schema: &Value, path: &str, value: &Value) -> bool {
    if ctx.full() {
        return false;
    }
    let schema = match schema {
        Value::Bool(true) => return true,
        Value::Bool(false) => return ctx.add("boolean", path, "schema is false".into()),
        Value::Object(s) => s,
        _ => return true,
    };
    let mut ok = true;
    if let Some(t) = schema.get("type") {
        ok &= check_type(ctx, t, path, value);
    }
    if let Value::Object(obj) = value {
        ok &= check_object(ctx, schema, path, obj);
    }
    if let Value::Array(items) = value {
        ok &= check_array(ctx, schema, path, items);
    }
    if let Value::String(s) = value
        && let Some(min) = schema.get("minLength").and_then(Value::as_f64)
    {
        let len = s.encode_utf16().count() as f64;
        if len < min {
            ok &= ctx.add(
                "minLength",
                path,
                format!(
                    "must not have fewer than {} characters",
                    pi_js::number_to_string(min)
                ),
            );
        }
    }
    if let Some(n) = value.as_f64() {
        ok &= check_number(ctx, schema, path, n);
    }
    if let Some(expected) = schema.get("const")
        && !json_equal(value, expected)
    {
        ok &= ctx.add("const", path, "must be equal to constant".into());
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.iter().any(|o| json_equal(value, o))
    {
        ok &= ctx.add(
            "enum",
            path,
            "must be equal to one of the allowed values".into(),
        );
    }
    if let Some(Value::Array(options)) = schema.get("anyOf") {
        ok &= check_any_of(ctx, options, path, value);
    }
    ok
}

fn check_type(ctx: &mut Ctx, t: &Value, path: &str, value: &Value) -> bool {
    let (matches, message) = match t {
        Value::String(name) => (type_matches(name, value), format!("must be {name}")),
        Value::Array(names) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            (
                names.iter().any(|n| type_matches(n, value)),
                format!("must be either {}", names.join(" or ")),
            )
        }
        _ => (true, String::new()),
    };
    matches || ctx.add("type", path, message)
}

fn check_object(
    ctx: &mut Ctx,
    schema: &Map<String, Value>,
    path: &str,
    obj: &Map<String, Value>,
) -> bool {
    let mut ok = true;
    if let Some(Value::Array(required)) = schema.get("required") {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !obj.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            ok &= ctx.add_error(SchemaError {
                keyword: "required",
                instance_path: path.to_string(),
                message: format!("must have required properties {}", missing.join(", ")),
                missing: missing.first().map(|s| s.to_string()),
            });
        }
    }
    if let Some(additional) = schema.get("additionalProperties") {
        let known = |key: &str| {
            schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(key))
                || schema
                    .get("patternProperties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| p.keys().any(|pat| pattern_matches(pat, key)))
        };
        let mut extra = false;
        for (key, child) in obj {
            if !known(key) && !check(ctx, additional, &format!("{path}/{key}"), child) {
                extra = true;
            }
        }
        if extra {
            ok &= ctx.add(
                "additionalProperties",
                path,
                "must not have additional properties".into(),
            );
        }
    }
    if let Some(Value::Object(patterns)) = schema.get("patternProperties") {
        for (pattern, sub) in patterns {
            for (key, child) in obj {
                if pattern_matches(pattern, key) {
                    ok &= check(ctx, sub, &format!("{path}/{key}"), child);
                }
            }
        }
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (key, sub) in props {
            if let Some(child) = obj.get(key) {
                ok &= check(ctx, sub, &format!("{path}/{key}"), child);
            }
        }
    }
    ok
}

fn check_array(ctx: &mut Ctx, schema: &Map<String, Value>, path: &str, items: &[Value]) -> bool {
    let mut ok = true;
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            ok &= check(ctx, item_schema, &format!("{path}/{i}"), item);
        }
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_f64)
        && items.len() as f64 > max
    {
        ok &= ctx.add(
            "maxItems",
            path,
            format!(
                "must not have more than {} items",
                pi_js::number_to_string(max)
            ),
        );
    }
    if let Some(min) = schema.get("minItems").and_then(Value::as_f64)
        && (items.len() as f64) < min
    {
        ok &= ctx.add(
            "minItems",
            path,
            format!(
                "must not have fewer than {} items",
                pi_js::number_to_string(min)
            ),
        );
    }
    ok
}

fn check_number(ctx: &mut Ctx, schema: &Map<String, Value>, path: &str, n: f64) -> bool {
    let mut ok = true;
    type Rule = (&'static str, &'static str, fn(f64, f64) -> bool);
    let rules: [Rule; 4] = [
        ("exclusiveMaximum", "<", |n, l| n < l),
        ("exclusiveMinimum", ">", |n, l| n > l),
        ("maximum", "<=", |n, l| n <= l),
        ("minimum", ">=", |n, l| n >= l),
    ];
    for (keyword, comparison, holds) in rules {
        if let Some(limit) = schema.get(keyword).and_then(Value::as_f64)
            && !holds(n, limit)
        {
            ok &= ctx.add(
                keyword,
                path,
                format!("must be {comparison} {}", pi_js::number_to_string(limit)),
            );
        }
    }
    ok
}

/// Each operand gets its own error context; only if none matches are their errors kept, followed
/// by the `anyOf` error.
fn check_any_of(ctx: &mut Ctx, options: &[Value], path: &str, value: &Value) -> bool {
    let mut failed = Vec::new();
    for option in options {
        let mut sub = Ctx::default();
        if check(&mut sub, option, path, value) {
            return true;
        }
        failed.push(sub);
    }
    for sub in failed {
        for error in sub.errors {
            ctx.add_error(error);
        }
    }
    ctx.add("anyOf", path, "must match a schema in anyOf".into())
}

fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(v: Value) -> Vec<(String, String)> {
        validate_models_json(&v)
            .into_iter()
            .map(|e| (e.instance_path, e.message))
            .collect()
    }

    #[test]
    fn valid_config_has_no_errors() {
        let v = json!({"providers": {"p": {"baseUrl": "u", "api": "openai-completions",
            "models": [{"id": "m", "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}]}}});
        assert_eq!(errors(v), vec![]);
    }

    #[test]
    fn errors_follow_schema_property_order() {
        let v = json!({"providers": {"y": {"models": [{"id": "m", "contextWindow": 0,
            "input": ["video"], "reasoning": "yes"}]}}});
        assert_eq!(
            errors(v),
            vec![
                (
                    "/providers/y/models/0/reasoning".into(),
                    "must be boolean".into()
                ),
                (
                    "/providers/y/models/0/input/0".into(),
                    "must be equal to one of the allowed values".into()
                ),
                (
                    "/providers/y/models/0/contextWindow".into(),
                    "must be > 0".into()
                ),
            ]
        );
    }

    #[test]
    fn any_of_reports_each_branch_then_itself() {
        let v = json!({"providers": {"p": {"compat": {"maxTokensField": "x"}}}});
        let path = "/providers/p/compat/maxTokensField".to_string();
        assert_eq!(
            errors(v),
            vec![
                (path.clone(), "must be equal to constant".into()),
                (path.clone(), "must be equal to constant".into()),
                (path, "must match a schema in anyOf".into()),
            ]
        );
    }

    #[test]
    fn missing_providers_is_a_required_error() {
        let e = validate_models_json(&json!({}));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].missing.as_deref(), Some("providers"));
        assert_eq!(e[0].message, "must have required properties providers");
    }
}
