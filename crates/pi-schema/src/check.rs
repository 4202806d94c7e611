//! Whether a value is valid: the boolean check pi-schema compiles, evaluated over the schema.
//! Schemas with `unevaluatedProperties`/`unevaluatedItems` are evaluated with annotations (which
//! properties and items some keyword evaluated), the rest without.

use super::formats;
use super::js::{deep_equal, is_container, is_integer, num, strict_eq};
use super::regex;
use super::schema::{Base, Hide, Schema, View};
use pi_js::number_to_string;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What the keywords evaluated so far marked as evaluated, for `unevaluated*`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Annotations {
    pub(crate) props: HashSet<String>,
    pub(crate) all_props: bool,
    pub(crate) items: usize,
    pub(crate) all_items: bool,
    pub(crate) indexes: HashSet<usize>,
}

impl Annotations {
    fn merge(&mut self, other: Annotations) {
        self.props.extend(other.props);
        self.all_props |= other.all_props;
        self.items = self.items.max(other.items);
        self.all_items |= other.all_items;
        self.indexes.extend(other.indexes);
    }
}

/// Whether `v` has the JSON Schema `type` named `t`.
pub(crate) fn has_type(t: &Value, v: &Value) -> bool {
    match t.as_str() {
        Some("string") => v.is_string(),
        Some("number") => v.is_number(),
        Some("integer") => is_integer(v),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some("array") => v.is_array(),
        Some("object") => v.is_object(),
        _ => false,
    }
}

/// The `type` keyword as a list (`undefined` when absent).
pub(crate) fn types_of<'s>(view: &View<'s>) -> Option<Vec<&'s Value>> {
    view.get("type").map(|t| match t {
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    })
}

/// The number of code points of `s` (JSON Schema string lengths).
pub(crate) fn code_points(s: &str) -> usize {
    s.chars().count()
}

/// `isMultiple`: exact for decimals, where `0.0075 / 0.0001` is not an integer in floating point.
pub(crate) fn is_multiple(v: f64, d: f64) -> bool {
    let q = v / d;
    if q.is_finite() && q.fract() == 0.0 {
        return true;
    }
    if !q.is_finite() {
        return v % d == 0.0;
    }
    let (vc, ve) = decimal(v);
    let (dc, de) = decimal(d);
    if dc == 0 {
        return false;
    }
    if ve >= de {
        let scale = 10u128.checked_pow((ve - de) as u32);
        match scale.and_then(|s| vc.checked_mul(s)) {
            Some(x) => x % dc == 0,
            None => false,
        }
    } else {
        match 10u128
            .checked_pow((de - ve) as u32)
            .and_then(|s| dc.checked_mul(s))
        {
            Some(m) => vc % m == 0,
            // The modulus exceeds every representable coefficient.
            None => vc == 0,
        }
    }
}

/// `|x|` as integer coefficient and decimal exponent of its shortest JavaScript string.
fn decimal(x: f64) -> (u128, i32) {
    let s = number_to_string(x.abs());
    let (mantissa, exponent) = match s.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
        None => (s.as_str(), 0),
    };
    let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i32);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    (digits.parse().unwrap_or(0), exponent - fraction)
}

