//! A JSON Schema (2020-12) validator for the keywords `pi schema` uses, with a strict mode for
//! tests: a key that no schema declares is an error (as if every object schema said
//! `unevaluatedProperties: false`), so a field we send but forgot to describe is caught.
//!
//! Keywords: `$ref` (local `#/$defs/...`), `type`, `const`, `enum`, `properties`, `required`,
//! `additionalProperties`, `items`, `allOf`, `anyOf`, `oneOf`, `not`, `minimum`. Annotations
//! (`description`, `format`, `title`, `$schema`) are ignored.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Validates instances against one schema document.
pub struct Validator<'a> {
    root: &'a Value,
    /// Reject keys no schema declares (for objects whose schemas declare any properties).
    pub strict: bool,
}

/// What validating one instance location found: errors, and the keys the schemas declared.
#[derive(Default)]
struct Outcome {
    errors: Vec<String>,
    /// Keys of the object evaluated by `properties` (or `additionalProperties`) here.
    evaluated: BTreeSet<String>,
    /// Some schema here allows any key (`additionalProperties`), or none declares properties.
    open: bool,
    declares: bool,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    fn absorb(&mut self, other: Outcome) {
        self.errors.extend(other.errors);
        self.evaluated.extend(other.evaluated);
        self.open |= other.open;
        self.declares |= other.declares;
    }

    /// Keeps only what a subschema that matched contributes to evaluation.
    fn absorb_evaluation(&mut self, other: &Outcome) {
        self.evaluated.extend(other.evaluated.iter().cloned());
        self.open |= other.open;
        self.declares |= other.declares;
    }
}

impl<'a> Validator<'a> {
    pub fn new(root: &'a Value) -> Validator<'a> {
        Validator { root, strict: true }
    }

    /// Validates `instance` against the schema at `pointer` in the document (`#/$defs/X`, or
    /// `#` for the root). Returns every error, each with the instance path.
    pub fn validate(&self, pointer: &str, instance: &Value) -> Result<(), Vec<String>> {
        let schema = self
            .resolve(pointer)
            .ok_or_else(|| vec![format!("no schema at {pointer}")])?;
        let outcome = self.location(schema, instance, "");
        if outcome.errors.is_empty() {
            Ok(())
        } else {
            Err(outcome.errors)
        }
    }

    fn resolve(&self, pointer: &str) -> Option<&'a Value> {
        let path = pointer.strip_prefix('#')?;
        if path.is_empty() {
            return Some(self.root);
        }
        self.root.pointer(path)
    }

    /// Validates a new instance location: the schema, then (strict) the unevaluated keys.
    fn location(&self, schema: &'a Value, instance: &Value, path: &str) -> Outcome {
        let mut out = self.schema(schema, instance, path);
        if self.strict
            && out.ok()
            && out.declares
            && !out.open
            && let Value::Object(map) = instance
        {
            for key in map.keys() {
                if !out.evaluated.contains(key) {
                    out.errors
                        .push(format!("{path}/{key}: key not declared by the schema"));
                }
            }
        }
        out
    }

    /// Applies one schema to an instance at the same location.
    fn schema(&self, schema: &'a Value, instance: &Value, path: &str) -> Outcome {
        let mut out = Outcome::default();
        let s = match schema {
            Value::Bool(true) => {
                out.open = true;
                return out;
            }
            Value::Bool(false) => {
                out.errors.push(format!("{path}: no value is allowed here"));
                return out;
            }
            Value::Object(s) => s,
            _ => {
                out.errors.push(format!("{path}: invalid schema {schema}"));
                return out;
            }
        };
        if let Some(Value::String(r)) = s.get("$ref") {
            match self.resolve(r) {
                Some(target) => out.absorb(self.schema(target, instance, path)),
                None => out.errors.push(format!("{path}: unresolved $ref {r}")),
            }
        }
        if let Some(t) = s.get("type")
            && !type_matches(t, instance)
        {
            out.errors
                .push(format!("{path}: expected type {t}, got {}", clip(instance)));
            return out;
        }
        if let Some(c) = s.get("const")
            && c != instance
        {
            out.errors
                .push(format!("{path}: expected {c}, got {}", clip(instance)));
            return out;
        }
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.contains(instance)
        {
            out.errors.push(format!(
                "{path}: {} is not one of {options:?}",
                clip(instance)
            ));
        }
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && instance.as_f64().is_some_and(|n| n < min)
        {
            out.errors.push(format!("{path}: below the minimum {min}"));
        }
        if let Value::Object(map) = instance {
            self.object_keywords(s, map, path, &mut out);
        }
        if let (Some(items), Value::Array(list)) = (s.get("items"), instance) {
            for (i, item) in list.iter().enumerate() {
                let inner = self.location(items, item, &format!("{path}/{i}"));
                out.errors.extend(inner.errors);
            }
        }
        if let Some(Value::Array(all)) = s.get("allOf") {
            for sub in all {
                out.absorb(self.schema(sub, instance, path));
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let results: Vec<Outcome> = any
                .iter()
                .map(|sub| self.schema(sub, instance, path))
                .collect();
            let matched: Vec<&Outcome> = results.iter().filter(|r| r.ok()).collect();
            if matched.is_empty() {
                out.errors.push(no_match(path, "anyOf", instance, &results));
            }
            for m in matched {
                out.absorb_evaluation(m);
            }
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let results: Vec<Outcome> = one
                .iter()
                .map(|sub| self.schema(sub, instance, path))
                .collect();
            let matched: Vec<&Outcome> = results.iter().filter(|r| r.ok()).collect();
            match matched.len() {
                1 => out.absorb_evaluation(matched[0]),
                0 => out.errors.push(no_match(path, "oneOf", instance, &results)),
                n => out.errors.push(format!(
                    "{path}: {n} branches of oneOf match {}",
                    clip(instance)
                )),
            }
        }
        if let Some(not) = s.get("not")
            && self.schema(not, instance, path).ok()
        {
            out.errors
                .push(format!("{path}: matches a schema it must not: {not}"));
        }
        out
    }

    fn object_keywords(
        &self,
        s: &'a Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
        out: &mut Outcome,
    ) {
        if let Some(Value::Array(required)) = s.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    out.errors
                        .push(format!("{path}: missing required key `{key}`"));
                }
            }
        }
        let properties = s.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            out.declares = true;
            // Tags first: a union's other branches fail on their tag without walking the rest
            // of a large record.
            for (key, sub) in properties {
                if let (Some(c), Some(value)) = (sub.get("const"), map.get(key))
                    && c != value
                {
                    out.errors
                        .push(format!("{path}/{key}: expected {c}, got {}", clip(value)));
                    return;
                }
            }
            for (key, sub) in properties {
                if let Some(value) = map.get(key) {
                    out.evaluated.insert(key.clone());
                    let inner = self.location(sub, value, &format!("{path}/{key}"));
                    out.errors.extend(inner.errors);
                }
            }
        }
        match s.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                for key in map.keys() {
                    if !properties.is_some_and(|p| p.contains_key(key)) {
                        out.errors.push(format!("{path}/{key}: key not allowed"));
                    }
                }
            }
            Some(extra) => {
                out.open = true;
                for (key, value) in map {
                    if !properties.is_some_and(|p| p.contains_key(key)) {
                        let inner = self.location(extra, value, &format!("{path}/{key}"));
                        out.errors.extend(inner.errors);
                    }
                }
            }
            None => {}
        }
    }
}

