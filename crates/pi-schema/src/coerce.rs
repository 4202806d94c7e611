//! Coercion of loosely typed arguments towards the schema, pi-schema's three passes in order:
//! 1. an optional property set to `null` that its schema rejects is dropped;
//! 2. conversion by schema structure (TypeBox's `Value.Convert` rules: literals, enums, the first
//!    union branch that converts, `type`, a single value wrapped into an array);
//! 3. primitive coercion by `type`, type arrays included (Ajv's `coerceTypes`).
//!
//! Every function returns `None` when the value comes out unchanged, so only changed paths are
//! copied, as pi-schema copies on write.

use super::check::pattern_matches;
use super::js::{is_container, is_integer, num, number_value, same_value, strict_eq, stringify};
use super::schema::{Base, Hide, Schema, View};
use pi_js::{number_to_string, string_to_number, trim};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// One `coerce()` call: the re-entry stack and memo of pass 2.
pub(crate) struct Coercer<'a, 's> {
    schema: &'a Schema<'s>,
    /// (schema node, value) pairs being converted through a re-entry point; a pair met again
    /// leaves its value unchanged, so recursive schemas terminate.
    entered: RefCell<Vec<(*const Value, Entered)>>,
    cuts: Cell<usize>,
    /// `$ref` conversions by (target, value), valid while no re-entry was cut inside them.
    memo: RefCell<HashMap<(usize, String), Option<Value>>>,
}

/// A value on the re-entry stack: containers by identity, primitives by value.
enum Entered {
    Container(*const Value),
    Primitive(Value),
}

impl Entered {
    fn of(v: &Value) -> Entered {
        if is_container(v) {
            Entered::Container(v as *const Value)
        } else {
            Entered::Primitive(v.clone())
        }
    }

    fn is(&self, v: &Value) -> bool {
        match self {
            Entered::Container(p) => std::ptr::eq(*p, v),
            Entered::Primitive(x) => !is_container(v) && same_value(x, v),
        }
    }
}

fn view_of(node: &Value) -> Option<View<'_>> {
    node.as_object().map(|obj| View {
        obj,
        hide: Hide::NONE,
    })
}

/// The item schema at `index` of an array: a tuple's for its prefix, `items` for the rest.
fn item_schema_at<'s>(view: &View<'s>, index: usize) -> Option<&'s Value> {
    if let Some(items) = view.array("items") {
        return items.get(index);
    }
    if let Some(prefix) = view.array("prefixItems")
        && index < prefix.len()
    {
        return prefix.get(index);
    }
    view.get("items")
}

/// `items` mapped by `map`, copied only if some item changed.
fn map_items(
    items: &[Value],
    mut map: impl FnMut(&Value, usize) -> Option<Value>,
) -> Option<Value> {
    let mut out: Option<Vec<Value>> = None;
    for (i, item) in items.iter().enumerate() {
        if let Some(next) = map(item, i) {
            out.get_or_insert_with(|| items.to_vec())[i] = next;
        }
    }
    out.map(Value::Array)
}

/// `Some(next)` unless `next` is the same primitive as `value`.
fn changed(next: Value, value: &Value) -> Option<Value> {
    (!strict_eq(&next, value)).then_some(next)
}

fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(_) => num(v)
            .filter(|x| x.is_finite())
            .map(|x| Value::String(number_to_string(x))),
        Value::Null => Some(Value::String("null".into())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

const MAX_SAFE: i128 = 9_007_199_254_740_991;

/// TypeBox's bigint-like strings: `12n`, `12.5` (truncated), `12`.
fn big_int_of_string(s: &str) -> Option<i128> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let negative = body.len() != s.len();
    let (int_part, suffix_ok) = if let Some(b) = body.strip_suffix('n') {
        (b, true)
    } else if let Some((i, f)) = body.split_once('.') {
        (i, !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
    } else {
        (body, true)
    };
    let canonical = int_part == "0"
        || (int_part.starts_with(|c: char| ('1'..='9').contains(&c))
            && int_part.bytes().all(|c| c.is_ascii_digit()));
    if !suffix_ok || !canonical {
        return None;
    }
    // Longer than any safe integer: out of range either way.
    let magnitude: i128 = if int_part.len() > 20 {
        MAX_SAFE + 1
    } else {
        int_part.parse().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(_) => num(v).filter(|x| x.is_finite()),
        Value::Null => Some(0.0),
        Value::String(s) => {
            let x = string_to_number(s);
            if x.is_finite() {
                return Some(x);
            }
            match s.to_lowercase().as_str() {
                "false" => return Some(0.0),
                "true" => return Some(1.0),
                _ => {}
            }
            big_int_of_string(s)
                .filter(|b| (-MAX_SAFE..=MAX_SAFE).contains(b))
                .map(|b| b as f64)
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(_) => Some(v.clone()),
        Value::Number(_) => match num(v) {
            Some(0.0) => Some(Value::Bool(false)),
            Some(1.0) => Some(Value::Bool(true)),
            _ => None,
        },
        Value::Null => Some(Value::Bool(false)),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(Value::Bool(false))
            } else if lower == "true" || s == "1" {
                Some(Value::Bool(true))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<Value> {
    let null = match v {
        Value::Bool(b) => !b,
        Value::Number(_) => num(v) == Some(0.0),
        Value::Null => true,
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    };
    null.then_some(Value::Null)
}

/// A literal (`const`, an enum member) taken from a value of another type that converts to it.
fn convert_literal(literal: &Value, value: &Value) -> Option<Value> {
    if strict_eq(literal, value) {
        return None;
    }
    let result = match literal {
        Value::String(_) => try_string(value),
        Value::Number(_) => try_number(value).map(number_value),
        Value::Bool(_) => try_boolean(value),
        _ => None,
    }?;
    strict_eq(&result, literal).then_some(result)
}

/// Pass 3's `matchesType`.
fn matches_type(v: &Value, t: &str) -> bool {
    match t {
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "null" => v.is_null(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

/// Pass 3's `coercePrimitive`: the value coerced to `t`, `None` when it stays.
fn coerce_primitive(v: &Value, t: &str) -> Option<Value> {
    let next = match t {
        "number" | "integer" => match v {
            Value::Null => Value::from(0),
            Value::String(s) if !trim(s).is_empty() => {
                let parsed = string_to_number(s);
                let ok = if t == "number" {
                    parsed.is_finite()
                } else {
                    parsed.is_finite() && parsed.fract() == 0.0
                };
                if !ok {
                    return None;
                }
                number_value(parsed)
            }
            Value::Bool(b) => Value::from(u8::from(*b)),
            _ => return None,
        },
        "boolean" => match v {
            Value::Null => Value::Bool(false),
            Value::String(s) if s == "true" => Value::Bool(true),
            Value::String(s) if s == "false" => Value::Bool(false),
            Value::Number(_) if num(v) == Some(1.0) => Value::Bool(true),
            Value::Number(_) if num(v) == Some(0.0) => Value::Bool(false),
            _ => return None,
        },
        "string" => match v {
            Value::Null => Value::String(String::new()),
            Value::Number(_) => Value::String(num(v).map(number_to_string).unwrap_or_default()),
            Value::Bool(b) => Value::String(b.to_string()),
            _ => return None,
        },
        "null" => match v {
            Value::String(s) if s.is_empty() => Value::Null,
            Value::Number(_) if num(v) == Some(0.0) => Value::Null,
            Value::Bool(false) => Value::Null,
            _ => return None,
        },
        _ => return None,
    };
    changed(next, v)
}

impl<'a, 's> Coercer<'a, 's> {
    pub(crate) fn new(schema: &'a Schema<'s>) -> Self {
        Coercer {
            schema,
            entered: RefCell::new(Vec::new()),
            cuts: Cell::new(0),
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// `value` coerced; `None` when nothing changes.
    pub(crate) fn coerce(&self, value: &Value) -> Option<Value> {
        let root = self.schema.root;
        let base = self.schema.root_base();
        let dropped = self.drop_optional_nulls(value, root, &base);
        let v1 = dropped.as_ref().unwrap_or(value);
        let converted = self.convert(root, &base, v1);
        let v2 = converted.as_ref().unwrap_or(v1);
        let coerced = self.coerce_types(v2, root, &base);
        coerced.or(converted).or(dropped)
    }

    /// Whether `value` passes `node`; `None` for a node that is no schema.
    fn passes(&self, node: &'s Value, base: &Base, value: &Value) -> Option<bool> {
        match node {
            Value::Bool(_) | Value::Object(_) => {
                let b = self.schema.base_for(node, base);
                Some(self.schema.check(node, &b, value))
            }
            _ => None,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Pass 1: optional nulls
    // -----------------------------------------------------------------------------------------

    fn drop_optional_nulls(&self, value: &Value, schema: &'s Value, base: &Base) -> Option<Value> {
        let view = view_of(schema)?;
        let _level = self.schema.enter()?;
        let b = self.schema.base_for(schema, base);
        let obj = match value {
            Value::Array(items) => {
                return map_items(items, |item, i| {
                    item_schema_at(&view, i).and_then(|s| self.drop_optional_nulls(item, s, &b))
                });
            }
            Value::Object(obj) => obj,
            _ => return None,
        };
        let properties = view.object("properties");
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties").filter(|a| a.is_object());
        if patterns.is_none() && additional.is_none() && properties.is_none() {
            return None;
        }
        let required: Vec<&Value> = view
            .array("required")
            .map(|r| r.iter().collect())
            .unwrap_or_default();
        let is_required = |k: &str| required.iter().any(|r| r.as_str() == Some(k));
        let mut out: Option<Map<String, Value>> = None;
        for (key, property) in properties.into_iter().flatten() {
            let Some(x) = obj.get(key) else {
                continue;
            };
            let is_ref = property.get("$ref").is_some_and(Value::is_string);
            if x.is_null()
                && !is_required(key)
                && !is_ref
                && self.passes(property, &b, &Value::Null) == Some(false)
            {
                out.get_or_insert_with(|| obj.clone()).shift_remove(key);
                continue;
            }
            if let Some(next) = self.drop_optional_nulls(x, property, &b) {
                out.get_or_insert_with(|| obj.clone())
                    .insert(key.clone(), next);
            }
        }
        if patterns.is_some() || additional.is_some() {
            for (key, x) in obj {
                let mut matched = properties.is_some_and(|p| p.contains_key(key));
                for (p, item) in patterns.into_iter().flatten() {
                    if !pattern_matches(p, key) {
                        continue;
                    }
                    matched = true;
                    let current = match &out {
                        Some(o) => o.get(key),
                        None => Some(x),
                    };
                    if let Some(next) = current.and_then(|c| self.drop_optional_nulls(c, item, &b))
                    {
                        out.get_or_insert_with(|| obj.clone())
                            .insert(key.clone(), next);
                    }
                }
                if !matched
                    && let Some(extra) = additional
                    && let Some(next) = self.drop_optional_nulls(x, extra, &b)
                {
                    out.get_or_insert_with(|| obj.clone())
                        .insert(key.clone(), next);
                }
            }
        }
        out.map(Value::Object)
    }

    // -----------------------------------------------------------------------------------------
    // Pass 2: conversion by structure
    // -----------------------------------------------------------------------------------------

    fn convert(&self, node: &'s Value, base: &Base, value: &Value) -> Option<Value> {
        let view = view_of(node)?;
        let _level = self.schema.enter()?;
        let b = self.schema.base_for(node, base);
        if let Some(r) = view.str("$ref") {
            let target = self.schema.resolve(r, &b);
            return match target.node {
                Some(t) if t.is_object() => self.reenter(t, &target.base, value, true),
                _ => None,
            };
        }
        self.convert_node(node, view, &b, value)
    }

    /// `node` converted for `value` at a re-entry point: unchanged when that pair is already
    /// being converted.
    fn reenter(&self, node: &'s Value, base: &Base, value: &Value, memoize: bool) -> Option<Value> {
        let node_ptr = node as *const Value;
        let on_stack = self
            .entered
            .borrow()
            .iter()
            .any(|(n, v)| std::ptr::eq(*n, node_ptr) && v.is(value));
        if on_stack {
            self.cuts.set(self.cuts.get() + 1);
            return None;
        }
        let key = memoize.then(|| (node_ptr as usize, stringify(value)));
        if let Some(k) = &key
            && let Some(hit) = self.memo.borrow().get(k)
        {
            return hit.clone();
        }
        let cuts = self.cuts.get();
        self.entered
            .borrow_mut()
            .push((node_ptr, Entered::of(value)));
        let result = self.convert(node, base, value);
        self.entered.borrow_mut().pop();
        if let Some(k) = key
            && self.cuts.get() == cuts
        {
            self.memo.borrow_mut().insert(k, result.clone());
        }
        result
    }

    fn convert_node(
        &self,
        node: &'s Value,
        view: View<'s>,
        b: &Base,
        value: &Value,
    ) -> Option<Value> {
        if let Some(c) = view.get("const") {
            return convert_literal(c, value);
        }
        if let Some(values) = view.array("enum") {
            return self.convert_enum(node, values, b, value);
        }
        if let Some(branches) = view.array("anyOf").or_else(|| view.array("oneOf")) {
            return self.convert_union(node, view, branches, b, value);
        }
        if let Some(members) = view.array("allOf") {
            let mut next: Option<Value> = None;
            for m in members {
                let current = next.as_ref().unwrap_or(value);
                if let Some(n) = self.convert(m, b, current) {
                    next = changed(n, value);
                }
            }
            let current = next.as_ref().unwrap_or(value);
            return self.convert_members(view, b, current).or(next);
        }
        match view.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "string" => try_string(value).and_then(|s| changed(s, value)),
                "number" => try_number(value).and_then(|x| changed(number_value(x), value)),
                "integer" => {
                    try_number(value).and_then(|x| changed(number_value(x.trunc()), value))
                }
                "boolean" => try_boolean(value).and_then(|x| changed(x, value)),
                "null" => try_null(value).and_then(|x| changed(x, value)),
                "array" => self.convert_array(view, b, value),
                "object" => self.convert_object(view, b, value),
                _ => None,
            },
            None => {
                if view.get("properties").is_some() || view.get("patternProperties").is_some() {
                    self.convert_object(view, b, value)
                } else if view.get("items").is_some() || view.get("prefixItems").is_some() {
                    self.convert_array(view, b, value)
                } else {
                    None
                }
            }
            Some(_) => None,
        }
    }

    /// An enum is a union of its values: a member stays, else the first value the input
    /// converts to.
    fn convert_enum(
        &self,
        node: &'s Value,
        values: &[Value],
        b: &Base,
        value: &Value,
    ) -> Option<Value> {
        if values.iter().any(|m| strict_eq(m, value)) {
            return None;
        }
        for m in values {
            if let Some(candidate) = convert_literal(m, value)
                && self.passes(node, b, &candidate) == Some(true)
            {
                return Some(candidate);
            }
        }
        None
    }

    fn convert_union(
        &self,
        node: &'s Value,
        view: View<'s>,
        branches: &'s [Value],
        b: &Base,
        value: &Value,
    ) -> Option<Value> {
        if branches
            .iter()
            .any(|s| self.passes(s, b, value) == Some(true))
        {
            return self.convert_members(view, b, value);
        }
        for branch in branches {
            let converted = self.convert(branch, b, value);
            let current = converted.as_ref().unwrap_or(value);
            let members = self.convert_members(view, b, current);
            let candidate = members.or(converted);
            let accepted = self.passes(node, b, candidate.as_ref().unwrap_or(value)) == Some(true);
            if accepted {
                return candidate;
            }
        }
        self.convert_members(view, b, value)
    }

    /// The object members of a union or intersection node, when it declares any.
    fn convert_members(&self, view: View<'s>, b: &Base, value: &Value) -> Option<Value> {
        let declares = view.get("properties").is_some()
            || view.get("patternProperties").is_some()
            || view.get("additionalProperties").is_some();
        if declares {
            self.convert_object(view, b, value)
        } else {
            None
        }
    }

    fn convert_array(&self, view: View<'s>, b: &Base, value: &Value) -> Option<Value> {
        let prefix = view.array("items").or_else(|| view.array("prefixItems"));
        if let Some(prefix) = prefix {
            // A tuple converts its items and never wraps a single value.
            let Value::Array(items) = value else {
                return None;
            };
            let rest = if view.array("items").is_some() {
                None
            } else {
                view.get("items")
            };
            return map_items(items, |item, i| {
                let schema = if i < prefix.len() {
                    Some(&prefix[i])
                } else {
                    rest
                };
                schema.and_then(|s| self.convert(s, b, item))
            });
        }
        let items_schema = view.get("items");
        if let Value::Array(items) = value {
            let schema = items_schema?;
            return map_items(items, |item, _| self.convert(schema, b, item));
        }
        // The wrapped single value is converted by the item schema: a re-entry point.
        let item = match items_schema {
            Some(s) if s.is_object() => self
                .reenter(s, b, value, false)
                .unwrap_or_else(|| value.clone()),
            _ => value.clone(),
        };
        Some(Value::Array(vec![item]))
    }

    fn convert_object(&self, view: View<'s>, b: &Base, value: &Value) -> Option<Value> {
        let Value::Object(obj) = value else {
            return None;
        };
        let properties = view.object("properties");
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties").filter(|a| a.is_object());
        let mut out: Option<Map<String, Value>> = None;
        for (key, x) in obj {
            let mut next: Option<Value> = None;
            let mut matched = false;
            if let Some(s) = properties.and_then(|p| p.get(key)) {
                matched = true;
                next = self.convert(s, b, x);
            }
            for (p, s) in patterns.into_iter().flatten() {
                if !pattern_matches(p, key) {
                    continue;
                }
                matched = true;
                if let Some(n) = self.convert(s, b, next.as_ref().unwrap_or(x)) {
                    next = Some(n);
                }
            }
            if !matched
                && let Some(extra) = additional
                && let Some(n) = self.convert(extra, b, x)
            {
                next = Some(n);
            }
            if let Some(n) = next.and_then(|n| changed(n, x)) {
                out.get_or_insert_with(|| obj.clone())
                    .insert(key.clone(), n);
            }
        }
        out.map(Value::Object)
    }

    // -----------------------------------------------------------------------------------------
    // Pass 3: primitive coercion by type
    // -----------------------------------------------------------------------------------------

    fn coerce_types(&self, value: &Value, schema: &'s Value, base: &Base) -> Option<Value> {
        let view = view_of(schema)?;
        let _level = self.schema.enter()?;
        let b = self.schema.base_for(schema, base);
        let mut next: Option<Value> = None;
        if let Some(members) = view.array("allOf") {
            for m in members {
                if let Some(n) = self.coerce_types(next.as_ref().unwrap_or(value), m, &b) {
                    next = Some(n);
                }
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = view.array(key)
                && let Some(n) = self.coerce_union(next.as_ref().unwrap_or(value), branches, &b)
            {
                next = Some(n);
            }
        }
        let types: Vec<&str> = match view.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let current = next.as_ref().unwrap_or(value);
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(current, t));
        if !types.is_empty() && !matches_member {
            for t in &types {
                if let Some(candidate) = coerce_primitive(next.as_ref().unwrap_or(value), t) {
                    next = Some(candidate);
                    break;
                }
            }
        }
        if types.contains(&"object")
            && let Value::Object(obj) = next.as_ref().unwrap_or(value)
            && let Some(n) = self.coerce_properties(obj, view, &b)
        {
            next = Some(n);
        }
        if types.contains(&"array")
            && let Value::Array(items) = next.as_ref().unwrap_or(value)
            && let Some(n) = map_items(items, |item, i| {
                item_schema_at(&view, i)
                    .filter(|s| s.is_object())
                    .and_then(|s| self.coerce_types(item, s, &b))
            })
        {
            next = Some(n);
        }
        next.and_then(|n| {
            if is_container(&n) {
                Some(n)
            } else {
                changed(n, value)
            }
        })
    }

    fn coerce_union(&self, value: &Value, branches: &'s [Value], b: &Base) -> Option<Value> {
        if branches
            .iter()
            .any(|s| self.passes(s, b, value) == Some(true))
        {
            return None;
        }
        for branch in branches {
            let coerced = self.coerce_types(value, branch, b);
            if self.passes(branch, b, coerced.as_ref().unwrap_or(value)) == Some(true) {
                return coerced;
            }
        }
        None
    }

    fn coerce_properties(
        &self,
        obj: &Map<String, Value>,
        view: View<'s>,
        b: &Base,
    ) -> Option<Value> {
        let properties = view.object("properties");
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties").filter(|a| a.is_object());
        let mut out: Option<Map<String, Value>> = None;
        for (key, property) in properties.into_iter().flatten() {
            if let Some(x) = obj.get(key)
                && let Some(n) = self.coerce_types(x, property, b)
            {
                out.get_or_insert_with(|| obj.clone())
                    .insert(key.clone(), n);
            }
        }
        for (key, x) in obj {
            let mut matched = properties.is_some_and(|p| p.contains_key(key));
            for (p, item) in patterns.into_iter().flatten() {
                if !pattern_matches(p, key) {
                    continue;
                }
                matched = true;
                let current = out.as_ref().and_then(|o| o.get(key)).unwrap_or(x);
                if let Some(n) = self.coerce_types(current, item, b) {
                    out.get_or_insert_with(|| obj.clone())
                        .insert(key.clone(), n);
                }
            }
            if !matched
                && let Some(extra) = additional
                && let Some(n) = self.coerce_types(x, extra, b)
            {
                out.get_or_insert_with(|| obj.clone())
                    .insert(key.clone(), n);
            }
        }
        out.map(Value::Object)
    }
}
