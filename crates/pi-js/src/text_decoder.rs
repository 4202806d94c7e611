//! `TextDecoder` for UTF-8 read in chunks (a child's output, a file read in pieces).

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
