//! Indexes the lines of the embedded model catalog at build time, so startup can slice out the
//! lines it needs without scanning (and paging in) the whole megabyte, makes its header (the
//! providers and their default models) statics, and turns the models.json
//! schema into Rust statics (`src/schema.rs`), so checking a models.json parses no schema: the
//! parse into a `serde_json::Value` was about a quarter of a short-lived agent's instructions.

use std::fmt::Write;

fn main() {
    let path = "data/catalog.jsonl";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out =
        String::from("/// Byte ranges of the catalog's lines (without their line ends).\n");
    out.push_str("pub(crate) static CATALOG_LINES: &[(usize, usize)] = &[\n");
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n').trim_end_matches('\r');
        let _ = writeln!(out, "    ({start}, {}),", start + body.len());
        start += line.len();
    }
    out.push_str("];\n");
    header_statics(&mut out, text.lines().next().unwrap_or("{}"));
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let _ = std::fs::write(format!("{dir}/catalog_lines.rs"), out);

    let path = "data/models-schema.json";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let schema: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => panic!("{path}: {e}"),
    };
    let mut code = String::from("/// Pi's models.json schema (`data/models-schema.json`).\n");
    code.push_str("pub(crate) static MODELS_SCHEMA: S = ");
    schema_expr(&mut code, &schema);
    code.push_str(";\n");
    let _ = std::fs::write(format!("{dir}/models_schema.rs"), code);
}

/// The catalog's first line (its header) as statics, so a start parses no JSON for it: every
/// string in one text (no pointers for the loader to relocate), each entry the byte ranges of
/// its two strings.
fn header_statics(out: &mut String, line: &str) {
    use serde_json::Value;
    /// Two strings' byte ranges in the text.
    type Pair = ((usize, usize), (usize, usize));
    let header: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => panic!("catalog header: {e}"),
    };
    let mut text = String::new();
    let mut push = |s: &str| {
        let start = text.len();
        text.push_str(s);
        (start, text.len())
    };
    let str_of = |v: Option<&Value>, what: &str| match v.and_then(Value::as_str) {
        Some(s) => s.to_owned(),
        None => panic!("catalog header: {what} is not a string"),
    };
    let mut providers = Vec::new();
    for p in header["providers"].as_array().into_iter().flatten() {
        let (id, name) = (
            str_of(p.get("id"), "a provider's id"),
            str_of(p.get("name"), "a provider's name"),
        );
        providers.push((push(&id), push(&name)));
    }
    let mut defaults = Vec::new();
    for (provider, model) in header["defaultModels"].as_object().into_iter().flatten() {
        let model = str_of(Some(model), "a default model");
        defaults.push((push(provider), push(&model)));
    }
    let ranges = |entries: &[Pair]| {
        entries
            .iter()
            .map(|((a, b), (c, d))| format!("({a}, {b}, {c}, {d})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let generated = match header.get("generatedAtMs").and_then(Value::as_f64) {
        Some(ms) => format!("Some({ms:?})"),
        None => "None".to_owned(),
    };
    let _ = writeln!(out, "/// The strings of the catalog header.");
    let _ = writeln!(out, "pub(crate) static HEADER_TEXT: &str = {text:?};");
    let _ = writeln!(
        out,
        "/// `(id, name)` of each built-in provider, as ranges of `HEADER_TEXT`."
    );
    let _ = writeln!(
        out,
        "pub(crate) static HEADER_PROVIDERS: &[(usize, usize, usize, usize)] = &[{}];",
        ranges(&providers)
    );
    let _ = writeln!(
        out,
        "/// `(provider, model)` of `defaultModelPerProvider`, in its order."
    );
    let _ = writeln!(
        out,
        "pub(crate) static HEADER_DEFAULT_MODELS: &[(usize, usize, usize, usize)] = &[{}];",
        ranges(&defaults)
    );
    let _ = writeln!(
        out,
        "/// When the catalog was generated (ms since the epoch)."
    );
    let _ = writeln!(
        out,
        "pub(crate) static HEADER_GENERATED_AT_MS: Option<f64> = {generated};"
    );
}

/// A Rust expression of `schema::S` for one schema. Keywords `src/schema.rs` does not check, and
/// values of a shape it does not model, stop the build instead of being skipped.
fn schema_expr(out: &mut String, schema: &serde_json::Value) {
    use serde_json::Value;
    let obj = match schema {
        Value::Bool(true) => return out.push_str("S::Any"),
        Value::Bool(false) => return out.push_str("S::Never"),
        Value::Object(obj) => obj,
        other => panic!("models.json schema: not a schema: {other}"),
    };
    let text = |v: &Value| match v {
        Value::String(s) => format!("{s:?}"),
        other => panic!("models.json schema: expected a string, found {other}"),
    };
    let number = |v: &Value| match v.as_f64() {
        Some(n) => format!("Some({n:?})"),
        None => panic!("models.json schema: expected a number, found {v}"),
    };
    let texts = |v: &Value| match v {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(text).collect();
            format!("Some(&[{}])", items.join(", "))
        }
        other => panic!("models.json schema: expected an array, found {other}"),
    };
    let mut fields: Vec<(&str, String)> = Vec::new();
    for (key, v) in obj {
        let field = match key.as_str() {
            "type" => ("ty", format!("Some({})", text(v))),
            "const" => ("konst", format!("Some({})", text(v))),
            "enum" => ("one_of", texts(v)),
            "required" => ("required", texts(v)),
            "minLength" => ("min_length", number(v)),
            "maxItems" => ("max_items", number(v)),
            "minItems" => ("min_items", number(v)),
            "exclusiveMaximum" => ("exclusive_maximum", number(v)),
            "exclusiveMinimum" => ("exclusive_minimum", number(v)),
            "maximum" => ("maximum", number(v)),
            "minimum" => ("minimum", number(v)),
            "items" | "additionalProperties" => {
                let mut e = String::from("Some(&");
                schema_expr(&mut e, v);
                e.push(')');
                (
                    if key == "items" {
                        "items"
                    } else {
                        "additional_properties"
                    },
                    e,
                )
            }
            "anyOf" => {
                let Value::Array(options) = v else {
                    panic!("models.json schema: anyOf is not an array")
                };
                let mut e = String::from("Some(&[");
                for o in options {
                    schema_expr(&mut e, o);
                    e.push_str(", ");
                }
                e.push_str("])");
                ("any_of", e)
            }
            "properties" | "patternProperties" => {
                let Value::Object(props) = v else {
                    panic!("models.json schema: {key} is not an object")
                };
                let mut e = String::from("Some(&[");
                for (name, sub) in props {
                    e.push_str(&format!("({name:?}, "));
                    schema_expr(&mut e, sub);
                    e.push_str("), ");
                }
                e.push_str("])");
                (
                    if key == "properties" {
                        "properties"
                    } else {
                        "pattern_properties"
                    },
                    e,
                )
            }
            other => {
                panic!("models.json schema: keyword {other:?} is not checked by src/schema.rs")
            }
        };
        fields.push(field);
    }
    out.push_str("S::Obj(&Obj { ");
    for (name, value) in fields {
        out.push_str(&format!("{name}: {value}, "));
    }
    out.push_str("..Obj::NONE })");
}
