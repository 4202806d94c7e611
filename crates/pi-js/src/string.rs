//! JavaScript string semantics: what `trim()` removes and how long a string is.

/// ECMAScript `WhiteSpace` and `LineTerminator` (what `trim()` removes): tab, VT, FF, space,
/// U+00A0, U+1680, U+2000–U+200A, U+202F, U+205F, U+3000, U+FEFF, LF, CR, U+2028, U+2029.
/// Unlike Rust's `char::is_whitespace` it includes U+FEFF and excludes U+0085.
pub fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// `s.trim()`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_whitespace)
}

/// `s.trimStart()`.
pub fn trim_start(s: &str) -> &str {
    s.trim_start_matches(is_whitespace)
}

/// `s.trimEnd()`.
pub fn trim_end(s: &str) -> &str {
    s.trim_end_matches(is_whitespace)
}

/// `s.length`: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    // One unit per UTF-8 lead byte (anything but 0x80..=0xBF) and one more per 4-byte sequence
    // (lead ≥ 0xF0): a count over the bytes (token estimates measure every message of the
    // context on every turn). Blocks of ASCII, most of a context, count by their length.
    fn units(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .map(|&b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
            .sum()
    }
    let mut blocks = s.as_bytes().chunks_exact(32);
    let mut n = 0;
    for block in &mut blocks {
        n += if block.iter().fold(0u8, |a, &b| a | b) < 0x80 {
            block.len()
        } else {
            units(block)
        };
    }
    n + units(blocks.remainder())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_removes_exactly_javascript_whitespace() {
        assert_eq!(trim(" \t\n a b \r\u{feff}\u{2028}"), "a b");
        assert_eq!(trim("\u{85}x\u{85}"), "\u{85}x\u{85}");
        assert_eq!(trim("\u{3000}\u{a0}x\u{200a}"), "x");
        assert_eq!(trim("\u{200b}x"), "\u{200b}x");
        assert_eq!(trim_end(" x \n"), " x");
        assert_eq!(trim_start(" x \n"), "x \n");
        assert_eq!(utf16_len("a😀é"), 4);
        for text in [
            "",
            "ascii",
            "é",
            "€uro",
            "😀😀",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            assert_eq!(utf16_len(text), text.encode_utf16().count(), "{text:?}");
        }
        // Past the 32-byte blocks: ASCII blocks, mixed blocks, and a remainder.
        let mixed = format!("{}😀{}é€{}", "a".repeat(40), "b".repeat(31), "c".repeat(70));
        for end in 0..=mixed.len() {
            if let Some(text) = mixed.get(..end) {
                assert_eq!(utf16_len(text), text.encode_utf16().count(), "{text:?}");
            }
        }
    }
}
