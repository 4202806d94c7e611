//! The GBNF grammar (llama.cpp's constrained sampling) used when tools are declared: the model
//! either answers in text (anything not starting with `<`) or writes exactly one tool call,
//!
//! ```text
//! <tool_call>
//! {"name": "<one of the tools>", "arguments": <an object matching that tool's schema>}
//! </tool_call>
//! ```
//!
//! and then must stop. A small model cannot be trusted to write valid JSON, let alone follow a
//! schema; under this grammar every call it makes parses and has the tool's required keys.
//!
//! JSON Schema coverage: `type` (one or several), `properties` + `required` (keys in declared
//! order, required ones first), `items`, `enum`, `const`, `anyOf`/`oneOf`. Anything else
//! (`$ref`, `pattern`, `additionalProperties`, ...) is accepted as any JSON value of the type.

use crate::prompt::{CALL_CLOSE, CALL_OPEN};
use pi_protocol::tool::Tool;
use serde_json::Value;

/// Nesting beyond this takes any JSON value (keeps a hostile schema from growing the grammar).
const MAX_DEPTH: usize = 12;

/// Shared rules. Numbers have bounded digits so a looping model cannot write one forever.
const PRIMITIVES: &str = r#"ws ::= " "?
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" hex hex hex hex)
hex ::= [0-9a-fA-F]
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ( "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( "," ws value )* )? ws "]"
"#;

/// The grammar for a request whose tools may not be called any more: an answer that does not
/// start like a call.
pub fn text_grammar() -> String {
    "root ::= text\ntext ::= [^<] [^\\x00]*\n".into()
}

/// The grammar for a request that declares `tools` (which must not be empty).
pub fn tool_grammar(tools: &[Tool]) -> String {
    let mut b = Builder::default();
    let calls: Vec<String> = tools
        .iter()
        .map(|t| {
            let hint = sanitize(&t.name);
            let args = b.object_schema(&t.parameters, &format!("{hint}-args"), 0);
            let body = format!(
                r#""{{" ws "\"name\"" ws ":" ws {} ws "," ws "\"arguments\"" ws ":" ws {args} ws "}}""#,
                literal(&Value::String(t.name.clone()).to_string())
            );
            b.add(&format!("{hint}-call"), body)
        })
        .collect();
    let mut out = String::new();
    out.push_str("root ::= text | call\n");
    // Text may not start with `<`: that is how a call is told from an answer at the first token.
    out.push_str("text ::= [^<] [^\\x00]*\n");
    out.push_str(&format!(
        "call ::= {} \"\\n\"? ( {} ) \"\\n\"? {}\n",
        literal(CALL_OPEN),
        calls.join(" | "),
        literal(CALL_CLOSE)
    ));
    for (name, body) in &b.rules {
        out.push_str(&format!("{name} ::= {body}\n"));
    }
    out.push_str(PRIMITIVES);
    out
}

#[derive(Default)]
struct Builder {
    rules: Vec<(String, String)>,
}

impl Builder {
    /// Adds a rule under a unique name derived from `hint`; returns the name.
    fn add(&mut self, hint: &str, body: String) -> String {
        let mut name = hint.to_string();
        let mut n = 1;
        while self.rules.iter().any(|(r, _)| *r == name) || is_reserved(&name) {
            n += 1;
            name = format!("{hint}-{n}");
        }
        self.rules.push((name.clone(), body));
        name
    }

    /// Tool arguments are always an object, whatever the schema says.
    fn object_schema(&mut self, schema: &Value, hint: &str, depth: usize) -> String {
        let is_object = match schema.get("type") {
            Some(Value::String(t)) => t == "object",
            None => schema.get("properties").is_some(),
            _ => false,
        };
        if is_object {
            self.schema(schema, hint, depth)
        } else {
            "object".into()
        }
    }

