//! JavaScript value semantics over `serde_json::Value`: strict and deep equality, `typeof`-style
//! names, `String(number)` and `Number(string)`, the way pi-schema sees tool arguments.

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
    pi_protocol::json::js_number_value(v)
}

/// `String(v)` of a finite number.
pub(crate) fn number_to_string(v: f64) -> String {
    let mut out = String::new();
    pi_protocol::json::push_js_number(&mut out, v);
    out
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
    pi_protocol::json::to_js_string(v).unwrap_or_default()
}

/// The number of UTF-16 code units of `s` (JavaScript's `s.length`).
pub(crate) fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// JavaScript's WhiteSpace and LineTerminator characters (what `trim()` removes).
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `s.trim()`.
pub(crate) fn trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `Number(s)` for a string: NaN when it is not a numeric literal.
pub(crate) fn string_to_number(s: &str) -> f64 {
    let t = trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_integer(&t[2..], radix);
        }
    }
    let (sign, body) = match b[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    match decimal_literal(body) {
        Some(v) => sign * v,
        None => f64::NAN,
    }
}

/// An unsigned decimal literal (`12`, `1.5`, `.5`, `5.`, `1e-3`), correctly rounded.
fn decimal_literal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_part = &s[int_start..i];
    let mut frac_part = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_part = &s[start..i];
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut exp = "0";
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let start = i + 1;
        let mut j = start;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == digits {
            return None;
        }
        exp = &s[start..j];
        i = j;
    }
    if i != b.len() {
        return None;
    }
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let frac_part = if frac_part.is_empty() { "0" } else { frac_part };
    format!("{int_part}.{frac_part}e{exp}").parse::<f64>().ok()
}

fn radix_integer(digits: &str, radix: u32) -> f64 {
    if digits.is_empty() {
        return f64::NAN;
    }
    let mut exact: Option<u128> = Some(0);
    let mut approx = 0.0f64;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return f64::NAN;
        };
        exact = exact
            .and_then(|e| e.checked_mul(u128::from(radix)))
            .and_then(|e| e.checked_add(u128::from(d)));
        approx = approx * f64::from(radix) + f64::from(d);
    }
    exact.map_or(approx, |e| e as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_to_number_follows_javascript() {
        let cases: &[(&str, f64)] = &[
            ("", 0.0),
            ("  ", 0.0),
            (" 12 ", 12.0),
            ("1.5", 1.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("-0x10", f64::NAN),
            ("0x10", 16.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("1e3", 1000.0),
            ("1e", f64::NAN),
            ("+7", 7.0),
            ("-Infinity", f64::NEG_INFINITY),
            ("inf", f64::NAN),
            ("1_000", f64::NAN),
            ("12n", f64::NAN),
            ("\u{a0}3\u{2028}", 3.0),
        ];
        for (s, want) in cases {
            let got = string_to_number(s);
            assert!(
                got == *want || (got.is_nan() && want.is_nan()),
                "Number({s:?}) = {got}, want {want}"
            );
        }
    }
}
