//! JSON objects with JavaScript semantics: typed fields, unknown keys kept, key order kept.
//!
//! Pi writes objects in the insertion order of their keys, and that order is not the same on
//! every path (a `system` message is written `…, timestamp, toolsAdded` when first emitted but
//! `…, toolsAdded, timestamp` inside a compaction entry; catalog models list keys differently
//! from `models.json` models). Types declared with the crate-internal `record!` macro therefore:
//!
//! * write their keys in a *canonical* order (the order of the field list) when built in Rust;
//! * remember the order of the keys they were read with and write them back in that order, so a
//!   record read from a session file re-serializes byte-identically;
//! * keep keys they do not model in their [`Rest`], in place;
//! * behave like a JavaScript object when edited: a field that was absent and is then set is
//!   written after the recorded keys, a field set to `None` disappears.
//!
//! A producer that must match a non-canonical order Pi uses on some path builds the value with
//! [`Rest::with_order`] (a [`KeyOrder::Fixed`] order).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// The order in which a record writes its keys.
#[derive(Debug, Clone, Default)]
pub enum KeyOrder {
    /// The declaration order of the type's fields (unknown keys last).
    #[default]
    Canonical,
    /// A producer-chosen order. Keys not listed follow in canonical order.
    Fixed(&'static [&'static str]),
    /// The order the keys had in the input.
    Recorded(Arc<[String]>),
}

impl KeyOrder {
    pub fn is_canonical(&self) -> bool {
        matches!(self, KeyOrder::Canonical)
    }

    /// The listed keys, in order (empty for [`KeyOrder::Canonical`]).
    pub fn keys(&self) -> Vec<&str> {
        match self {
            KeyOrder::Canonical => Vec::new(),
            KeyOrder::Fixed(keys) => keys.to_vec(),
            KeyOrder::Recorded(keys) => keys.iter().map(String::as_str).collect(),
        }
    }
}

/// The part of a JSON object that its Rust type does not express as fields: keys the type does
/// not model (with their values) and the order of all keys. Equality only compares the unknown
/// keys. Empty (and allocation-free) for values built in Rust with the canonical order.
#[derive(Debug, Clone, Default)]
pub struct Rest(Option<Box<RestInner>>);

#[derive(Debug, Clone, Default)]
struct RestInner {
    extra: Map<String, Value>,
    order: KeyOrder,
}

static EMPTY_ORDER: KeyOrder = KeyOrder::Canonical;

impl Rest {
    /// No unknown keys, keys written in the given order.
    pub fn with_order(order: &'static [&'static str]) -> Rest {
        Rest(Some(Box::new(RestInner {
            extra: Map::new(),
            order: KeyOrder::Fixed(order),
        })))
    }

    /// Nothing recorded: no unknown keys, canonical key order (as `Rest::default()`).
    pub fn is_canonical(&self) -> bool {
        self.0.is_none()
    }

    fn inner_mut(&mut self) -> &mut RestInner {
        self.0.get_or_insert_with(Box::default)
    }

    /// How keys are ordered when writing.
    pub fn order(&self) -> &KeyOrder {
        self.0.as_ref().map_or(&EMPTY_ORDER, |r| &r.order)
    }

    pub fn set_order(&mut self, order: KeyOrder) {
        if order.is_canonical() && self.0.is_none() {
            return;
        }
        self.inner_mut().order = order;
    }

    /// Keys this type does not model, in input order. Also holds `null` values of optional keys
    /// (Pi only ever omits them, but a foreign writer may not), so they round-trip.
    pub fn extra(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().flat_map(|r| r.extra.iter())
    }

    /// The unknown key `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|r| r.extra.get(key))
    }

    /// Mutable access to the unknown keys.
    pub fn extra_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.inner_mut().extra
    }

    /// Whether there are no unknown keys.
    pub fn has_no_extra(&self) -> bool {
        self.0.as_ref().is_none_or(|r| r.extra.is_empty())
    }
}

impl PartialEq for Rest {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.extra == b.extra,
            _ => self.has_no_extra() && other.has_no_extra(),
        }
    }
}

