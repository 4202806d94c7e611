//! Token pieces are bytes, and one character may span several tokens: hold back an incomplete
//! UTF-8 sequence until the rest arrives.

#[derive(Debug, Default)]
pub struct Utf8Buffer {
    pending: Vec<u8>,
}

impl Utf8Buffer {
    /// Appends `bytes`; returns the complete characters (invalid bytes become U+FFFD).
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // Incomplete at the end: keep it for the next token.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_are_joined_and_invalid_bytes_replaced() {
        let mut b = Utf8Buffer::default();
        let e = "é".as_bytes();
        assert_eq!(b.push(&[b'a', e[0]]), "a");
        assert_eq!(b.push(&[e[1], b'b']), "éb");
        assert_eq!(b.push(&[0xff, b'c']), "\u{FFFD}c");
    }
}
