//! Why a value is invalid: pi-schema's explainer, a walk over the schema that reports each failing
//! keyword at the value it failed on, in keyword order, and blames a failed union on one branch.

use super::check::{
    Annotations, code_points, equals_const, has_type, in_enum, is_multiple, key_string,
    pattern_matches, types_of, unique,
};
use super::formats;
use super::js::{is_container, num, strict_eq, stringify};
use super::schema::{Base, Failure, Hide, Schema, View};
use pi_js::{number_to_string, utf16_len};
use serde_json::{Map, Value};

fn failure(path: &str, message: impl Into<String>) -> Failure {
    Failure {
        path: path.to_string(),
        message: message.into(),
    }
}

/// `path` extended by `key`, escaped as a JSON Pointer token.
fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// `String(x)` inside `Array.prototype.join`: `null` is empty.
fn join_element(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(join_element).collect::<Vec<_>>().join(","),
        other => key_string(other),
    }
}

/// The allowed values of an enum or tag, cut after 20.
fn list_values(values: &[Value]) -> String {
    const LISTED: usize = 20;
    if values.len() <= LISTED {
        return stringify(&Value::Array(values.to_vec()));
    }
    let listed = stringify(&Value::Array(values[..LISTED].to_vec()));
    format!(
        "{}, ... and {} more]",
        &listed[..listed.len() - 1],
        values.len() - LISTED
    )
}

fn contains_message(min: f64, max: f64) -> String {
    let noun = |n: f64| if n == 1.0 { "item" } else { "items" };
    if max == f64::INFINITY {
        return format!(
            "expected at least {} matching {}",
            number_to_string(min),
            noun(min)
        );
    }
    if min == 0.0 {
        return format!(
            "expected at most {} matching {}",
            number_to_string(max),
            noun(max)
        );
    }
    format!(
        "expected between {} and {} matching items",
        number_to_string(min),
        number_to_string(max)
    )
}

/// A union's tag: a property whose `const` differs in every branch.
struct Tag {
    key: String,
    values: Vec<Value>,
}

impl<'s> Schema<'s> {
    /// The failures of `v`, at least one (`v` failed the check).
    pub(crate) fn errors(&self, v: &Value) -> Vec<Failure> {
        let mut out = Vec::new();
        self.ref_failures.borrow_mut().clear();
        self.walk(self.root, &self.root_base(), v, "", &mut out);
        self.ref_failures.borrow_mut().clear();
        if out.is_empty() {
            out.push(failure("", "invalid"));
        }
        out
    }

