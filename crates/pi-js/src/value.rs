//! JavaScript conversions of JSON values: truthiness, `String(v)` and `Number(v)`.

use crate::number::{number_to_string, string_to_number};
use serde_json::Value;

/// `!!v`. (A JSON number is never `NaN`; one read from elsewhere as `NaN` is falsy here too.)
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `String(v)`: arrays join their elements with `,` (`null` elements as empty strings), objects
/// give `[object Object]`.
pub fn to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_to_string(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => to_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// `Number(v)`: `null` is 0, booleans 0/1, strings as numeric literals (else `NaN`), arrays
/// through their string form (`[]` is 0, `["3"]` is 3, `[1,2]` is `NaN`), objects `NaN`.
pub fn to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => string_to_number(s),
        Value::Array(_) => string_to_number(&to_string(v)),
        Value::Object(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conversions_follow_javascript() {
        assert!(!truthy(&json!("")));
        assert!(!truthy(&json!(0)));
        assert!(!truthy(&json!(null)));
        assert!(truthy(&json!([])));
        assert!(truthy(&json!({})));
        assert!(truthy(&json!("0")));
        assert_eq!(to_number(&json!("3")), 3.0);
        assert_eq!(to_number(&json!("0x10")), 16.0);
        assert!(to_number(&json!("inf")).is_nan());
        assert!(to_number(&json!("x")).is_nan());
        assert_eq!(to_number(&json!(null)), 0.0);
        assert_eq!(to_number(&json!([])), 0.0);
        assert_eq!(to_number(&json!([" 7 "])), 7.0);
        assert_eq!(to_number(&json!([[2]])), 2.0);
        assert!(to_number(&json!([true])).is_nan());
        assert!(to_number(&json!([1, 2])).is_nan());
        assert!(to_number(&json!({})).is_nan());
        assert_eq!(to_string(&json!([1, null, "a", [2, 3]])), "1,,a,2,3");
        assert_eq!(to_string(&json!(1e21)), "1e+21");
    }
}
