//! JSON output that is byte-identical to JavaScript's `JSON.stringify`.
//!
//! serde_json already escapes strings the way V8 does (control characters as `\b \t \n \f \r` or
//! lowercase `\u00xx`, everything else raw). Numbers differ: JavaScript prints `120` for `120.0`,
//! `0.000015` where ryu prints `1.5e-5`, and `1e+21` with an explicit sign. [`JsFormatter`] fixes
//! that, so every record we write goes through [`to_js_string`].

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};
use std::io;

/// A compact formatter whose floats follow ECMAScript's `Number::toString`.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsFormatter;

impl Formatter for JsFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        // Token counts and costs are mostly whole: written without a buffer.
        if let Some(whole) = safe_integer(value) {
            return write!(writer, "{whole}");
        }
        let mut buf = String::new();
        push_js_number(&mut buf, value);
        writer.write_all(buf.as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }

    fn write_null<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        CompactFormatter.write_null(writer)
    }
}

/// Appends `value` formatted as JavaScript's `String(value)` inside `JSON.stringify`
/// (non-finite values become `null`, as `JSON.stringify` writes them).
pub fn push_js_number(out: &mut String, value: f64) {
    if let Some(whole) = safe_integer(value) {
        use std::fmt::Write;
        let _ = write!(out, "{whole}");
        return;
    }
    if !value.is_finite() {
        out.push_str("null");
        return;
    }
    if value == 0.0 {
        // Covers -0 too: JSON.stringify(-0) is "0".
        out.push('0');
        return;
    }
    if value < 0.0 {
        out.push('-');
    }
    let mut ryu_buf = ryu::Buffer::new();
    let shortest = ryu_buf.format_finite(value.abs());
    let (digits, point) = decimal_digits(shortest);
    let k = digits.len() as i32;
    let n = point;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let exp = n - 1;
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp >= 0 { '+' } else { '-' });
        out.push_str(&exp.abs().to_string());
    }
}

/// `value` as an integer when it is one below 2^53 in magnitude, where JavaScript writes all its
/// digits and nothing else (`-0` is `0`). Larger whole numbers keep only their shortest
/// round-trip digits in JavaScript (`2**60` is `1152921504606847000`).
fn safe_integer(value: f64) -> Option<i64> {
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    (value.fract() == 0.0 && value.abs() < LIMIT).then_some(value as i64)
}

/// Splits ryu's shortest representation into significant digits (no leading or trailing zeros)
/// and the decimal exponent `n` such that the value is `0.digits × 10^n`.
fn decimal_digits(repr: &str) -> (String, i32) {
    let (mantissa, exp) = match repr.find(['e', 'E']) {
        Some(i) => (&repr[..i], repr[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (repr, 0),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut point = int_part.len() as i32 + exp;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..leading);
    point -= leading as i32;
    let trimmed = digits.trim_end_matches('0').len();
    digits.truncate(trimmed);
    if digits.is_empty() {
        digits.push('0');
        point = 1;
    }
    (digits, point)
}

/// Serializes `value` the way `JSON.stringify` would have.
pub fn to_js_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    to_js_string_sized(value, 128)
}

/// [`to_js_string`] into a buffer of `capacity` bytes to start with (a good guess saves the
/// copies and fresh pages of growing a large output by doubling).
pub fn to_js_string_sized<T: Serialize + ?Sized>(
    value: &T,
    capacity: usize,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(capacity);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsFormatter);
    value.serialize(&mut ser)?;
    // SAFETY: serde_json writes the bytes of the `&str`s it is given (whole, or split at ASCII
    // escapes), fragments that are `&str`s, and ASCII of its own; [`JsFormatter`] adds ASCII
    // digits. serde_json's own `to_string` relies on the same. A check here was ~1% of a tool
    // turn (every record is checked whole).
    #[allow(unsafe_code)]
    Ok(unsafe { String::from_utf8_unchecked(out) })
}

/// Writes `value` the way `JSON.stringify` would have, straight into `writer` (large values
/// need no intermediate string).
pub fn write_js<W: io::Write, T: Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(writer, JsFormatter);
    value.serialize(&mut ser)
}

/// Serializes `value` as one JSONL record: `JSON.stringify(value) + "\n"`.
pub fn to_js_line<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut s = to_js_string(value)?;
    s.push('\n');
    Ok(s)
}

/// A pretty formatter whose output is `JSON.stringify(value, null, 2)`: two-space indentation,
/// `"key": value`, `{}` and `[]` for empty containers, numbers as [`JsFormatter`] writes them.
#[derive(Debug, Clone)]
pub struct JsPrettyFormatter {
    inner: serde_json::ser::PrettyFormatter<'static>,
}