    fn walk(&self, node: &'s Value, base: &Base, v: &Value, path: &str, out: &mut Vec<Failure>) {
        let obj = match node {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                out.push(failure(path, "no value is allowed here"));
                return;
            }
            Value::Object(obj) => obj,
            _ => return,
        };
        let Some(_level) = self.enter() else {
            return;
        };
        let b = self.base_for(node, base);
        if self.check(node, &b, v) {
            return;
        }
        let view = View {
            obj,
            hide: Hide::NONE,
        };
        let start = out.len();
        if let Some(types) = types_of(&view)
            && !types.iter().any(|t| has_type(t, v))
        {
            let names: Vec<String> = types.iter().map(|t| join_element(t)).collect();
            out.push(failure(
                path,
                format!(
                    "expected {}, got {}",
                    names.join(" or "),
                    super::js::type_name(v)
                ),
            ));
            return;
        }
        if let Some(values) = view.array("enum")
            && !in_enum(values, v)
        {
            out.push(failure(
                path,
                format!("expected one of {}", list_values(values)),
            ));
        }
        if let Some(c) = view.get("const")
            && !equals_const(c, v)
        {
            out.push(failure(path, format!("expected {}", stringify(c))));
        }
        match v {
            Value::String(s) if view.get("type") != Some(&Value::String("bytes".into())) => {
                self.walk_string(&view, s, path, out);
            }
            Value::Number(_) => {
                if let Some(x) = num(v) {
                    walk_number(&view, x, path, out);
                }
            }
            Value::Object(o) => self.walk_object(&view, &b, o, v, path, out),
            Value::Array(items) => self.walk_array(&view, &b, items, path, out),
            _ => {}
        }
        if let Some(list) = view.array("allOf") {
            for s in list {
                self.walk(s, &b, v, path, out);
            }
        }
        if let Some(list) = view.array("anyOf") {
            self.walk_union(list, &b, v, path, out, false);
        }
        if let Some(list) = view.array("oneOf") {
            self.walk_union(list, &b, v, path, out, true);
        }
        if let Some(not) = view.get("not")
            && self.check(not, &b, v)
        {
            out.push(failure(path, "must not match the schema in not"));
        }
        if let Some(cond) = view.get("if") {
            let branch = if self.check(cond, &b, v) {
                view.get("then")
            } else {
                view.get("else")
            };
            if let Some(branch) = branch {
                self.walk(branch, &b, v, path, out);
            }
        }
        if let Some(r) = view.str("$ref") {
            self.walk_ref(r, &b, v, path, out);
        }
        if out.len() == start && view.has_unevaluated() {
            self.walk_unevaluated(&view, &b, v, path, out);
        }
        if out.len() == start && view.str("$dynamicRef").is_some() {
            out.push(failure(
                path,
                "does not match the dynamically referenced schema",
            ));
        }
    }

    fn walk_ref(
        &self,
        reference: &str,
        base: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<Failure>,
    ) {
        let target = self.resolve(reference, base);
        let Some(node) = target.node else {
            out.push(failure(path, format!("unresolved reference {reference}")));
            return;
        };
        if !node.is_object() || !is_container(v) {
            self.walk(node, &target.base, v, path, out);
            return;
        }
        let key = (
            node as *const Value as usize,
            path.to_string(),
            stringify(v),
        );
        if let Some(known) = self.ref_failures.borrow().get(&key) {
            out.extend(known.iter().cloned());
            return;
        }
        let mut errors = Vec::new();
        self.walk(node, &target.base, v, path, &mut errors);
        out.extend(errors.iter().cloned());
        self.ref_failures.borrow_mut().insert(key, errors);
    }

    fn walk_string(&self, view: &View<'s>, s: &str, path: &str, out: &mut Vec<Failure>) {
        let n = code_points(s) as f64;
        if let Some(m) = view.number("minLength")
            && n < m
        {
            out.push(failure(
                path,
                format!("expected at least {} characters", number_to_string(m)),
            ));
        }
        if let Some(m) = view.number("maxLength")
            && n > m
        {
            out.push(failure(
                path,
                format!("expected at most {} characters", number_to_string(m)),
            ));
        }
        if let Some(p) = view.str("pattern")
            && !pattern_matches(p, s)
        {
            out.push(failure(path, format!("expected to match {p}")));
        }
        if let Some(f) = view.str("format")
            && formats::check(f, s) == Some(false)
        {
            out.push(failure(path, format!("expected format {f}")));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_object(
        &self,
        view: &View<'s>,
        b: &Base,
        o: &Map<String, Value>,
        whole: &Value,
        path: &str,
        out: &mut Vec<Failure>,
    ) {
        let properties = view.object("properties");
        for k in view.required() {
            if !o.contains_key(k) {
                out.push(failure(&pointer(path, k), "missing"));
            }
        }
        for (k, s) in properties.into_iter().flatten() {
            if let Some(x) = o.get(k) {
                self.walk(s, b, x, &pointer(path, k), out);
            }
        }
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties");
        let names = view.get("propertyNames");
        for (k, x) in o {
            let mut matched = properties.is_some_and(|p| p.contains_key(k));
            for (p, s) in patterns.into_iter().flatten() {
                if pattern_matches(p, k) {
                    matched = true;
                    self.walk(s, b, x, &pointer(path, k), out);
                }
            }
            if !matched && let Some(extra) = additional {
                if *extra == Value::Bool(false) {
                    out.push(failure(&pointer(path, k), "unknown field"));
                } else {
                    self.walk(extra, b, x, &pointer(path, k), out);
                }
            }
            if let Some(names) = names
                && !self.check(names, b, &Value::String(k.clone()))
            {
                out.push(failure(&pointer(path, k), "invalid property name"));
            }
        }
        let count = o.len() as f64;
        if let Some(m) = view.number("minProperties")
            && count < m
        {
            out.push(failure(
                path,
                format!("expected at least {} properties", number_to_string(m)),
            ));
        }
        if let Some(m) = view.number("maxProperties")
            && count > m
        {
            out.push(failure(
                path,
                format!("expected at most {} properties", number_to_string(m)),
            ));
        }
        // `{ ...dependentRequired, ...dependencies }`: a key of both keeps its first place.
        let mut dependencies: Vec<(&String, &'s Value)> = Vec::new();
        for deps in [
            view.object("dependentRequired"),
            view.object("dependencies"),
        ]
        .into_iter()
        .flatten()
        {
            for (k, d) in deps {
                match dependencies.iter_mut().find(|(key, _)| *key == k) {
                    Some(entry) => entry.1 = d,
                    None => dependencies.push((k, d)),
                }
            }
        }
        for (k, d) in dependencies {
            if !o.contains_key(k) {
                continue;
            }
            match d {
                Value::Array(list) => {
                    for r in list {
                        let r = key_string(r);
                        if !o.contains_key(&r) {
                            out.push(failure(
                                &pointer(path, &r),
                                format!("required when {k} is present"),
                            ));
                        }
                    }
                }
                schema => self.walk(schema, b, whole, path, out),
            }
        }
        if let Some(deps) = view.object("dependentSchemas") {
            for (k, s) in deps {
                if o.contains_key(k) {
                    self.walk(s, b, whole, path, out);
                }
            }
        }
    }

    fn walk_array(
        &self,
        view: &View<'s>,
        b: &Base,
        items: &[Value],
        path: &str,
        out: &mut Vec<Failure>,
    ) {
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
            if let Some(s) = s {
                self.walk(s, b, x, &format!("{path}/{i}"), out);
            }
        }
        let n = items.len() as f64;
        if let Some(m) = view.number("minItems")
            && n < m
        {
            out.push(failure(
                path,
                format!("expected at least {} items", number_to_string(m)),
            ));
        }
        if let Some(m) = view.number("maxItems")
            && n > m
        {
            out.push(failure(
                path,
                format!("expected at most {} items", number_to_string(m)),
            ));
        }
        if view.get("uniqueItems") == Some(&Value::Bool(true)) && !unique(items) {
            out.push(failure(path, "expected unique items"));
        }
        if let Some(contains) = view.get("contains") {
            let min = view.number("minContains").unwrap_or(1.0);
            let max = view.number("maxContains").unwrap_or(f64::INFINITY);
            let mut count = 0.0;
            let mut ok = true;
            for x in items {
                if self.check(contains, b, x) {
                    count += 1.0;
                    if count > max {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok || count < min {
                out.push(failure(path, contains_message(min, max)));
            }
        }
    }

    fn walk_union(
        &self,
        branches: &'s [Value],
        b: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<Failure>,
        exactly_one: bool,
    ) {
        let matches = branches.iter().filter(|s| self.check(s, b, v)).count();
        if matches == 1 || (!exactly_one && matches > 0) {
            return;
        }
        if matches > 1 {
            out.push(failure(path, "matches more than one alternative"));
            return;
        }
        if let (Some(tag), Value::Object(o)) = (self.tag_of(branches, b), v) {
            let found = o
                .get(&tag.key)
                .and_then(|x| tag.values.iter().position(|t| strict_eq(t, x)));
            match found {
                Some(i) => self.walk(&branches[i], b, v, path, out),
                None => out.push(failure(
                    &pointer(path, &tag.key),
                    format!("expected one of {}", list_values(&tag.values)),
                )),
            }
            return;
        }
        // Blame the branch that declares most of an object's properties, then the one whose first
        // error is deepest.
        let mut best: Option<(Vec<Failure>, usize)> = None;
        for s in branches {
            let mut errors = Vec::new();
            self.walk(s, b, v, path, &mut errors);
            if errors.is_empty() {
                continue;
            }
            let declared = match v {
                Value::Object(o) => self.declared_keys(s, b, o),
                _ => 0,
            };
            let better = match &best {
                None => true,
                Some((best_errors, best_declared)) => {
                    declared > *best_declared
                        || (declared == *best_declared
                            && utf16_len(&errors[0].path) > utf16_len(&best_errors[0].path))
                }
            };
            if better {
                best = Some((errors, declared));
            }
        }
        match best {
            Some((errors, _)) => out.extend(errors),
            None => out.push(failure(path, "matches no alternative")),
        }
    }

    /// A branch itself, or the target of a branch that has a `$ref`.
    fn through_ref(&self, s: &'s Value, b: &Base) -> Option<&'s Value> {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) if s.is_object() => self.resolve(r, &self.base_for(s, b)).node,
            _ => Some(s),
        }
    }

    fn declared_keys(&self, s: &'s Value, b: &Base, o: &Map<String, Value>) -> usize {
        let properties = self
            .through_ref(s, b)
            .and_then(|n| n.get("properties"))
            .and_then(Value::as_object);
        match properties {
            Some(p) => o.keys().filter(|k| p.contains_key(*k)).count(),
            None => 0,
        }
    }

    fn tag_of(&self, branches: &'s [Value], b: &Base) -> Option<Tag> {
        let resolved: Vec<Option<&'s Value>> =
            branches.iter().map(|s| self.through_ref(s, b)).collect();
        let first = resolved.first().copied().flatten()?.as_object()?;
        let first_props = first.get("properties")?.as_object()?;
        for key in first_props.keys() {
            let mut values = Vec::with_capacity(resolved.len());
            for s in &resolved {
                let tag = s
                    .and_then(|s| s.as_object())
                    .and_then(|s| s.get("properties"))
                    .and_then(Value::as_object)
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_object)
                    .and_then(|t| t.get("const"));
                match tag {
                    Some(t) if !is_container(t) => values.push(t.clone()),
                    _ => break,
                }
            }
            let distinct = values
                .iter()
                .enumerate()
                .all(|(i, x)| values[..i].iter().all(|y| !strict_eq(x, y)));
            if values.len() == resolved.len() && distinct {
                return Some(Tag {
                    key: key.clone(),
                    values,
                });
            }
        }
        None
    }

    fn walk_unevaluated(
        &self,
        view: &View<'s>,
        b: &Base,
        v: &Value,
        path: &str,
        out: &mut Vec<Failure>,
    ) {
        let mut a = Annotations::default();
        self.annotating_view(view.hiding(Hide::UNEVALUATED), b, v, &mut a);
        if let (Value::Object(o), Some(uneval)) = (v, view.get("unevaluatedProperties"))
            && !a.all_props
        {
            for (k, x) in o {
                if a.props.contains(k) {
                    continue;
                }
                if *uneval == Value::Bool(false) {
                    out.push(failure(&pointer(path, k), "unknown field"));
                } else {
                    self.walk(uneval, b, x, &pointer(path, k), out);
                }
            }
        }
        if let (Value::Array(items), Some(uneval)) = (v, view.get("unevaluatedItems"))
            && !a.all_items
        {
            for (i, x) in items.iter().enumerate().skip(a.items) {
                if a.indexes.contains(&i) {
                    continue;
                }
                let at = format!("{path}/{i}");
                if *uneval == Value::Bool(false) {
                    out.push(failure(&at, "unexpected item"));
                } else {
                    self.walk(uneval, b, x, &at, out);
                }
            }
        }
    }
}

/// A number keyword, the operator its message names, and whether a value fails it.
type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

fn walk_number(view: &View<'_>, x: f64, path: &str, out: &mut Vec<Failure>) {
    let bounds: [Bound; 4] = [
        ("minimum", ">=", |x, m| x < m),
        ("maximum", "<=", |x, m| x > m),
        ("exclusiveMinimum", ">", |x, m| x <= m),
        ("exclusiveMaximum", "<", |x, m| x >= m),
    ];
    for (key, op, fails) in bounds {
        if let Some(m) = view.number(key)
            && fails(x, m)
        {
            out.push(failure(
                path,
                format!("expected {op} {}", number_to_string(m)),
            ));
        }
    }
    if let Some(d) = view.number("multipleOf")
        && !is_multiple(x, d)
    {
        out.push(failure(
            path,
            format!("expected a multiple of {}", number_to_string(d)),
        ));
    }
}
