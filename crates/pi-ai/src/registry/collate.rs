//! `String.prototype.localeCompare` as Node 22 (ICU, root collation) orders model and provider
//! ids: whitespace, then punctuation and symbols in ICU's order, then digits, then letters
//! ignoring case; ties broken by case (lowercase first). Exact for ASCII; other characters sort
//! after ASCII letters by code point.

use std::cmp::Ordering;

/// ICU's primary order of the printable ASCII characters that are not letters or digits.
const SYMBOLS: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

fn primary(c: char) -> (u32, u32) {
    if c.is_ascii_whitespace() {
        return (0, c as u32);
    }
    if let Some(i) = SYMBOLS.find(c) {
        return (1, i as u32);
    }
    if c.is_ascii_digit() {
        return (2, c as u32);
    }
    if c.is_ascii_alphabetic() {
        return (3, c.to_ascii_lowercase() as u32);
    }
    if c.is_ascii() {
        // Control characters are ignorable in ICU; rank them first.
        return (0, 0);
    }
    (4, c as u32)
}

/// `a.localeCompare(b)` as an ordering.
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    let pa = a.chars().map(primary);
    let pb = b.chars().map(primary);
    pa.cmp(pb).then_with(|| {
        // Tertiary level: lowercase before uppercase at the first difference.
        let ta = a.chars().map(|c| c.is_uppercase());
        let tb = b.chars().map(|c| c.is_uppercase());
        ta.cmp(tb)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_node_order_for_ascii() {
        let mut v = vec!["a-b", "ab", "a_b", "a.b", "a1", "aB", "Ab", "a b", "a"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(
            v,
            vec!["a", "a b", "a_b", "a-b", "a.b", "a1", "ab", "aB", "Ab"]
        );
        assert_eq!(locale_compare("gpt-4o", "gpt-4"), Ordering::Greater);
        assert_eq!(locale_compare("x10", "x9"), Ordering::Less);
    }
}