/// Error for a field whose value has the wrong shape.
#[doc(hidden)]
pub fn field_error(key: &str, e: serde_json::Error) -> serde_json::Error {
    serde::de::Error::custom(format!("invalid `{key}`: {e}"))
}

/// Error for a required key that is absent.
#[doc(hidden)]
pub fn missing(key: &str) -> serde_json::Error {
    serde::de::Error::custom(format!("missing field `{key}`"))
}

/// Error for a tag key (`type`, `role`) with an unexpected value.
#[doc(hidden)]
pub fn bad_tag(key: &str, expected: &str, got: &Value) -> serde_json::Error {
    serde::de::Error::custom(format!("expected `{key}` to be \"{expected}\", got {got}"))
}

/// Tracks whether the keys of an input object appeared in canonical order, remembering the
/// order as canonical positions (no copy of the key names: most records are canonical).
#[doc(hidden)]
pub struct OrderTracker {
    /// Canonical position of each key in input order, [`UNKNOWN_KEY`] for unmodelled keys;
    /// inline up to [`INLINE_KEYS`] keys.
    inline: [u8; INLINE_KEYS],
    len: usize,
    spill: Vec<u8>,
    last: Option<usize>,
    seen_unknown: bool,
    canonical: bool,
}

impl Default for OrderTracker {
    fn default() -> Self {
        Self::new()
    }
}

const INLINE_KEYS: usize = 16;
const UNKNOWN_KEY: u8 = u8::MAX;

impl OrderTracker {
    pub fn new() -> Self {
        OrderTracker {
            inline: [0; INLINE_KEYS],
            len: 0,
            spill: Vec::new(),
            last: None,
            seen_unknown: false,
            canonical: true,
        }
    }

    /// Notes the next key, at canonical position `pos` (`None` for an unknown key).
    pub fn note(&mut self, pos: Option<usize>) {
        let code = pos.map_or(UNKNOWN_KEY, |p| u8::try_from(p).unwrap_or(UNKNOWN_KEY));
        if self.len < INLINE_KEYS {
            self.inline[self.len] = code;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(code);
        }
        self.len += 1;
        match pos {
            Some(p) => {
                if self.seen_unknown || self.last.is_some_and(|l| p <= l) {
                    self.canonical = false;
                }
                self.last = Some(p);
            }
            None => self.seen_unknown = true,
        }
    }

    /// Forces a recorded order (used when a known key's value was stashed in `extra`).
    pub fn force_recorded(&mut self) {
        self.canonical = false;
    }

    /// The order seen. `keys` are the type's keys; the names of unknown keys come from
    /// `rest`'s extra keys, which hold them in input order.
    pub fn finish(self, keys: &[&str], rest: &Rest) -> KeyOrder {
        if self.canonical {
            return KeyOrder::Canonical;
        }
        let codes = if self.len <= INLINE_KEYS {
            &self.inline[..self.len]
        } else {
            &self.spill[..]
        };
        let mut unknown = rest
            .extra()
            .map(|(k, _)| k)
            .filter(|k| !keys.contains(&k.as_str()));
        let names: Vec<String> = codes
            .iter()
            .filter_map(|&c| match keys.get(usize::from(c)) {
                Some(k) if c != UNKNOWN_KEY => Some((*k).to_string()),
                _ => unknown.next().cloned(),
            })
            .collect();
        KeyOrder::Recorded(names.into())
    }
}

/// Writes the keys of a record in the order of `rest.order`.
///
/// `emit(i, map)` writes the field with canonical index `i` if present and says whether it did;
/// `has(key)` says whether `key` is a known key whose field is present.
#[doc(hidden)]
pub fn serialize_ordered<M: SerializeMap>(
    map: &mut M,
    all_keys: &[&str],
    rest: &Rest,
    mut emit: impl FnMut(usize, &mut M) -> Result<bool, M::Error>,
    has: impl Fn(&str) -> bool,
) -> Result<(), M::Error> {
    let order = rest.order().keys();
    let mut done = vec![false; all_keys.len()];
    for key in &order {
        match all_keys.iter().position(|k| k == key) {
            Some(i) => {
                if !done[i] {
                    done[i] = true;
                    if !emit(i, map)?
                        && let Some(v) = rest.get(key)
                    {
                        map.serialize_entry(key, v)?;
                    }
                }
            }
            None => {
                if let Some(v) = rest.get(key) {
                    map.serialize_entry(key, v)?;
                }
            }
        }
    }
    for (i, was_done) in done.iter().enumerate() {
        if !was_done {
            emit(i, map)?;
        }
    }
    for (k, v) in rest.extra() {
        if !order.contains(&k.as_str()) && !has(k) {
            map.serialize_entry(k, v)?;
        }
    }
    Ok(())
}

