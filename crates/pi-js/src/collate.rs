//! `a.localeCompare(b)` as Node 22 (ICU, root collation) orders the strings Pi sorts: model and
//! provider ids, file names. Primary level: whitespace, then punctuation and symbols in CLDR
//! order, then digits, then letters ignoring case (Latin letters with accents fold to their base
//! letter, a few expand: `ß` → `ss`); scripts other than Latin follow by code point. Accents
//! break primary ties (secondary level), then case, lowercase first (tertiary level). Exact for
//! ASCII and Latin; an approximation beyond.

use std::cmp::Ordering;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Printable ASCII other than letters and digits, in CLDR root order.
const ASCII_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
/// Combining marks in DUCET's secondary order (others follow by code point).
const MARK_ORDER: [char; 10] = [
    '\u{301}', '\u{300}', '\u{306}', '\u{302}', '\u{30c}', '\u{30a}', '\u{308}', '\u{30b}',
    '\u{303}', '\u{307}',
];

const SYMBOL_BAND: u32 = 1000;
const DIGITS: u32 = 2000;
const LETTERS: u32 = 3000;
const OTHER_SCRIPTS: u32 = 0x10000;

fn ascii_weight(c: char) -> Option<u32> {
    match c {
        '\t' => Some(1),
        '\n' => Some(2),
        '\u{b}' => Some(3),
        '\u{c}' => Some(4),
        '\r' => Some(5),
        '0'..='9' => Some(DIGITS + (c as u32 - '0' as u32)),
        'a'..='z' => Some(LETTERS + (c as u32 - 'a' as u32) * 4),
        'A'..='Z' => Some(LETTERS + (c.to_ascii_lowercase() as u32 - 'a' as u32) * 4),
        _ => ASCII_ORDER.find(c).map(|i| 10 + i as u32 * 2),
    }
}

/// Latin letters that ICU expands or folds at the primary level.
fn expansion(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        'ø' | 'Ø' => "o",
        'đ' | 'Đ' => "d",
        'ł' | 'Ł' => "l",
        'ı' => "i",
        _ => return None,
    })
}

fn mark_weight(c: char) -> u32 {
    MARK_ORDER
        .iter()
        .position(|&m| m == c)
        .map_or(100 + c as u32, |i| 1 + i as u32)
}

/// Compared field by field, in this order (the derived order), as [`locale_compare`] does.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    primary: Vec<u32>,
    secondary: Vec<u32>,
    tertiary: Vec<u32>,
}

fn key(text: &str) -> Key {
    let mut k = Key {
        primary: Vec::new(),
        secondary: Vec::new(),
        tertiary: Vec::new(),
    };
    for c in text.nfd() {
        if is_combining_mark(c) {
            if let Some(last) = k.secondary.last_mut() {
                *last = mark_weight(c);
            }
            continue;
        }
        if let Some(w) = ascii_weight(c) {
            k.primary.push(w);
            k.secondary.push(0);
            k.tertiary.push(tertiary(c));
        } else if let Some(exp) = expansion(c) {
            for e in exp.chars() {
                k.primary.extend(ascii_weight(e));
                k.secondary.push(if c == 'ø' || c == 'Ø' { 50 } else { 0 });
                k.tertiary.push(tertiary(c));
            }
        } else if c.is_control() {
            // Ignorable.
        } else if c.is_alphabetic() {
            k.primary.push(OTHER_SCRIPTS + c as u32);
            k.secondary.push(0);
            k.tertiary.push(tertiary(c));
        } else {
            k.primary.push(SYMBOL_BAND);
            k.secondary.push(0);
            k.tertiary.push(tertiary(c));
        }
    }
    k
}

/// Case first (lowercase before uppercase, as ICU's tertiary level), then the code point.
fn tertiary(c: char) -> u32 {
    (u32::from(c.is_uppercase()) << 21) | c as u32
}

/// `a.localeCompare(b)` as an ordering (`Equal` where ICU returns 0).
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    key(a).cmp(&key(b))
}

/// What [`locale_compare`] compares, made once per string: sorting by these keys orders as
/// sorting with `locale_compare` does, without building two keys per comparison.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CollationKey(Key);

pub fn collation_key(text: &str) -> CollationKey {
    CollationKey(key(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<&str>, cmp: impl Fn(&str, &str) -> Ordering) -> Vec<&str> {
        v.sort_by(|a, b| cmp(a, b));
        v
    }

    #[test]
    fn keys_order_as_locale_compare() {
        let words = [
            "Zeta", "z", "é", "e", "E", "B2", "b.txt", "ab", "A.md", "a-b", "a_b", "a b", "9",
            "10", ".x", "_y", "ø", "o", "x10", "x9", "same", "same",
        ];
        for a in words {
            for b in words {
                assert_eq!(
                    collation_key(a).cmp(&collation_key(b)),
                    locale_compare(a, b),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }

    #[test]
    fn ids_sort_like_node() {
        assert_eq!(
            sorted(
                vec!["a-b", "ab", "a_b", "a.b", "a1", "aB", "Ab", "a b", "a"],
                locale_compare
            ),
            vec!["a", "a b", "a_b", "a-b", "a.b", "a1", "ab", "aB", "Ab"]
        );
        assert_eq!(locale_compare("gpt-4o", "gpt-4"), Ordering::Greater);
        assert_eq!(locale_compare("x10", "x9"), Ordering::Less);
        assert_eq!(locale_compare("same", "same"), Ordering::Equal);
    }

    #[test]
    fn lowercased_names_sort_like_icu() {
        let names = |a: &str, b: &str| {
            locale_compare(&a.to_lowercase(), &b.to_lowercase()).then_with(|| a.cmp(b))
        };
        assert_eq!(
            sorted(
                vec![
                    "Zeta", "z", "é", "B2", "b.txt", "ab", "A.md", "a-b", "a_b", "a b", "9", "10",
                    ".x", "_y",
                ],
                names
            ),
            vec![
                "_y", ".x", "10", "9", "a b", "a_b", "a-b", "A.md", "ab", "b.txt", "B2", "é", "z",
                "Zeta"
            ]
        );
        assert_eq!(
            sorted(vec!["ä", "ae", "b", "à", "a", "á"], names),
            vec!["a", "á", "à", "ä", "ae", "b"]
        );
    }
}