/// `String(v)` of a value used as a property key.
pub(crate) fn key_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(_) => num(v).map(number_to_string).unwrap_or_default(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Array(items) => items.iter().map(key_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// `enum` membership: primitives by `===`, objects and arrays by JSON equality.
pub(crate) fn in_enum(values: &[Value], v: &Value) -> bool {
    values.iter().any(|m| {
        if is_container(m) {
            deep_equal(m, v)
        } else {
            strict_eq(m, v)
        }
    })
}

/// `const` equality.
pub(crate) fn equals_const(c: &Value, v: &Value) -> bool {
    if is_container(c) {
        deep_equal(c, v)
    } else {
        strict_eq(c, v)
    }
}

/// Whether the regex of `pattern` matches `s` (false for a pattern that does not compile, which
/// `compile()` has already rejected).
pub(crate) fn pattern_matches(pattern: &str, s: &str) -> bool {
    regex::shared(pattern).is_ok_and(|re| re.test(s))
}

impl<'s> Schema<'s> {
    /// Whether `v` is valid against `node`, whose parent has base URI `base`.
    pub(crate) fn check(&self, node: &'s Value, base: &Base, v: &Value) -> bool {
        let obj = match node {
            Value::Bool(b) => return *b,
            Value::Object(obj) => obj,
            _ => return false,
        };
        let Some(_level) = self.enter() else {
            return false;
        };
        let b = self.base_for(node, base);
        let view = View {
            obj,
            hide: Hide::NONE,
        };
        if view.has_unevaluated() {
            let mut a = Annotations::default();
            return self.annotating_view(view, &b, v, &mut a);
        }
        self.plain(view, &b, v)
    }

    fn check_opt(&self, node: Option<&'s Value>, base: &Base, v: &Value) -> bool {
        node.is_none_or(|n| self.check(n, base, v))
    }

    /// A `$ref` or `$dynamicRef`: the target's check (`false` for one that names nothing).
    pub(crate) fn check_ref(&self, reference: &str, base: &Base, v: &Value) -> bool {
        let target = self.resolve(reference, base);
        target.node.is_some_and(|n| self.check(n, &target.base, v))
    }

    /// Every keyword of `view`, without annotations.
    pub(crate) fn plain(&self, view: View<'s>, b: &Base, v: &Value) -> bool {
        if let Some(types) = types_of(&view) {
            if types.len() == 1 && types[0].as_str() == Some("bytes") {
                return false;
            }
            if !types.iter().any(|t| has_type(t, v)) {
                return false;
            }
        }
        let ok = match v {
            Value::String(s) => self.string_ok(&view, s),
            Value::Number(_) => num(v).is_some_and(|x| number_ok(&view, x)),
            Value::Object(o) => self.object_ok(&view, b, o, v),
            Value::Array(items) => self.array_ok(&view, b, items),
            _ => true,
        };
        ok && self.in_place_ok(&view, b, v)
    }

    fn string_ok(&self, view: &View<'s>, s: &str) -> bool {
        let n = code_points(s) as f64;
        if view.number("minLength").is_some_and(|m| n < m)
            || view.number("maxLength").is_some_and(|m| n > m)
        {
            return false;
        }
        if view.str("pattern").is_some_and(|p| !pattern_matches(p, s)) {
            return false;
        }
        view.str("format")
            .and_then(|f| formats::check(f, s))
            .is_none_or(|ok| ok)
    }

    fn object_ok(&self, view: &View<'s>, b: &Base, o: &Map<String, Value>, whole: &Value) -> bool {
        let properties = view.object("properties");
        let required = view.required();
        if let Some(props) = properties {
            for (k, s) in props {
                match o.get(k) {
                    Some(x) => {
                        if !self.check(s, b, x) {
                            return false;
                        }
                    }
                    None => {
                        if required.contains(&k.as_str()) {
                            return false;
                        }
                    }
                }
            }
        }
        if required.iter().any(|r| !o.contains_key(*r)) {
            return false;
        }
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties");
        if patterns.is_some() || additional.is_some() {
            for (k, x) in o {
                let mut matched = properties.is_some_and(|p| p.contains_key(k));
                for (p, s) in patterns.into_iter().flatten() {
                    if pattern_matches(p, k) {
                        matched = true;
                        if !self.check(s, b, x) {
                            return false;
                        }
                    }
                }
                if !matched && !self.check_opt(additional, b, x) {
                    return false;
                }
            }
        }
        if let Some(names) = view.get("propertyNames")
            && !o
                .keys()
                .all(|k| self.check(names, b, &Value::String(k.clone())))
        {
            return false;
        }
        let count = o.len() as f64;
        if view.number("minProperties").is_some_and(|m| count < m)
            || view.number("maxProperties").is_some_and(|m| count > m)
        {
            return false;
        }
        if let Some(deps) = view.object("dependentRequired") {
            for (k, d) in deps {
                if let Value::Array(list) = d
                    && o.contains_key(k)
                    && list.iter().any(|r| !o.contains_key(&key_string(r)))
                {
                    return false;
                }
            }
        }
        if let Some(deps) = view.object("dependentSchemas") {
            for (k, s) in deps {
                if o.contains_key(k) && !self.check(s, b, whole) {
                    return false;
                }
            }
        }
        if let Some(deps) = view.object("dependencies") {
            for (k, d) in deps {
                if !o.contains_key(k) {
                    continue;
                }
                let ok = match d {
                    Value::Array(list) => list.iter().all(|r| o.contains_key(&key_string(r))),
                    schema => self.check(schema, b, whole),
                };
                if !ok {
                    return false;
                }
            }
        }
        true
    }

    fn array_ok(&self, view: &View<'s>, b: &Base, items: &[Value]) -> bool {
        let (prefix, rest) = match view.array("items") {
            Some(list) => (list.as_slice(), view.get("additionalItems")),
            None => (
                view.array("prefixItems").map_or(&[][..], Vec::as_slice),
                view.get("items"),
            ),
        };
        for (i, x) in items.iter().enumerate() {
            let s = if i < prefix.len() {
                Some(&prefix[i])
            } else {
                rest
            };
            if !self.check_opt(s, b, x) {
                return false;
            }
        }
        let n = items.len() as f64;
        if view.number("minItems").is_some_and(|m| n < m)
            || view.number("maxItems").is_some_and(|m| n > m)
        {
            return false;
        }
        if let Some(contains) = view.get("contains") {
            let min = view.number("minContains").unwrap_or(1.0);
            let max = view.number("maxContains").unwrap_or(f64::INFINITY);
            let mut count = 0.0;
            for x in items {
                if self.check(contains, b, x) {
                    count += 1.0;
                    if count > max {
                        return false;
                    }
                }
            }
            if count < min {
                return false;
            }
        }
        view.get("uniqueItems") != Some(&Value::Bool(true)) || unique(items)
    }

    fn in_place_ok(&self, view: &View<'s>, b: &Base, v: &Value) -> bool {
        if view.array("enum").is_some_and(|e| !in_enum(e, v)) {
            return false;
        }
        if view.get("const").is_some_and(|c| !equals_const(c, v)) {
            return false;
        }
        if view
            .array("allOf")
            .is_some_and(|l| !l.iter().all(|s| self.check(s, b, v)))
        {
            return false;
        }
        if view
            .array("anyOf")
            .is_some_and(|l| !l.iter().any(|s| self.check(s, b, v)))
        {
            return false;
        }
        if let Some(list) = view.array("oneOf")
            && list.iter().filter(|s| self.check(s, b, v)).take(2).count() != 1
        {
            return false;
        }
        if view.get("not").is_some_and(|s| self.check(s, b, v)) {
            return false;
        }
        if let Some(cond) = view.get("if")
            && (view.get("then").is_some() || view.get("else").is_some())
        {
            let branch = if self.check(cond, b, v) {
                view.get("then")
            } else {
                view.get("else")
            };
            if !self.check_opt(branch, b, v) {
                return false;
            }
        }
        for key in ["$ref", "$dynamicRef"] {
            if let Some(r) = view.str(key)
                && !self.check_ref(r, b, v)
            {
                return false;
            }
        }
        true
    }

    /// The annotating check of `node` (a subschema evaluated in place below `unevaluated*`).
    pub(crate) fn annotating(
        &self,
        node: &'s Value,
        base: &Base,
        v: &Value,
        a: &mut Annotations,
    ) -> bool {
        let obj = match node {
            Value::Bool(b) => return *b,
            Value::Object(obj) => obj,
            _ => return false,
        };
        let Some(_level) = self.enter() else {
            return false;
        };
        let b = self.base_for(node, base);
        self.annotating_view(
            View {
                obj,
                hide: Hide::NONE,
            },
            &b,
            v,
            a,
        )
    }

    /// `buildAnnotating`: the plain keywords, then each annotating keyword in order; a schema with
    /// its own `unevaluated*` sees only its own annotations.
    pub(crate) fn annotating_view(
        &self,
        view: View<'s>,
        b: &Base,
        v: &Value,
        a: &mut Annotations,
    ) -> bool {
        if view.has_unevaluated() {
            let mut own = Annotations::default();
            if !self.annotating_parts(view, b, v, &mut own) {
                return false;
            }
            a.merge(own);
            return true;
        }
        self.annotating_parts(view, b, v, a)
    }

    fn annotating_parts(&self, view: View<'s>, b: &Base, v: &Value, a: &mut Annotations) -> bool {
        if !self.plain(view.hiding(Hide::ANNOTATING), b, v) {
            return false;
        }
        if (view.get("properties").is_some()
            || view.get("patternProperties").is_some()
            || view.get("additionalProperties").is_some())
            && let Value::Object(o) = v
        {
            let props = view.object("properties");
            let mut seen = Vec::new();
            for (k, s) in props.into_iter().flatten() {
                if let Some(x) = o.get(k) {
                    if !self.check(s, b, x) {
                        return false;
                    }
                    seen.push(k.clone());
                }
            }
            let additional = view.get("additionalProperties");
            for (k, x) in o {
                let mut matched = props.is_some_and(|p| p.contains_key(k));
                for (p, s) in view.object("patternProperties").into_iter().flatten() {
                    if pattern_matches(p, k) {
                        if !self.check(s, b, x) {
                            return false;
                        }
                        matched = true;
                        seen.push(k.clone());
                    }
                }
                if !matched && let Some(extra) = additional {
                    if !self.check(extra, b, x) {
                        return false;
                    }
                    seen.push(k.clone());
                }
            }
            a.props.extend(seen);
        }
        if (view.get("prefixItems").is_some()
            || view.get("items").is_some()
            || view.get("contains").is_some())
            && let Value::Array(items) = v
        {
            let prefix = view
                .array("prefixItems")
                .or_else(|| view.array("items"))
                .map_or(&[][..], Vec::as_slice);
            let rest = if view.array("items").is_some() {
                view.get("additionalItems")
            } else {
                view.get("items")
            };
            let m = items.len().min(prefix.len());
            for i in 0..m {
                if !self.check(&prefix[i], b, &items[i]) {
                    return false;
                }
            }
            if let Some(rest) = rest {
                for x in items.iter().skip(prefix.len()) {
                    if !self.check(rest, b, x) {
                        return false;
                    }
                }
                a.all_items = true;
            }
            a.items = a.items.max(m);
            if let Some(contains) = view.get("contains") {
                let mut n = 0.0;
                for (i, x) in items.iter().enumerate() {
                    if self.check(contains, b, x) {
                        n += 1.0;
                        a.indexes.insert(i);
                    }
                }
                let min = view.number("minContains").unwrap_or(1.0);
                let max = view.number("maxContains").unwrap_or(f64::INFINITY);
                if n < min || n > max {
                    return false;
                }
            }
        }
        if let Some(list) = view.array("allOf") {
            for s in list {
                if !self.annotating(s, b, v, a) {
                    return false;
                }
            }
        }
        for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
            if let Some(list) = view.array(key) {
                let mut n = 0;
                for s in list {
                    let mut branch = Annotations::default();
                    if self.annotating(s, b, v, &mut branch) {
                        n += 1;
                        a.merge(branch);
                    }
                }
                if (exactly_one && n != 1) || n == 0 {
                    return false;
                }
            }
        }
        if let Some(cond) = view.get("if") {
            let mut c = Annotations::default();
            let ok = if self.annotating(cond, b, v, &mut c) {
                a.merge(c);
                view.get("then").is_none_or(|t| self.annotating(t, b, v, a))
            } else {
                view.get("else").is_none_or(|e| self.annotating(e, b, v, a))
            };
            if !ok {
                return false;
            }
        }
        for key in ["$ref", "$dynamicRef"] {
            if let Some(r) = view.str(key) {
                let target = self.resolve(r, b);
                let ok = target
                    .node
                    .is_some_and(|n| self.annotating(n, &target.base, v, a));
                if !ok {
                    return false;
                }
            }
        }
        if let Some(deps) = view.object("dependentSchemas") {
            for (k, s) in deps {
                if let Value::Object(o) = v
                    && o.contains_key(k)
                    && !self.annotating(s, b, v, a)
                {
                    return false;
                }
            }
        }
        if let Some(uneval) = view.get("unevaluatedProperties")
            && let Value::Object(o) = v
            && !a.all_props
        {
            for (k, x) in o {
                if !a.props.contains(k) && !self.check(uneval, b, x) {
                    return false;
                }
            }
            a.all_props = true;
        }
        if let Some(uneval) = view.get("unevaluatedItems")
            && let Value::Array(items) = v
            && !a.all_items
        {
            for (i, x) in items.iter().enumerate().skip(a.items) {
                if !a.indexes.contains(&i) && !self.check(uneval, b, x) {
                    return false;
                }
            }
            a.all_items = true;
        }
        true
    }
}

fn number_ok(view: &View<'_>, x: f64) -> bool {
    if view.number("minimum").is_some_and(|m| x < m)
        || view.number("maximum").is_some_and(|m| x > m)
        || view.number("exclusiveMinimum").is_some_and(|m| x <= m)
        || view.number("exclusiveMaximum").is_some_and(|m| x >= m)
    {
        return false;
    }
    view.number("multipleOf").is_none_or(|d| is_multiple(x, d))
}

/// `uniqueItems`: no two items are JSON-equal.
pub(crate) fn unique(items: &[Value]) -> bool {
    (1..items.len()).all(|i| (0..i).all(|j| !deep_equal(&items[i], &items[j])))
}