/// Declares a struct that (de)serializes as a JavaScript object; see the module docs.
///
/// Field kinds: `req` (always written), `opt` (`Option<T>`, omitted when `None`), `nul`
/// (`Option<T>`, key required, `null` when `None`), `optnul` (`Option<Option<T>>`: absent,
/// `null`, or a value), `text` (a `String` written like `req`, long texts escaped by
/// `pi_js::json_str`, which is faster than serde_json's escaping). `via path` names a deserializer function for the value (e.g. lenient
/// integers). An optional leading `@tag "key" = "value";` declares a constant discriminator key.
///
/// The type's JSON Schema is derived from the same field list ([`record_schema`]), its doc
/// comments becoming the descriptions.
macro_rules! record {
    (
        $(#[$($meta:tt)*])*
        pub struct $name:ident {
            $(@tag $tag_key:literal = $tag_val:literal;)?
            $(
                $(#[$($fmeta:tt)*])*
                $kind:ident $field:ident : $ty:ty = $key:literal $(via $via:path)?;
            )*
        }
    ) => {
        $(#[$($meta)*])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[$($fmeta)*])* pub $field: $crate::record::record!(@fty $kind $ty), )*
            /// Unknown keys and the key order this value was read with.
            pub rest: $crate::record::Rest,
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(g: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let fields: ::std::vec::Vec<$crate::record::FieldSchema> = ::std::vec![
                    $( $crate::record::FieldSchema {
                        key: $key,
                        required: $crate::record::record!(@required $kind),
                        nullable: $crate::record::record!(@nullable $kind),
                        schema: g.subschema_for::<$ty>(),
                        doc: &[$($crate::record::record!(@doc $($fmeta)*)),*],
                    }, )*
                ];
                $crate::record::record_schema(&[$($crate::record::record!(@doc $($meta)*)),*], None $(.or(Some(($tag_key, $tag_val))))?, fields)
            }
        }

        impl $name {
            /// Every key this type models, in canonical order.
            pub const KEYS: &'static [&'static str] = &[$($tag_key,)? $($key),*];

            /// Builds the value from a parsed JSON object, keeping unknown keys and key order.
            pub fn from_map(
                map: ::serde_json::Map<String, ::serde_json::Value>,
            ) -> Result<Self, ::serde_json::Error> {
                $( let mut $field: Option<$crate::record::record!(@slot $kind $ty)> = None; )*
                $( let mut tag_seen = false; let _: &str = $tag_key; )?
                let mut rest = $crate::record::Rest::default();
                let mut tracker = $crate::record::OrderTracker::new();
                for (k, v) in map {
                    let pos = Self::KEYS.iter().position(|c| *c == k);
                    tracker.note(pos);
                    match k.as_str() {
                        $( $tag_key => {
                            if v.as_str() != Some($tag_val) {
                                return Err($crate::record::bad_tag($tag_key, $tag_val, &v));
                            }
                            tag_seen = true;
                        } )?
                        $( $key => {
                            $crate::record::record!(@parse $kind $field rest tracker k v $key $ty $(, $via)?);
                        } )*
                        _ => {
                            rest.extra_mut().insert(k, v);
                        }
                    }
                }
                $( if !tag_seen { return Err($crate::record::missing($tag_key)); } )?
                let order = tracker.finish(Self::KEYS, &rest);
                rest.set_order(order);
                Ok($name {
                    $( $field: $crate::record::record!(@finish $kind $field $key), )*
                    rest,
                })
            }

            #[allow(unused_assignments, unused_mut, unused_variables)]
            fn emit_field<M: ::serde::ser::SerializeMap>(
                &self,
                i: usize,
                m: &mut M,
            ) -> Result<bool, M::Error> {
                let mut idx = 0usize;
                $(
                    if i == idx {
                        m.serialize_entry($tag_key, $tag_val)?;
                        return Ok(true);
                    }
                    idx += 1;
                )?
                $(
                    if i == idx {
                        return $crate::record::record!(@emit $kind m $key &self.$field);
                    }
                    idx += 1;
                )*
                Ok(false)
            }

            fn has_key(&self, k: &str) -> bool {
                $( if k == $tag_key { return true; } )?
                $( if k == $key { return $crate::record::record!(@present $kind &self.$field); } )*
                false
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                if self.rest.order().is_canonical() {
                    $( m.serialize_entry($tag_key, $tag_val)?; )?
                    $( $crate::record::record!(@emit $kind m $key &self.$field)?; )*
                    for (k, v) in self.rest.extra() {
                        if !self.has_key(k) {
                            m.serialize_entry(k, v)?;
                        }
                    }
                } else {
                    $crate::record::serialize_ordered(
                        &mut m,
                        Self::KEYS,
                        &self.rest,
                        |i, m| self.emit_field(i, m),
                        |k| self.has_key(k),
                    )?;
                }
                m.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = <::serde_json::Map<String, ::serde_json::Value> as ::serde::Deserialize>::deserialize(d)?;
                Self::from_map(map).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };

    (@fty req $t:ty) => { $t };
    (@fty nul $t:ty) => { Option<$t> };
    (@fty opt $t:ty) => { Option<$t> };
    (@fty optnul $t:ty) => { Option<Option<$t>> };
    (@fty any $t:ty) => { Option<$t> };
    (@fty text $t:ty) => { $t };

    (@slot req $t:ty) => { $t };
    (@slot opt $t:ty) => { $t };
    (@slot nul $t:ty) => { Option<$t> };
    (@slot optnul $t:ty) => { Option<$t> };
    (@slot any $t:ty) => { $t };
    (@slot text $t:ty) => { $t };

    (@de $v:ident $t:ty) => { <$t as ::serde::Deserialize>::deserialize($v) };
    (@de $v:ident $t:ty, $via:path) => { $via($v) };

    (@parse req $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        $f = Some($crate::record::record!(@de $v $t $(, $via)?).map_err(|e| $crate::record::field_error($key, e))?);
    };
    (@parse opt $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        if $v.is_null() {
            $tr.force_recorded();
            $rest.extra_mut().insert($k, $v);
        } else {
            $f = Some($crate::record::record!(@de $v $t $(, $via)?).map_err(|e| $crate::record::field_error($key, e))?);
        }
    };
    (@parse nul $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        $f = Some(if $v.is_null() {
            None
        } else {
            Some($crate::record::record!(@de $v $t $(, $via)?).map_err(|e| $crate::record::field_error($key, e))?)
        });
    };
    (@parse any $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        $crate::record::record!(@parse req $f $rest $tr $k $v $key $t $(, $via)?)
    };
    (@parse text $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        $crate::record::record!(@parse req $f $rest $tr $k $v $key $t $(, $via)?)
    };
    (@parse optnul $f:ident $rest:ident $tr:ident $k:ident $v:ident $key:literal $t:ty $(, $via:path)?) => {
        $crate::record::record!(@parse nul $f $rest $tr $k $v $key $t $(, $via)?)
    };

    (@finish req $f:ident $key:literal) => {
        match $f { Some(x) => x, None => return Err($crate::record::missing($key)) }
    };
    (@finish nul $f:ident $key:literal) => {
        match $f { Some(x) => x, None => return Err($crate::record::missing($key)) }
    };
    (@finish opt $f:ident $key:literal) => { $f };
    (@finish optnul $f:ident $key:literal) => { $f };
    (@finish any $f:ident $key:literal) => { $f };
    (@finish text $f:ident $key:literal) => {
        $crate::record::record!(@finish req $f $key)
    };

    (@emit req $m:ident $key:literal $f:expr) => {{
        $m.serialize_entry($key, $f)?;
        Ok::<bool, _>(true)
    }};
    (@emit nul $m:ident $key:literal $f:expr) => {
        $crate::record::record!(@emit req $m $key $f)
    };
    (@emit opt $m:ident $key:literal $f:expr) => {
        match $f {
            Some(v) => {
                $m.serialize_entry($key, v)?;
                Ok::<bool, _>(true)
            }
            None => Ok(false),
        }
    };
    (@emit any $m:ident $key:literal $f:expr) => {
        match $f {
            // A JSON value (tool `details` may hold whole outputs): long strings escaped fast.
            Some(v) => {
                $m.serialize_entry($key, &::pi_js::json_str::JsValue(v))?;
                Ok::<bool, _>(true)
            }
            None => Ok(false),
        }
    };
    (@emit text $m:ident $key:literal $f:expr) => {{
        $m.serialize_entry($key, &::pi_js::json_str::JsonStr($f))?;
        Ok::<bool, _>(true)
    }};
    (@emit optnul $m:ident $key:literal $f:expr) => {
        $crate::record::record!(@emit opt $m $key $f)
    };

    (@doc doc = $d:literal) => { $d };
    (@doc $($other:tt)*) => { "" };

    (@required req) => { true };
    (@required nul) => { true };
    (@required opt) => { false };
    (@required optnul) => { false };
    (@required any) => { false };
    (@required text) => { true };

    (@nullable req) => { false };
    (@nullable nul) => { true };
    (@nullable opt) => { false };
    (@nullable optnul) => { true };
    (@nullable any) => { false };
    (@nullable text) => { false };

    (@present req $f:expr) => { true };
    (@present nul $f:expr) => { true };
    (@present opt $f:expr) => { ($f).is_some() };
    (@present optnul $f:expr) => { ($f).is_some() };
    (@present any $f:expr) => { ($f).is_some() };
    (@present text $f:expr) => { true };
}
pub(crate) use record;

/// One field of a record, for its JSON Schema.
#[doc(hidden)]
pub struct FieldSchema {
    pub key: &'static str,
    pub required: bool,
    /// `null` is a value of its own (`nul`, `optnul` fields).
    pub nullable: bool,
    pub schema: schemars::Schema,
    pub doc: &'static [&'static str],
}

/// The JSON Schema of a record: an object with the record's keys, the tag a constant. Unknown
/// keys are allowed (records keep them), so the schema stays open like the type.
#[doc(hidden)]
pub fn record_schema(
    doc: &[&str],
    tag: Option<(&str, &str)>,
    fields: Vec<FieldSchema>,
) -> schemars::Schema {
    let mut properties = Map::new();
    let mut required = Vec::new();
    if let Some((key, value)) = tag {
        properties.insert(key.into(), serde_json::json!({ "const": value }));
        required.push(Value::from(key));
    }
    for f in fields {
        let mut schema = f.schema.to_value();
        // `oneOf`, not the `anyOf` of schemars' `Option`: optional fields are never `null`
        // unless declared so, and `crate::schema` strips the `anyOf` form from them.
        if f.nullable {
            schema = serde_json::json!({ "oneOf": [schema, { "type": "null" }] });
        }
        if let Some(text) = doc_text(f.doc)
            && let Value::Object(map) = &mut schema
        {
            map.insert("description".into(), text.into());
        }
        if f.required {
            required.push(Value::from(f.key));
        }
        properties.insert(f.key.into(), schema);
    }
    let mut out = Map::new();
    if let Some(text) = doc_text(doc) {
        out.insert("description".into(), text.into());
    }
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(properties));
    out.insert("required".into(), Value::Array(required));
    schemars::Schema::from(out)
}

/// Doc comment lines as one description (`None` without any).
pub(crate) fn doc_text(lines: &[&str]) -> Option<String> {
    let text = lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// A JSON object with string keys and typed values (`Record<string, V>` in TypeScript), in the
/// order JavaScript would enumerate it: array-index keys (`"0"`, `"17"`) first in ascending
/// numeric order, then the other keys in insertion order. A repeated key keeps its first position
/// and takes the last value, as `JSON.parse` does.
#[derive(Clone, PartialEq, Default)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> OrderedMap<V> {
    pub fn new() -> Self {
        OrderedMap(Vec::new())
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets `key`, keeping its position if it exists (JavaScript assignment semantics).
    pub fn insert(&mut self, key: String, value: V) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl<V: fmt::Debug> fmt::Debug for OrderedMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// An ECMAScript array index: the canonical decimal form of an integer below 2^32 − 1.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u32>().ok().filter(|n| *n != u32::MAX)
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        let mut indexed: Vec<(u32, &String, &V)> = self
            .0
            .iter()
            .filter_map(|(k, v)| array_index(k).map(|n| (n, k, v)))
            .collect();
        indexed.sort_by_key(|(n, _, _)| *n);
        for (_, k, v) in &indexed {
            m.serialize_entry(k, v)?;
        }
        for (k, v) in &self.0 {
            if array_index(k).is_none() {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for V2<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = OrderedMap::new();
                while let Some((k, v)) = a.next_entry::<String, V>()? {
                    out.insert(k, v);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V2(std::marker::PhantomData))
    }
}

impl<V> FromIterator<(String, V)> for OrderedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut m = OrderedMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    record! {
        /// A test record.
        pub struct Probe {
            @tag "type" = "probe";
            req a: u64 = "a" via crate::num::de_u64;
            opt b: String = "b";
            nul c: String = "c";
            optnul d: String = "d";
            any e: serde_json::Value = "e";
        }
    }

    fn rt(s: &str) -> String {
        let p: Probe = serde_json::from_str(s).unwrap();
        to_js_string(&p).unwrap()
    }

    #[test]
    fn round_trips_any_order_and_unknown_keys() {
        for s in [
            r#"{"type":"probe","a":1,"b":"x","c":null}"#,
            r#"{"type":"probe","a":1,"c":"y","d":null}"#,
            r#"{"c":"y","type":"probe","z":[1],"a":2,"d":"q"}"#,
            r#"{"type":"probe","a":1,"b":null,"c":null,"extra":{"k":1}}"#,
            r#"{"type":"probe","a":1,"c":null,"e":null}"#,
        ] {
            assert_eq!(rt(s), s);
        }
        assert_eq!(
            rt(r#"{"type":"probe","a":3.0,"c":null}"#),
            r#"{"type":"probe","a":3,"c":null}"#
        );
    }

    #[test]
    fn errors_name_the_field() {
        let e = serde_json::from_str::<Probe>(r#"{"type":"probe","c":null}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `a`"), "{e}");
        let e = serde_json::from_str::<Probe>(r#"{"type":"x","a":1,"c":null}"#).unwrap_err();
        assert!(e.to_string().contains("expected `type`"), "{e}");
        let e = serde_json::from_str::<Probe>(r#"{"type":"probe","a":1.5,"c":null}"#).unwrap_err();
        assert!(e.to_string().contains("invalid `a`"), "{e}");
    }

    #[test]
    fn edits_behave_like_javascript_objects() {
        let mut p: Probe = serde_json::from_str(r#"{"c":null,"type":"probe","a":1}"#).unwrap();
        p.b = Some("new".into());
        p.d = Some(None);
        assert_eq!(
            to_js_string(&p).unwrap(),
            r#"{"c":null,"type":"probe","a":1,"b":"new","d":null}"#
        );
        let built = Probe {
            a: 1,
            b: None,
            c: Some("c".into()),
            d: None,
            e: None,
            rest: Rest::with_order(&["c", "a", "type"]),
        };
        assert_eq!(
            to_js_string(&built).unwrap(),
            r#"{"c":"c","a":1,"type":"probe"}"#
        );
    }

    #[test]
    fn ordered_map_enumerates_like_javascript() {
        let m: OrderedMap<u8> =
            serde_json::from_str(r#"{"b":1,"2":2,"a":3,"1":4,"b":5,"01":6}"#).unwrap();
        assert_eq!(
            to_js_string(&m).unwrap(),
            r#"{"1":4,"2":2,"b":5,"a":3,"01":6}"#
        );
    }
}
