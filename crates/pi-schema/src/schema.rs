//! A tool schema as pi-schema reads it: keyword views of schema objects, `$id`/`$ref`/`$anchor`
//! resolution (a reference that names nothing resolves to `false`, pi's
//! `unresolvedRefs: "reject"`), and the checks `compile()` makes before any value is seen.

use super::js::stringify;
use super::regex;
use super::uri::{DEFAULT_BASE, decode_component, document_of, resolve_uri};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// One failure of a value: where (a JSON Pointer, `""` for the value itself) and why. The
/// explainer reports them; the schema caches them for `$ref` targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// A base URI.
pub(crate) type Base = Rc<str>;

/// Keywords that never affect a check.
pub(crate) const NEUTRAL_KEYWORDS: &[&str] = &[
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
    "contentEncoding",
    "contentMediaType",
    "minContains",
    "maxContains",
    "$vocabulary",
];

/// The keywords an annotating check (below `unevaluated*`) evaluates itself.
const ANNOTATING: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "$ref",
    "$dynamicRef",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
];

const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
    "items",
];
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
const ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Which keywords of a schema object a view hides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Hide(u8);

impl Hide {
    pub(crate) const NONE: Hide = Hide(0);
    /// The keywords an annotating check handles itself (`buildAnnotating`'s `rest`).
    pub(crate) const ANNOTATING: Hide = Hide(1);
    /// `unevaluatedProperties`, `unevaluatedItems` and `$id` (the explainer's `rest`).
    pub(crate) const UNEVALUATED: Hide = Hide(2);

    pub(crate) fn with(self, other: Hide) -> Hide {
        Hide(self.0 | other.0)
    }

    fn hides(self, key: &str) -> bool {
        (self.0 & 1 != 0 && ANNOTATING.contains(&key))
            || (self.0 & 2 != 0
                && matches!(key, "unevaluatedProperties" | "unevaluatedItems" | "$id"))
    }
}

/// A schema object, possibly with some keywords hidden.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'s> {
    pub(crate) obj: &'s Map<String, Value>,
    pub(crate) hide: Hide,
}

impl<'s> View<'s> {
    pub(crate) fn get(&self, key: &str) -> Option<&'s Value> {
        if self.hide.hides(key) {
            return None;
        }
        self.obj.get(key)
    }

    pub(crate) fn hiding(self, more: Hide) -> View<'s> {
        View {
            obj: self.obj,
            hide: self.hide.with(more),
        }
    }

    /// A keyword's value when it is a schema object (`isSchemaObject`).
    pub(crate) fn object(&self, key: &str) -> Option<&'s Map<String, Value>> {
        self.get(key).and_then(Value::as_object)
    }

    pub(crate) fn array(&self, key: &str) -> Option<&'s Vec<Value>> {
        self.get(key).and_then(Value::as_array)
    }

    pub(crate) fn str(&self, key: &str) -> Option<&'s str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A keyword's value when it is a number.
    pub(crate) fn number(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(Value::as_f64)
    }

    /// `required` as pi-schema reads it: an array's string items.
    pub(crate) fn required(&self) -> Vec<&'s str> {
        self.array("required")
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    pub(crate) fn has_unevaluated(&self) -> bool {
        self.get("unevaluatedProperties").is_some() || self.get("unevaluatedItems").is_some()
    }
}

/// A resolved reference: the target (`None` for one that named nothing) and its base URI.
pub(crate) struct Target<'s> {
    pub(crate) node: Option<&'s Value>,
    pub(crate) base: Base,
}

#[derive(Default)]
struct Index<'s> {
    base_of: HashMap<*const Value, Base>,
    resources: HashMap<String, &'s Value>,
    anchors: HashMap<String, &'s Value>,
}

/// The error a value too deeply recursive for the schema raises in JavaScript.
pub(crate) const STACK_OVERFLOW: &str = "Maximum call stack size exceeded";

/// One schema being used: its reference index (built on the first `$ref` or `$id`) and the
/// recursion guard shared by every pass.
pub(crate) struct Schema<'s> {
    pub(crate) root: &'s Value,
    index: RefCell<Option<Index<'s>>>,
    depth: Cell<usize>,
    /// How deep evaluation may nest before it gives up, as JavaScript's stack would.
    max_depth: usize,
    overflow: Cell<bool>,
    /// The explainer's failures of `$ref` targets for objects and arrays, by (target, path,
    /// value): a recursive union explains each branch to pick one to blame, and each branch
    /// would explain the same children again, exponentially in the depth.
    pub(crate) ref_failures: RefCell<HashMap<(usize, String, String), Vec<Failure>>>,
}