impl Default for JsPrettyFormatter {
    fn default() -> Self {
        JsPrettyFormatter {
            inner: serde_json::ser::PrettyFormatter::with_indent(b"  "),
        }
    }
}

impl Formatter for JsPrettyFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        JsFormatter.write_f64(writer, value)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        JsFormatter.write_f32(writer, value)
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.inner.end_object_value(writer)
    }
}

/// Serializes `value` the way `JSON.stringify(value, null, indent)` would have, `indent` being
/// the indentation string (one space, two, a tab).
pub fn to_js_string_indented<T: Serialize + ?Sized>(
    value: &T,
    indent: &'static [u8],
) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    let formatter = JsPrettyFormatter {
        inner: serde_json::ser::PrettyFormatter::with_indent(indent),
    };
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut ser)?;
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// Serializes `value` the way `JSON.stringify(value, null, 2)` would have.
pub fn to_js_string_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    to_js_string_indented(value, b"  ")
}

/// 2^53: integers up to this magnitude are exact in an `f64`.
const MAX_SAFE_MAGNITUDE: f64 = 9_007_199_254_740_992.0;

/// The canonical `Value` of a JavaScript number, as [`crate::parse::parse_js_json`] builds
/// numbers: an integer of magnitude at most 2^53 is a `u64`/`i64`, `-0` and every other finite
/// value an `f64`, and a non-finite value `null` (as `JSON.stringify` writes it).
pub fn js_number_value(v: f64) -> serde_json::Value {
    use serde_json::{Number, Value};
    if !v.is_finite() {
        return Value::Null;
    }
    if v.fract() == 0.0 && v.abs() <= MAX_SAFE_MAGNITUDE && !(v == 0.0 && v.is_sign_negative()) {
        return if v >= 0.0 {
            Value::Number(Number::from(v as u64))
        } else {
            Value::Number(Number::from(v as i64))
        };
    }
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(v: f64) -> String {
        let mut s = String::new();
        push_js_number(&mut s, v);
        s
    }

    #[test]
    fn numbers_print_like_javascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (120.0, "120"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.0003 + 0.00000000000000000003, "0.00030000000000000003"),
            (0.000015, "0.000015"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e21, "1e+21"),
            (1.25e21, "1.25e+21"),
            (1e20, "100000000000000000000"),
            (-7.0, "-7"),
            (9007199254740991.0, "9007199254740991"),
            (-9007199254740991.0, "-9007199254740991"),
            (9007199254740992.0, "9007199254740992"),
            (1152921504606846976.0, "1152921504606847000"),
            (f64::NEG_INFINITY, "null"),
            (123456789012345680000.0, "123456789012345680000"),
            (0.06, "0.06"),
            (3.75, "3.75"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (v, want) in cases {
            assert_eq!(js(*v), *want, "formatting {v:e}");
            // The serializer's own path (whole numbers skip the buffer) agrees.
            assert_eq!(to_js_string(v).unwrap(), *want, "serializing {v:e}");
        }
    }

    #[test]
    fn values_serialize_like_json_stringify() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"b":1.0,"a":[0.5,2e-7,"x\u0001\u2028/\u007f"],"c":null}"#)
                .unwrap();
        assert_eq!(
            to_js_string(&v).unwrap(),
            "{\"b\":1,\"a\":[0.5,2e-7,\"x\\u0001\u{2028}/\u{7f}\"],\"c\":null}"
        );
    }
    #[test]
    fn pretty_output_matches_json_stringify_with_indent_2() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"a":1.0,"b":[],"c":{},"d":[1,{"e":null,"f":[true,"x"]}],"g":1e21}"#,
        )
        .unwrap();
        assert_eq!(
            to_js_string_pretty(&v).unwrap(),
            "{\n  \"a\": 1,\n  \"b\": [],\n  \"c\": {},\n  \"d\": [\n    1,\n    {\n      \"e\": null,\n      \"f\": [\n        true,\n        \"x\"\n      ]\n    }\n  ],\n  \"g\": 1e+21\n}"
        );
        assert_eq!(to_js_string_pretty(&serde_json::json!({})).unwrap(), "{}");
        assert_eq!(
            to_js_string_pretty(&serde_json::json!("s")).unwrap(),
            "\"s\""
        );
    }

    #[test]
    fn js_numbers_are_canonical() {
        assert_eq!(js_number_value(3.0), serde_json::json!(3));
        assert_eq!(js_number_value(-3.0), serde_json::json!(-3));
        assert_eq!(js_number_value(2.5), serde_json::json!(2.5));
        assert!(
            js_number_value(-0.0)
                .as_f64()
                .is_some_and(|z| z.is_sign_negative())
        );
        assert_eq!(js_number_value(f64::NAN), serde_json::Value::Null);
    }
}
