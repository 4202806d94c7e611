//! Strict JSONL input framing, as Pi's `attachJsonlLineReader` does it: split on LF only, strip
//! one trailing CR, keep U+2028/U+2029 as ordinary characters, and hand over a final line that
//! has no LF at EOF.
//!
//! We split raw bytes rather than decoded text: an LF byte never occurs inside a multi-byte UTF-8
//! sequence, so a character split across reads is reassembled for free, and invalid bytes become
//! U+FFFD per line exactly as a streaming decoder would produce them.

/// Longest line we buffer. Pi has no limit and grows without bound; a client that streams
/// gigabytes without a newline must not take the process down (see DEVIATIONS.md).
pub const MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// One framed input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, CR-stripped and decoded.
    Line(String),
    /// A line longer than [`MAX_LINE_BYTES`]; its bytes were discarded.
    TooLong,
}

/// Accumulates bytes and yields complete lines.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// Set while skipping the remainder of an over-long line.
    discarding: bool,
}

impl LineSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one read's bytes; pushes every line completed by them onto `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Frame>) {
        while let Some(pos) = memchr_lf(chunk) {
            let (head, rest) = (&chunk[..pos], &chunk[pos + 1..]);
            if self.discarding {
                self.discarding = false;
                self.buf.clear();
                out.push(Frame::TooLong);
            } else if self.buf.len() + head.len() > MAX_LINE_BYTES {
                self.buf.clear();
                out.push(Frame::TooLong);
            } else if self.buf.is_empty() {
                out.push(Frame::Line(decode(head)));
            } else {
                self.buf.extend_from_slice(head);
                out.push(Frame::Line(decode(&self.buf)));
                self.buf.clear();
            }
            chunk = rest;
        }
        if self.discarding {
            return;
        }
        if self.buf.len() + chunk.len() > MAX_LINE_BYTES {
            self.buf = Vec::new();
            self.discarding = true;
        } else {
            self.buf.extend_from_slice(chunk);
        }
    }

    /// Called at EOF: an unterminated, non-empty last line is still a line.
    pub fn finish(&mut self) -> Option<Frame> {
        if self.discarding {
            self.discarding = false;
            return Some(Frame::TooLong);
        }
        if self.buf.is_empty() {
            return None;
        }
        let line = decode(&self.buf);
        self.buf = Vec::new();
        Some(Frame::Line(line))
    }
}

fn memchr_lf(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Strips one trailing CR and decodes, replacing invalid UTF-8 with U+FFFD.
fn decode(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Frame> {
        let mut s = LineSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        out.extend(s.finish());
        out
    }

    fn lines(v: &[&str]) -> Vec<Frame> {
        v.iter().map(|s| Frame::Line(s.to_string())).collect()
    }

    #[test]
    fn splits_on_lf_only_and_strips_one_cr() {
        assert_eq!(
            split(&[b"a\r\nb\r\r\nc\rd\n"]),
            lines(&["a", "b\r", "c\rd"])
        );
    }

    #[test]
    fn unicode_separators_are_not_line_breaks() {
        let input = "{\"m\":\"x\u{2028}y\u{2029}z\"}\n";
        assert_eq!(
            split(&[input.as_bytes()]),
            lines(&["{\"m\":\"x\u{2028}y\u{2029}z\"}"])
        );
    }

    #[test]
    fn multibyte_character_split_across_reads() {
        let bytes = "é€😀\n".as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(split(&chunks), lines(&["é€😀"]));
    }

    #[test]
    fn final_line_without_lf_is_kept_and_empty_lines_are_lines() {
        assert_eq!(split(&[b"\n\nlast"]), lines(&["", "", "last"]));
        assert_eq!(split(&[b"x\n"]), lines(&["x"]));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_character() {
        assert_eq!(
            split(&[b"a\xffb\xe2\x82\n"]),
            lines(&["a\u{fffd}b\u{fffd}"])
        );
    }

    #[test]
    fn two_lines_in_one_read_and_one_line_in_many_reads() {
        assert_eq!(split(&[b"1\n2\n"]), lines(&["1", "2"]));
        assert_eq!(
            split(&[b"{\"ty", b"pe\":", b"1}\n"]),
            lines(&["{\"type\":1}"])
        );
    }
}