/// A guard for one level of recursion; `None` once the limit is hit.
pub(crate) struct Level<'a> {
    depth: &'a Cell<usize>,
}

impl Drop for Level<'_> {
    fn drop(&mut self) {
        self.depth.set(self.depth.get() - 1);
    }
}

impl<'s> Schema<'s> {
    pub(crate) fn new(root: &'s Value, max_depth: usize) -> Schema<'s> {
        Schema {
            root,
            index: RefCell::new(None),
            depth: Cell::new(0),
            max_depth,
            overflow: Cell::new(false),
            ref_failures: RefCell::new(HashMap::new()),
        }
    }

    pub(crate) fn root_base(&self) -> Base {
        Rc::from(DEFAULT_BASE)
    }

    /// Enters one level of recursion, or records an overflow and refuses.
    pub(crate) fn enter(&self) -> Option<Level<'_>> {
        if self.overflow.get() || self.depth.get() >= self.max_depth {
            self.overflow.set(true);
            return None;
        }
        self.depth.set(self.depth.get() + 1);
        Some(Level { depth: &self.depth })
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflow.get()
    }

    fn ensure_indexed(&self) {
        if self.index.borrow().is_some() {
            return;
        }
        let mut index = Index::default();
        index.resources.insert(DEFAULT_BASE.to_string(), self.root);
        index_node(&mut index, self.root, Rc::from(DEFAULT_BASE));
        *self.index.borrow_mut() = Some(index);
    }

    /// The base URI of `node` whose parent has `base` (pi-schema's `baseFor`).
    pub(crate) fn base_for(&self, node: &'s Value, base: &Base) -> Base {
        if let Some(index) = self.index.borrow().as_ref()
            && let Some(b) = index.base_of.get(&(node as *const Value))
        {
            return Rc::clone(b);
        }
        let Some(id) = node.get("$id").and_then(Value::as_str) else {
            return Rc::clone(base);
        };
        self.ensure_indexed();
        if let Some(index) = self.index.borrow().as_ref()
            && let Some(b) = index.base_of.get(&(node as *const Value))
        {
            return Rc::clone(b);
        }
        Rc::from(document_of(&resolve_uri(id, base)))
    }

    /// The schema `reference` names from `base`; a reference that names nothing resolves to
    /// `None` (pi-schema compiles it as `false`, reported as "unresolved reference").
    pub(crate) fn resolve(&self, reference: &str, base: &Base) -> Target<'s> {
        self.ensure_indexed();
        match self.find(reference, base) {
            Some((node, b)) => Target {
                node: Some(node),
                base: b,
            },
            None => Target {
                node: None,
                base: Rc::clone(base),
            },
        }
    }

    fn find(&self, reference: &str, base: &Base) -> Option<(&'s Value, Base)> {
        let uri = resolve_uri(reference, base);
        let doc = document_of(&uri);
        let fragment = if uri.len() > doc.len() {
            decode_component(&uri[doc.len() + 1..])?
        } else {
            String::new()
        };
        let index = self.index.borrow();
        let index = index.as_ref()?;
        let root = *index.resources.get(doc)?;
        if fragment.is_empty() {
            return Some((root, Rc::from(doc)));
        }
        if fragment.starts_with('/') {
            let mut node = root;
            let mut b: Base = Rc::from(doc);
            for raw in fragment.split('/').skip(1) {
                let key = raw.replace("~1", "/").replace("~0", "~");
                node = match node {
                    Value::Object(map) => map.get(&key)?,
                    Value::Array(items) => {
                        let i: usize = key.parse().ok()?;
                        if i.to_string() != key {
                            return None;
                        }
                        items.get(i)?
                    }
                    _ => return None,
                };
                if let Some(nb) = index.base_of.get(&(node as *const Value)) {
                    b = Rc::clone(nb);
                }
            }
            return Some((node, b));
        }
        let target = *index.anchors.get(&format!("{doc}#{fragment}"))?;
        let b = index
            .base_of
            .get(&(target as *const Value))
            .cloned()
            .unwrap_or_else(|| Rc::from(doc));
        Some((target, b))
    }
}