fn type_matches(t: &Value, v: &Value) -> bool {
    match t {
        Value::String(name) => is_type(name, v),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|n| is_type(n, v)),
        _ => false,
    }
}

fn is_type(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// The error of a union that nothing matched: the branch whose tag matched, if any, explains.
fn no_match(path: &str, keyword: &str, instance: &Value, results: &[Outcome]) -> String {
    // The branch with the fewest errors is usually the intended one.
    let best = results.iter().min_by_key(|r| r.errors.len());
    let why = best
        .map(|r| {
            r.errors
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default();
    format!(
        "{path}: no branch of {keyword} matches {} (closest: {why})",
        clip(instance)
    )
}

/// A value in an error message: scalars whole, containers elided (errors of the branches of a
/// union are formatted and mostly dropped; serializing a large record for each would be slow).
fn clip(v: &Value) -> String {
    let s = match v {
        Value::Object(map) => match map.get("type").or_else(|| map.get("role")) {
            Some(tag) => format!("{{{tag}, …}}"),
            None => "{…}".to_string(),
        },
        Value::Array(items) => format!("[{} items]", items.len()),
        scalar => scalar.to_string(),
    };
    if s.len() <= 160 {
        return s;
    }
    let mut end = 160;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_mode_rejects_undeclared_keys_through_unions() {
        let schema = json!({
            "$defs": {
                "A": {
                    "type": "object",
                    "properties": { "kind": { "const": "a" }, "id": { "type": "string" } },
                    "required": ["kind"],
                    "oneOf": [
                        { "properties": { "m": { "const": 1 } }, "required": ["m"] },
                        { "properties": { "m": { "const": 2 }, "x": { "type": "integer" } }, "required": ["m"] }
                    ]
                }
            }
        });
        let v = Validator::new(&schema);
        assert!(
            v.validate("#/$defs/A", &json!({"kind": "a", "m": 2, "x": 3}))
                .is_ok()
        );
        let e = v
            .validate("#/$defs/A", &json!({"kind": "a", "m": 1, "x": 3}))
            .unwrap_err();
        assert_eq!(e, ["/x: key not declared by the schema"]);
        assert!(
            v.validate("#/$defs/A", &json!({"kind": "b", "m": 1}))
                .is_err()
        );
        assert!(
            v.validate("#/$defs/A", &json!({"kind": "a", "m": 3}))
                .is_err()
        );
    }

    #[test]
    fn types_refs_and_not() {
        let schema = json!({
            "$defs": {
                "N": { "type": "integer", "minimum": 0 },
                "O": { "type": "object", "not": { "required": ["t"], "properties": { "t": { "enum": ["x"] } } } },
                "L": { "type": "array", "items": { "$ref": "#/$defs/N" } }
            }
        });
        let v = Validator::new(&schema);
        assert!(v.validate("#/$defs/L", &json!([0, 3, 4.0])).is_ok());
        assert!(v.validate("#/$defs/L", &json!([1.5])).is_err());
        assert!(v.validate("#/$defs/L", &json!([-1])).is_err());
        assert!(v.validate("#/$defs/O", &json!({"t": "y", "k": 1})).is_ok());
        assert!(v.validate("#/$defs/O", &json!({"t": "x"})).is_err());
    }
}
