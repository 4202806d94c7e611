//! JavaScript value semantics pi-schema needs over `serde_json::Value`: strict and deep equality,
//! `typeof`-style names (general conversions live in `pi_js`).

use serde_json::Value;

/// A number's value as JavaScript holds it (every JSON number is a double there).
pub(crate) fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// The canonical `Value` of a JavaScript number.
pub(crate) fn number_value(v: f64) -> Value {
    pi_js::json::js_number_value(v)
}

/// `Number.isInteger(v)`.
pub(crate) fn is_integer(v: &Value) -> bool {
    num(v).is_some_and(|x| x.is_finite() && x.fract() == 0.0)
}

/// `a === b`: primitives by value, objects and arrays only when they are the same value.
pub(crate) fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(_), Value::Number(_)) => num(a) == num(b),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            std::ptr::eq(a, b)
        }
        _ => false,
    }
}

/// `Object.is(a, b)` for primitives, identity for objects and arrays.
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => match (num(a), num(b)) {
            (Some(x), Some(y)) => x.to_bits() == y.to_bits() || (x == y && x != 0.0),
            _ => false,
        },
        _ => strict_eq(a, b),
    }
}

/// Whether `v` is an object or an array (JavaScript's `typeof v === "object" && v !== null`).
pub(crate) fn is_container(v: &Value) -> bool {
    matches!(v, Value::Array(_) | Value::Object(_))
}

/// JSON equality as `const`, `enum` and `uniqueItems` compare: key order does not matter.
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => strict_eq(a, b),
    }
}

/// The type name pi-schema prints in `expected …, got <name>`.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => {
            if is_integer(v) {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `JSON.stringify(v)`.
pub(crate) fn stringify(v: &Value) -> String {
    pi_js::json::to_js_string(v).unwrap_or_default()
}