fn index_node<'s>(index: &mut Index<'s>, node: &'s Value, base: Base) {
    let Some(obj) = node.as_object() else {
        return;
    };
    if index.base_of.contains_key(&(node as *const Value)) {
        return;
    }
    let mut b = base;
    if let Some(id) = obj.get("$id").and_then(Value::as_str) {
        let uri = resolve_uri(id, &b);
        let doc: Base = Rc::from(document_of(&uri));
        index.resources.insert(doc.to_string(), node);
        if uri.len() > doc.len() + 1 {
            index.anchors.insert(uri.clone(), node);
        }
        b = doc;
    }
    index.base_of.insert(node as *const Value, Rc::clone(&b));
    for key in ["$anchor", "$dynamicAnchor"] {
        if let Some(anchor) = obj.get(key).and_then(Value::as_str) {
            index.anchors.insert(format!("{b}#{anchor}"), node);
        }
    }
    for key in SCHEMA_KEYWORDS {
        if let Some(sub) = obj.get(*key) {
            index_node(index, sub, Rc::clone(&b));
        }
    }
    for key in MAP_KEYWORDS {
        if let Some(map) = obj.get(*key).and_then(Value::as_object) {
            for sub in map.values() {
                index_node(index, sub, Rc::clone(&b));
            }
        }
    }
    for key in ARRAY_KEYWORDS {
        if let Some(list) = obj.get(*key).and_then(Value::as_array) {
            for sub in list {
                index_node(index, sub, Rc::clone(&b));
            }
        }
    }
}

/// The error `compile()` throws for a subschema that is neither an object nor a boolean.
fn not_a_schema(node: &Value) -> String {
    format!(
        "A schema must be an object or a boolean, got {}",
        stringify(node)
    )
}

/// The schema's own errors, found in the order pi-schema's compiler meets them: the first one
/// is what every call of the tool fails with.
pub(crate) struct Compile<'a, 's> {
    schema: &'a Schema<'s>,
    plain_done: HashSet<*const Value>,
    annotating_done: HashSet<*const Value>,
}

impl<'a, 's> Compile<'a, 's> {
    pub(crate) fn run(schema: &'a Schema<'s>) -> Result<(), String> {
        let mut c = Compile {
            schema,
            plain_done: HashSet::new(),
            annotating_done: HashSet::new(),
        };
        c.check(schema.root, &schema.root_base())
    }