    /// An expression (a rule name or a literal group) for values matching `schema`.
    fn schema(&mut self, schema: &Value, hint: &str, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "value".into();
        }
        let Some(obj) = schema.as_object() else {
            return "value".into();
        };
        if let Some(c) = obj.get("const") {
            return literal(&c.to_string());
        }
        if let Some(Value::Array(options)) = obj.get("enum") {
            let alts: Vec<String> = options.iter().map(|v| literal(&v.to_string())).collect();
            return match alts.len() {
                0 => "value".into(),
                _ => format!("( {} )", alts.join(" | ")),
            };
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = obj.get(key) {
                let alts: Vec<String> = options
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.schema(s, &format!("{hint}-{i}"), depth + 1))
                    .collect();
                if !alts.is_empty() {
                    return format!("( {} )", alts.join(" | "));
                }
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(t, obj, hint, depth),
            Some(Value::Array(types)) => {
                let alts: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(t, obj, hint, depth))
                    .collect();
                match alts.len() {
                    0 => "value".into(),
                    _ => format!("( {} )", alts.join(" | ")),
                }
            }
            _ if obj.contains_key("properties") => self.typed("object", obj, hint, depth),
            _ => "value".into(),
        }
    }

    fn typed(
        &mut self,
        ty: &str,
        obj: &serde_json::Map<String, Value>,
        hint: &str,
        depth: usize,
    ) -> String {
        match ty {
            "string" => "string".into(),
            "integer" => "integer".into(),
            "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match obj.get("items") {
                Some(items) if items.is_object() => {
                    let item = self.schema(items, &format!("{hint}-item"), depth + 1);
                    let body = format!(r#""[" ws ( {item} ( "," ws {item} )* )? ws "]""#);
                    self.add(hint, body)
                }
                _ => "array".into(),
            },
            "object" => match obj.get("properties").and_then(Value::as_object) {
                Some(props) if !props.is_empty() => self.properties(obj, props, hint, depth),
                _ => "object".into(),
            },
            _ => "value".into(),
        }
    }

    /// Required keys in declared order, then each optional key at most once, in declared order.
    fn properties(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        props: &serde_json::Map<String, Value>,
        hint: &str,
        depth: usize,
    ) -> String {
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (key, schema) in props {
            let value = self.schema(schema, &format!("{hint}-{}", sanitize(key)), depth + 1);
            let kv = format!(
                "{} ws \":\" ws {value}",
                literal(&Value::String(key.clone()).to_string())
            );
            if required.contains(&key.as_str()) {
                req.push(kv);
            } else {
                opt.push(kv);
            }
        }
        let tail = |from: usize| -> String {
            opt[from..]
                .iter()
                .map(|kv| format!(" ( \",\" ws {kv} )?"))
                .collect()
        };
        let inner = if req.is_empty() {
            // No required key: the first key present decides where the optional chain starts.
            let alts: Vec<String> = (0..opt.len())
                .map(|i| format!("{}{}", opt[i], tail(i + 1)))
                .collect();
            format!("( {} )?", alts.join(" | "))
        } else {
            format!("{}{}", req.join(" \",\" ws "), tail(0))
        };
        self.add(hint, format!(r#""{{" ws {inner} ws "}}""#))
    }
}

fn is_reserved(name: &str) -> bool {
    [
        "root", "text", "call", "ws", "string", "char", "hex", "integer", "number", "boolean",
        "null", "value", "object", "array",
    ]
    .contains(&name)
}

/// A rule-name fragment: GBNF names are `[a-zA-Z0-9-]+`.
fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if out.is_empty() { "t".into() } else { out }
}

/// A GBNF string literal matching `s` exactly.
fn literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, parameters: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "description": "", "parameters": parameters}))
            .unwrap()
    }

    fn rules(grammar: &str) -> Vec<&str> {
        grammar
            .lines()
            .take_while(|l| !l.starts_with("ws ::="))
            .collect()
    }

    #[test]
    fn literals_escape_quotes_backslashes_and_controls() {
        assert_eq!(literal(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(literal("x\ny\u{1}"), r#""x\ny\x01""#);
        assert_eq!(literal("\"ls\""), r#""\"ls\"""#);
    }

    #[test]
    fn required_keys_come_first_and_optional_ones_may_follow_in_order() {
        let g = tool_grammar(&[tool(
            "read",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"}, "offset": {"type": "number"},
                "limit": {"type": "integer"}}}),
        )]);
        assert_eq!(
            rules(&g),
            vec![
                "root ::= text | call",
                "text ::= [^<] [^\\x00]*",
                r#"call ::= "<tool_call>" "\n"? ( read-call ) "\n"? "</tool_call>""#,
                r#"read-args ::= "{" ws "\"path\"" ws ":" ws string ( "," ws "\"offset\"" ws ":" ws number )? ( "," ws "\"limit\"" ws ":" ws integer )? ws "}""#,
                r#"read-call ::= "{" ws "\"name\"" ws ":" ws "\"read\"" ws "," ws "\"arguments\"" ws ":" ws read-args ws "}""#,
            ]
        );
    }

    #[test]
    fn all_optional_keys_let_any_one_start_the_object() {
        let g = tool_grammar(&[tool(
            "ls",
            json!({"type": "object", "properties": {"path": {"type": "string"},
                "limit": {"type": "number"}}}),
        )]);
        assert!(g.contains(
            r#"ls-args ::= "{" ws ( "\"path\"" ws ":" ws string ( "," ws "\"limit\"" ws ":" ws number )? | "\"limit\"" ws ":" ws number )? ws "}""#
        ), "{g}");
    }

    #[test]
    fn nested_arrays_enums_unions_and_odd_names_get_their_own_rules() {
        let g = tool_grammar(&[
            tool(
                "my tool",
                json!({"type": "object", "required": ["edits", "mode"], "properties": {
                    "edits": {"type": "array", "items": {"type": "object",
                        "required": ["oldText"], "properties": {"oldText": {"type": "string"}}}},
                    "mode": {"enum": ["a", "b"]},
                    "n": {"type": ["integer", "null"]},
                    "x": {"anyOf": [{"const": 1}, {"type": "boolean"}]}}}),
            ),
            tool("bare", json!({"type": "string"})),
        ]);
        let r = rules(&g);
        assert_eq!(
            r[2],
            r#"call ::= "<tool_call>" "\n"? ( my-tool-call | bare-call ) "\n"? "</tool_call>""#
        );
        assert!(r.contains(
            &r#"my-tool-args-edits-item ::= "{" ws "\"oldText\"" ws ":" ws string ws "}""#
        ));
        assert!(r.contains(&r#"my-tool-args-edits ::= "[" ws ( my-tool-args-edits-item ( "," ws my-tool-args-edits-item )* )? ws "]""#));
        assert!(r.iter().any(|l| l.starts_with("my-tool-args ::= ")
            && l.contains(r#"( "\"a\"" | "\"b\"" )"#)
            && l.contains("( integer | null )")
            && l.contains(r#"( "1" | boolean )"#)));
        // A non-object schema still yields an object of arguments.
        assert!(
            r.iter()
                .any(|l| l.starts_with("bare-call ::= ") && l.ends_with(r#"ws object ws "}""#))
        );
    }
}
