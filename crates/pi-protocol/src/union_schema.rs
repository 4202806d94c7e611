//! The schema of a tagged union: `oneOf` its variants, and the catch-all object a union keeps
//! for tags Pi 1.6.0 does not define. Used by the wire types' hand-written schemas
//! (`schema.rs`) and by the content blocks' macro (`content.rs`).

use crate::record::doc_text;
use schemars::Schema;
use serde_json::{Map, Value, json};

/// `oneOf` the variants (each a tagged object, so exactly one matches), with a description.
pub(crate) fn one_of(doc: &[&str], variants: Vec<Value>) -> Schema {
    let mut out = Map::new();
    if let Some(text) = doc_text(doc) {
        out.insert("description".into(), text.into());
    }
    out.insert("oneOf".into(), Value::Array(variants));
    Schema::from(out)
}

/// An object whose `key` is none of `known`: what the catch-all variant of a tagged union keeps
/// (a message role or entry type Pi 1.6.0 does not define, written back verbatim).
pub(crate) fn other_object(description: &str, key: &str, known: &[&str]) -> Value {
    json!({
        "description": description,
        "type": "object",
        "not": { "required": [key], "properties": { key: { "enum": known } } },
    })
}