    fn check(&mut self, node: &'s Value, base: &Base) -> Result<(), String> {
        let obj = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(obj) => obj,
            other => return Err(not_a_schema(other)),
        };
        if !self.plain_done.insert(node as *const Value) || is_bare_type(obj) {
            return Ok(());
        }
        let _level = self.schema.enter().ok_or(STACK_OVERFLOW)?;
        let b = self.schema.base_for(node, base);
        let view = View {
            obj,
            hide: Hide::NONE,
        };
        if view.has_unevaluated() {
            self.annotating_view(view, &b)
        } else {
            self.plain(view, &b)
        }
    }

    fn check_opt(&mut self, node: Option<&'s Value>, base: &Base) -> Result<(), String> {
        match node {
            Some(n) => self.check(n, base),
            None => Ok(()),
        }
    }

    /// A subschema compiled unless it is absent or `true` (which compile to nothing).
    fn check_unless_true(&mut self, node: Option<&'s Value>, base: &Base) -> Result<(), String> {
        match node {
            None | Some(Value::Bool(true)) => Ok(()),
            Some(n) => self.check(n, base),
        }
    }

    fn reference(&mut self, reference: &str, base: &Base) -> Result<(), String> {
        let target = self.schema.resolve(reference, base);
        match target.node {
            Some(node) => self.check(node, &target.base),
            None => Ok(()),
        }
    }

    fn plain(&mut self, view: View<'s>, b: &Base) -> Result<(), String> {
        let single_bytes = view.str("type") == Some("bytes")
            || view
                .array("type")
                .is_some_and(|t| t.len() == 1 && t[0].as_str() == Some("bytes"));
        if !single_bytes && let Some(pattern) = view.str("pattern") {
            regex::shared(pattern)?;
        }
        // Object keywords.
        let properties = view.object("properties");
        let patterns = view.object("patternProperties");
        let additional = view.get("additionalProperties");
        let has_core = properties.is_some_and(|p| !p.is_empty())
            || !view.required().is_empty()
            || patterns.is_some_and(|p| !p.is_empty())
            || !matches!(additional, None | Some(Value::Bool(true)));
        if has_core {
            if let Some(props) = properties {
                for sub in props.values() {
                    self.check(sub, b)?;
                }
            }
            if let Some(pats) = patterns {
                for (p, sub) in pats {
                    regex::shared(p)?;
                    self.check(sub, b)?;
                }
            }
            self.check_unless_true(additional, b)?;
        }
        self.check_opt(view.get("propertyNames"), b)?;
        if let Some(deps) = view.object("dependentSchemas") {
            for sub in deps.values() {
                self.check(sub, b)?;
            }
        }
        if let Some(deps) = view.object("dependencies") {
            for sub in deps.values() {
                if !sub.is_array() {
                    self.check(sub, b)?;
                }
            }
        }
        // Array keywords.
        let (prefix, rest) = match view.array("items") {
            Some(items) => (Some(items), view.get("additionalItems")),
            None => (view.array("prefixItems"), view.get("items")),
        };
        for sub in prefix.into_iter().flatten() {
            self.check(sub, b)?;
        }
        self.check_unless_true(rest, b)?;
        self.check_opt(view.get("contains"), b)?;
        // In-place keywords.
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(list) = view.array(key) {
                for sub in list {
                    self.check(sub, b)?;
                }
            }
        }
        self.check_opt(view.get("not"), b)?;
        if view.get("if").is_some() && (view.get("then").is_some() || view.get("else").is_some()) {
            self.check_opt(view.get("then"), b)?;
            self.check_opt(view.get("else"), b)?;
            self.check_opt(view.get("if"), b)?;
        }
        for key in ["$ref", "$dynamicRef"] {
            if let Some(r) = view.str(key) {
                self.reference(r, b)?;
            }
        }
        Ok(())
    }

    fn annotating(&mut self, node: &'s Value, base: &Base) -> Result<(), String> {
        let obj = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(obj) => obj,
            other => return Err(not_a_schema(other)),
        };
        if !self.annotating_done.insert(node as *const Value) {
            return Ok(());
        }
        let _level = self.schema.enter().ok_or(STACK_OVERFLOW)?;
        let b = self.schema.base_for(node, base);
        self.annotating_view(
            View {
                obj,
                hide: Hide::NONE,
            },
            &b,
        )
    }

    fn annotating_view(&mut self, view: View<'s>, b: &Base) -> Result<(), String> {
        self.plain(view.hiding(Hide::ANNOTATING), b)?;
        if view.get("properties").is_some()
            || view.get("patternProperties").is_some()
            || view.get("additionalProperties").is_some()
        {
            if let Some(props) = view.object("properties") {
                for sub in props.values() {
                    self.check(sub, b)?;
                }
            }
            if let Some(pats) = view.object("patternProperties") {
                for (p, sub) in pats {
                    regex::shared(p)?;
                    self.check(sub, b)?;
                }
            }
            self.check_opt(view.get("additionalProperties"), b)?;
        }
        if view.get("prefixItems").is_some()
            || view.get("items").is_some()
            || view.get("contains").is_some()
        {
            let prefix = view.array("prefixItems").or_else(|| view.array("items"));
            for sub in prefix.into_iter().flatten() {
                self.check(sub, b)?;
            }
            let rest = if view.array("items").is_some() {
                view.get("additionalItems")
            } else {
                view.get("items")
            };
            self.check_opt(rest, b)?;
            self.check_opt(view.get("contains"), b)?;
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(list) = view.array(key) {
                for sub in list {
                    self.annotating(sub, b)?;
                }
            }
        }
        if let Some(cond) = view.get("if") {
            if let Some(then) = view.get("then") {
                self.annotating(then, b)?;
            }
            if let Some(otherwise) = view.get("else") {
                self.annotating(otherwise, b)?;
            }
            self.annotating(cond, b)?;
        }
        for key in ["$ref", "$dynamicRef"] {
            if let Some(r) = view.str(key) {
                let target = self.schema.resolve(r, b);
                if let Some(node) = target.node {
                    self.annotating(node, &target.base)?;
                }
            }
        }
        if let Some(deps) = view.object("dependentSchemas") {
            for sub in deps.values() {
                self.annotating(sub, b)?;
            }
        }
        self.check_opt(view.get("unevaluatedProperties"), b)?;
        self.check_opt(view.get("unevaluatedItems"), b)?;
        Ok(())
    }
}

/// A schema of only `type` and annotations, which compiles to a shared check.
fn is_bare_type(obj: &Map<String, Value>) -> bool {
    obj.iter()
        .all(|(k, v)| (k == "type" && v.is_string()) || NEUTRAL_KEYWORDS.contains(&k.as_str()))
}
