//! Cleaning streamed command output for the RPC `bash` command: ANSI escape sequences are
//! stripped (an unfinished one at a chunk's end waits for the next chunk), control characters
//! other than tab, newline and CR are removed, as are U+FFF9..U+FFFB, then every CR.

use regex::Regex;
use std::sync::LazyLock;

// Sequences are recognized with the same grammar Pi uses: OSC up to its string terminator
// (BEL, ESC \ or 0x9C), or a CSI-like introducer with numeric parameters and a final byte.
const ST: &str = r"(?:\x07|\x1B\x5C|\x{9C})";
const OSC_START: &str = r"\x1B\]";
const CSI_START: &str =
    r"(?:(?:\x1B\[|\x{9B})[<=>]|[\x1B\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";
const CSI_FINAL: &str = r"[0-9A-PR-TZcf-nq-uy=><~]";

static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        "(?:{OSC_START}(?s:.)*?{ST})|{CSI_START}{CSI_FINAL}"
    ))
    .ok()
});

// An unfinished sequence at the very end: an OSC without its terminator (a final ESC may still
// become ESC \), or a CSI without its final byte.
static UNFINISHED_AT_END: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?:{OSC_START}(?:[^\x07\x{{9C}}\x1B]|\x1B+[^\\\x07\x{{9C}}\x1B])*\x1B*|{CSI_START})$"
    ))
    .ok()
});

/// Longest unfinished sequence held back, in UTF-16 units; longer ones pass through as text.
const MAX_PENDING_ANSI_LENGTH: usize = 256;

fn has_introducer(text: &str) -> bool {
    text.contains(['\u{1b}', '\u{9b}'])
}

/// Removes complete ANSI escape sequences.
pub fn strip_ansi(text: &str) -> String {
    if !has_introducer(text) {
        return text.to_string();
    }
    match ANSI.as_ref() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_string(),
    }
}

/// Splits `text` into the part safe to strip now and an unfinished trailing sequence.
pub fn split_incomplete_ansi_suffix(text: &str) -> (&str, &str) {
    if !has_introducer(text) {
        return (text, "");
    }
    let Some(re) = UNFINISHED_AT_END.as_ref() else {
        return (text, "");
    };
    let mut window_start = text.len();
    let mut units = 0usize;
    for (i, c) in text.char_indices().rev() {
        units += c.len_utf16();
        if units > MAX_PENDING_ANSI_LENGTH {
            break;
        }
        window_start = i;
    }
    match re.find(&text[window_start..]) {
        Some(m) => text.split_at(window_start + m.start()),
        None => (text, ""),
    }
}

/// Drops control characters except tab, LF and CR, and U+FFF9..U+FFFB.
pub fn sanitize_binary_output(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fff9}'..='\u{fffb}')
        })
        .collect()
}

/// The full cleanup of one chunk of complete text.
pub fn sanitize_chunk(text: &str) -> String {
    sanitize_binary_output(&strip_ansi(text)).replace('\r', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_removed() {
        assert_eq!(sanitize_chunk("a\rb\u{1b}[31mred\u{1b}[0m\n"), "abred\n");
        assert_eq!(sanitize_chunk("\u{1b}]0;title\u{7}x\u{1}y"), "xy");
        assert_eq!(sanitize_chunk("\u{1b}[<35;59;1Mz"), "z");
    }

    #[test]
    fn an_unfinished_escape_is_held_back() {
        assert_eq!(
            split_incomplete_ansi_suffix("ab\u{1b}[3"),
            ("ab", "\u{1b}[3")
        );
        assert_eq!(
            split_incomplete_ansi_suffix("ab\u{1b}]0;t"),
            ("ab", "\u{1b}]0;t")
        );
        assert_eq!(
            split_incomplete_ansi_suffix("ab\u{1b}[31m"),
            ("ab\u{1b}[31m", "")
        );
        assert_eq!(split_incomplete_ansi_suffix("plain"), ("plain", ""));
    }
}
