//! Lenient integer deserialization.
//!
//! JavaScript has only doubles, so a value that is an integer to Pi may reach us written as
//! `12.0` (or `1.2e3`). These helpers accept any integral number for integer fields and reject
//! fractions, so a count never silently loses information.

use serde::de::{Error, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// Largest integer a double holds exactly; larger integral doubles are still accepted.
const MAX_U64_AS_F64: f64 = 18_446_744_073_709_551_615.0;

#[derive(Clone, Copy)]
struct U64Visitor;

impl Visitor<'_> for U64Visitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("expected a non-negative integer, got {v}")))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<u64, E> {
        if v.is_finite() && v.fract() == 0.0 && (0.0..=MAX_U64_AS_F64).contains(&v) {
            Ok(v as u64)
        } else {
            Err(E::custom(format!(
                "expected a non-negative integer, got {v}"
            )))
        }
    }
}

#[derive(Clone, Copy)]
struct I64Visitor;

impl Visitor<'_> for I64Visitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("integer out of range: {v}")))
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<i64, E> {
        if v.is_finite() && v.fract() == 0.0 && v >= i64::MIN as f64 && v <= i64::MAX as f64 {
            Ok(v as i64)
        } else {
            Err(E::custom(format!("expected an integer, got {v}")))
        }
    }
}

/// Deserializes a `u64`, accepting integral floats such as `12.0`.
pub fn de_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(U64Visitor)
}

/// Deserializes an `i64`, accepting integral floats such as `-3.0`.
pub fn de_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(I64Visitor)
}

struct OptVisitor<V>(V);

impl<'de, V: Visitor<'de> + Copy> Visitor<'de> for OptVisitor<V> {
    type Value = Option<V::Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)?;
        f.write_str(" or null")
    }

    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self.0).map(Some)
    }
}

/// `Option<u64>` counterpart of [`de_u64`] (`null` is `None`), for `#[serde(deserialize_with)]`.
pub fn de_opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(OptVisitor(U64Visitor))
}

/// `Option<i64>` counterpart of [`de_i64`] (`null` is `None`), for `#[serde(deserialize_with)]`.
pub fn de_opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    d.deserialize_option(OptVisitor(I64Visitor))
}

/// A JSON value Pi types `string | number`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum StringOrNumber {
    String(String),
    Number(f64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_are_integers() {
        assert_eq!(de_u64(json!(12.0)).unwrap(), 12);
        assert_eq!(de_u64(json!(12)).unwrap(), 12);
        assert!(de_u64(json!(1.5)).is_err());
        assert!(de_u64(json!(-1)).is_err());
        assert!(de_u64(json!("1")).is_err());
        assert_eq!(de_i64(json!(-3.0)).unwrap(), -3);
        assert_eq!(de_opt_u64(json!(null)).unwrap(), None);
        assert_eq!(de_opt_u64(json!(7.0)).unwrap(), Some(7));
        assert_eq!(de_opt_i64(json!(-7)).unwrap(), Some(-7));
    }
}
