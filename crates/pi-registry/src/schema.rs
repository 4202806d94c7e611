//! The JSON Schema check Pi runs over `models.json` (TypeBox 1.x `Errors`), reduced to the
//! keywords that schema uses, reporting errors in TypeBox's order with its English messages and
//! its cap of 8 errors. The schema itself is Pi's, exported by `scripts/gen-catalog.mjs`, and
//! built into the statics below by `build.rs` (which refuses keywords this check does not know).

use serde_json::{Map, Value};

const MAX_ERRORS: usize = 8;

/// One schema: `true`, `false`, or an object of keywords.
pub(crate) enum S {
    Any,
    /// `false` (Pi's schema has none today; build.rs would write one).
    #[allow(dead_code)]
    Never,
    Obj(&'static Obj),
}

/// The keywords of a schema object; `None` where the keyword is absent.
pub(crate) struct Obj {
    pub ty: Option<&'static str>,
    pub konst: Option<&'static str>,
    /// `enum` (all of Pi's are strings).
    pub one_of: Option<&'static [&'static str]>,
    pub required: Option<&'static [&'static str]>,
    pub properties: Option<&'static [(&'static str, S)]>,
    pub pattern_properties: Option<&'static [(&'static str, S)]>,
    pub additional_properties: Option<&'static S>,
    pub items: Option<&'static S>,
    pub any_of: Option<&'static [S]>,
    pub min_length: Option<f64>,
    pub max_items: Option<f64>,
    pub min_items: Option<f64>,
    pub exclusive_maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub minimum: Option<f64>,
}

impl Obj {
    pub const NONE: Obj = Obj {
        ty: None,
        konst: None,
        one_of: None,
        required: None,
        properties: None,
        pattern_properties: None,
        additional_properties: None,
        items: None,
        any_of: None,
        min_length: None,
        max_items: None,
        min_items: None,
        exclusive_maximum: None,
        exclusive_minimum: None,
        maximum: None,
        minimum: None,
    };
}

include!(concat!(env!("OUT_DIR"), "/models_schema.rs"));

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SchemaError {
    pub keyword: &'static str,
    /// JSON pointer of the offending value (`/providers/x/models/0`), keys unescaped.
    pub instance_path: String,
    pub message: String,
    /// For `required`: the first missing property.
    pub missing: Option<String>,
}

/// Errors of `value` against Pi's models.json schema (empty when valid).
pub(crate) fn validate_models_json(value: &Value) -> Vec<SchemaError> {
    let mut ctx = Ctx::default();
    check(&mut ctx, &MODELS_SCHEMA, "", value);
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
fn check(ctx: &mut Ctx, schema: &S, path: &str, value: &Value) -> bool {
    if ctx.full() {
        return false;
    }
    let schema = match schema {
        S::Any => return true,
        S::Never => return ctx.add("boolean", path, "schema is false".into()),
        S::Obj(s) => s,
    };
    let mut ok = true;
    if let Some(name) = schema.ty
        && !type_matches(name, value)
    {
        ok &= ctx.add("type", path, format!("must be {name}"));
    }
    if let Value::Object(obj) = value {
        ok &= check_object(ctx, schema, path, obj);
    }
    if let Value::Array(items) = value {
        ok &= check_array(ctx, schema, path, items);
    }
    if let Value::String(s) = value
        && let Some(min) = schema.min_length
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
    if let Some(expected) = schema.konst
        && value.as_str() != Some(expected)
    {
        ok &= ctx.add("const", path, "must be equal to constant".into());
    }
    if let Some(options) = schema.one_of
        && !options.iter().any(|o| value.as_str() == Some(*o))
    {
        ok &= ctx.add(
            "enum",
            path,
            "must be equal to one of the allowed values".into(),
        );
    }
    if let Some(options) = schema.any_of {
        ok &= check_any_of(ctx, options, path, value);
    }
    ok
}

fn check_object(ctx: &mut Ctx, schema: &Obj, path: &str, obj: &Map<String, Value>) -> bool {
    let mut ok = true;
    if let Some(required) = schema.required {
        let missing: Vec<&str> = required
            .iter()
            .copied()
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
    if let Some(additional) = schema.additional_properties {
        let known = |key: &str| {
            schema
                .properties
                .is_some_and(|p| p.iter().any(|(k, _)| *k == key))
                || schema
                    .pattern_properties
                    .is_some_and(|p| p.iter().any(|(pat, _)| pattern_matches(pat, key)))
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
    if let Some(patterns) = schema.pattern_properties {
        for (pattern, sub) in patterns {
            for (key, child) in obj {
                if pattern_matches(pattern, key) {
                    ok &= check(ctx, sub, &format!("{path}/{key}"), child);
                }
            }
        }
    }
    if let Some(props) = schema.properties {
        for (key, sub) in props {
            if let Some(child) = obj.get(*key) {
                ok &= check(ctx, sub, &format!("{path}/{key}"), child);
            }
        }
    }
    ok
}

fn check_array(ctx: &mut Ctx, schema: &Obj, path: &str, items: &[Value]) -> bool {
    let mut ok = true;
    if let Some(item_schema) = schema.items {
        for (i, item) in items.iter().enumerate() {
            ok &= check(ctx, item_schema, &format!("{path}/{i}"), item);
        }
    }
    if let Some(max) = schema.max_items
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
    if let Some(min) = schema.min_items
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

fn check_number(ctx: &mut Ctx, schema: &Obj, path: &str, n: f64) -> bool {
    let mut ok = true;
    type Rule = (
        &'static str,
        &'static str,
        Option<f64>,
        fn(f64, f64) -> bool,
    );
    let rules: [Rule; 4] = [
        ("exclusiveMaximum", "<", schema.exclusive_maximum, |n, l| {
            n < l
        }),
        ("exclusiveMinimum", ">", schema.exclusive_minimum, |n, l| {
            n > l
        }),
        ("maximum", "<=", schema.maximum, |n, l| n <= l),
        ("minimum", ">=", schema.minimum, |n, l| n >= l),
    ];
    for (keyword, comparison, limit, holds) in rules {
        if let Some(limit) = limit
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
fn check_any_of(ctx: &mut Ctx, options: &[S], path: &str, value: &Value) -> bool {
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
