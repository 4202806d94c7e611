//! An approximation of ICU's root collation, enough to sort file names as Pi's `ls` does with
//! `a.toLowerCase().localeCompare(b.toLowerCase())`: whitespace, then punctuation and symbols in
//! CLDR order, then digits, then letters; accents only break ties (secondary level). Scripts
//! other than Latin sort after it by code point. Full ties fall back to byte order so the output
//! is deterministic (ICU would keep the directory's order).

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

#[derive(Debug, PartialEq, Eq)]
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
            k.tertiary.push(c as u32);
        } else if let Some(exp) = expansion(c) {
            for e in exp.chars() {
                k.primary.extend(ascii_weight(e));
                k.secondary.push(if c == 'ø' || c == 'Ø' { 50 } else { 0 });
                k.tertiary.push(c as u32);
            }
        } else if c.is_control() {
            // Ignorable.
        } else if c.is_alphabetic() {
            k.primary.push(OTHER_SCRIPTS + c as u32);
            k.secondary.push(0);
            k.tertiary.push(c as u32);
        } else {
            k.primary.push(SYMBOL_BAND);
            k.secondary.push(0);
            k.tertiary.push(c as u32);
        }
    }
    k
}

/// Compares two names as Pi's `ls` sorts them.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    let (la, lb) = (a.to_lowercase(), b.to_lowercase());
    let (ka, kb) = (key(&la), key(&lb));
    ka.primary
        .cmp(&kb.primary)
        .then_with(|| ka.secondary.cmp(&kb.secondary))
        .then_with(|| ka.tertiary.cmp(&kb.tertiary))
        .then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_like_icu() {
        let mut names = vec![
            "Zeta", "z", "é", "B2", "b.txt", "ab", "A.md", "a-b", "a_b", "a b", "9", "10", ".x",
            "_y",
        ];
        names.sort_by(|a, b| compare_names(a, b));
        assert_eq!(
            names,
            vec![
                "_y", ".x", "10", "9", "a b", "a_b", "a-b", "A.md", "ab", "b.txt", "B2", "é", "z",
                "Zeta"
            ]
        );
        let mut accents = vec!["ä", "ae", "b", "à", "a", "á"];
        accents.sort_by(|a, b| compare_names(a, b));
        assert_eq!(accents, vec!["a", "á", "à", "ä", "ae", "b"]);
    }
}
