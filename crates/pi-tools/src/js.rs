//! Small JavaScript semantics the tools' texts depend on: number formatting, UTF-16 lengths,
//! `String.prototype.trimEnd` whitespace and a WHATWG-style streaming UTF-8 decoder.

use pi_protocol::json::push_js_number;

/// `String(value)` for a finite number (as JavaScript interpolates it into a template string).
pub fn js_number(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let mut out = String::new();
    push_js_number(&mut out, value);
    out
}

/// Length of `text` in UTF-16 code units (JavaScript's `.length`).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Whether `c` is removed by JavaScript's `trim`/`trimEnd` (WhiteSpace and LineTerminator).
pub fn is_js_whitespace(c: char) -> bool {
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

pub fn js_trim_end(text: &str) -> &str {
    text.trim_end_matches(is_js_whitespace)
}

pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// Decodes UTF-8 split across chunks the way `TextDecoder` does: invalid sequences become U+FFFD
/// (one per maximal invalid subpart), an incomplete sequence at a chunk's end waits for the next.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
    /// `TextDecoder`'s default drops a byte order mark at the start of the stream.
    strip_bom: bool,
    started: bool,
}

impl Utf8Decoder {
    /// A decoder like `new TextDecoder()`: a leading BOM is dropped.
    pub fn new() -> Utf8Decoder {
        Utf8Decoder {
            strip_bom: true,
            ..Utf8Decoder::default()
        }
    }

    /// A decoder like `new TextDecoder("utf-8", { ignoreBOM: true })`: a leading BOM is kept.
    pub fn keeping_bom() -> Utf8Decoder {
        Utf8Decoder::default()
    }

    /// Decodes `chunk`, holding back an incomplete trailing sequence.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        let owned;
        let bytes: &[u8] = if self.pending.is_empty() {
            chunk
        } else {
            self.pending.extend_from_slice(chunk);
            owned = std::mem::take(&mut self.pending);
            &owned
        };
        let mut out = String::with_capacity(bytes.len());
        let mut rest = bytes;
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    out.push_str(valid);
                    break;
                }
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match err.error_len() {
                        Some(len) => {
                            out.push('\u{fffd}');
                            rest = &after[len..];
                        }
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        self.finish_chunk(out)
    }

    /// Flushes the decoder: an incomplete sequence left over becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = if self.pending.is_empty() {
            String::new()
        } else {
            self.pending.clear();
            "\u{fffd}".to_string()
        };
        self.finish_chunk(out)
    }

    fn finish_chunk(&mut self, mut out: String) -> String {
        if !self.started && !out.is_empty() {
            self.started = true;
            if self.strip_bom && out.starts_with('\u{feff}') {
                out.drain(..'\u{feff}'.len_utf8());
            }
        }
        out
    }
}

/// Decodes a whole buffer like `new TextDecoder().decode(bytes)` (BOM dropped).
pub fn decode_utf8(bytes: &[u8]) -> String {
    let mut decoder = Utf8Decoder::new();
    let mut text = decoder.decode(bytes);
    text.push_str(&decoder.finish());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(10.0), "10");
        assert_eq!(js_number(2.5), "2.5");
        assert_eq!(js_number(1e21), "1e+21");
        assert_eq!(js_number(0.0000001), "1e-7");
    }

    #[test]
    fn decoder_joins_split_sequences_and_replaces_invalid_bytes() {
        let mut d = Utf8Decoder::new();
        let euro = "€".as_bytes();
        assert_eq!(d.decode(&euro[..1]), "");
        assert_eq!(d.decode(&euro[1..]), "€");
        assert_eq!(d.decode(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(d.decode(b"\xe2\x82"), "");
        assert_eq!(d.finish(), "\u{fffd}");
        assert_eq!(decode_utf8(b"\xef\xbb\xbfx"), "x");
        let mut keep = Utf8Decoder::keeping_bom();
        assert_eq!(keep.decode(b"\xef\xbb\xbfx"), "\u{feff}x");
    }
}
