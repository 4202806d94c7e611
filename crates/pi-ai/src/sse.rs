//! Server-sent events decoding: bytes in arbitrary chunks in, complete events out.
//!
//! Lines end at `\r\n`, `\n` or `\r` (a `\r` at the end of a chunk waits for the next byte, so a
//! `\r\n` split across chunks is one break). Bytes are buffered until a line is complete, so a
//! UTF-8 sequence split across chunks is decoded whole; invalid UTF-8 becomes U+FFFD as in
//! `TextDecoder`. Comment lines (`:`) are kept in `raw` only, as Pi's Anthropic decoder does.

/// One dispatched event: its `event:` name (if any), the `data:` lines joined with `\n`, and the
/// raw lines that made it (for error messages).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
    pub raw: Vec<String>,
}

/// Incremental decoder. Feed chunks with [`SseDecoder::push`], then call
/// [`SseDecoder::finish`] at the end of the body for a trailing event without a blank line.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// A `\r` ended the previous chunk: a leading `\n` of the next one belongs to it.
    pending_cr: bool,
    event: Option<String>,
    /// The event's `data:` values, as (index in `raw`, offset of the value in that line).
    data: Vec<(usize, usize)>,
    raw: Vec<String>,
}

impl SseDecoder {
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Decodes the complete lines in `chunk`; returns the events they finish.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        let mut start = 0;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
            let mut end = start + found;
            if self.buf.is_empty() {
                // The whole line is in this chunk: no copy.
                self.line(&bytes[start..end], &mut out);
            } else {
                self.buf.extend_from_slice(&bytes[start..end]);
                let line = std::mem::take(&mut self.buf);
                self.line(&line, &mut out);
            }
            if bytes[end] == b'\r' {
                if end + 1 == bytes.len() {
                    self.pending_cr = true;
                } else if bytes[end + 1] == b'\n' {
                    end += 1;
                }
            }
            start = end + 1;
        }
        self.buf.extend_from_slice(&bytes[start..]);
        out
    }

    /// Ends the body: a last line without a line break and a last event without a blank line
    /// are still delivered.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, &mut out);
        }
        if let Some(ev) = self.flush() {
            out.push(ev);
        }
        out
    }

    fn line(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        if bytes.is_empty() {
            if let Some(ev) = self.flush() {
                out.push(ev);
            }
            return;
        }
        // Valid UTF-8 (the usual case) is checked far faster than it is repaired.
        let line = match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        };
        if line.starts_with(':') {
            self.raw.push(line);
            return;
        }
        let (field, value_at) = match line.find(':') {
            Some(i) => (
                &line[..i],
                i + 1 + usize::from(line[i + 1..].starts_with(' ')),
            ),
            None => (line.as_str(), line.len()),
        };
        match field {
            "event" => self.event = Some(line[value_at..].to_string()),
            "data" => self.data.push((self.raw.len(), value_at)),
            _ => {}
        }
        self.raw.push(line);
    }

    fn flush(&mut self) -> Option<SseEvent> {
        if self.event.is_none() && self.data.is_empty() {
            // Comments alone make no event; forget them so they do not leak into the next one.
            self.raw.clear();
            return None;
        }
        let raw = std::mem::take(&mut self.raw);
        let mut data = String::new();
        for (n, &(line, at)) in self.data.iter().enumerate() {
            if n > 0 {
                data.push('\n');
            }
            data.push_str(&raw[line][at..]);
        }
        let ev = SseEvent {
            event: self.event.take(),
            data,
            raw,
        };
        self.data.clear();
        Some(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str, raw: &[&str]) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
            raw: raw.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn decode_in_pieces(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for piece in input.chunks(size) {
            out.extend(d.push(piece));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn every_line_ending_and_every_split_gives_the_same_events() {
        let expected = vec![
            ev(
                Some("message_start"),
                "{\"a\":1}",
                &["event: message_start", "data: {\"a\":1}"],
            ),
            ev(None, "x\ny", &["data: x", "data:y"]),
            ev(None, "ünï€😀", &["data: ünï€😀"]),
        ];
        for eol in ["\n", "\r\n", "\r"] {
            let text = format!(
                "event: message_start{eol}data: {{\"a\":1}}{eol}{eol}data: x{eol}data:y{eol}{eol}data: ünï€😀{eol}{eol}"
            );
            for size in 1..=text.len() {
                assert_eq!(
                    decode_in_pieces(text.as_bytes(), size),
                    expected,
                    "eol {eol:?} size {size}"
                );
            }
        }
    }

    #[test]
    fn comments_and_unknown_fields_make_no_event_but_stay_in_raw() {
        let text = b": keep-alive\n\n: note\nid: 7\ndata: d\n\n";
        assert_eq!(
            decode_in_pieces(text, 3),
            vec![ev(None, "d", &[": note", "id: 7", "data: d"])]
        );
    }

    #[test]
    fn a_trailing_event_without_blank_line_is_delivered_at_finish() {
        assert_eq!(
            decode_in_pieces(b"event: e\ndata: last", 4),
            vec![ev(Some("e"), "last", &["event: e", "data: last"])]
        );
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(
            decode_in_pieces(b"data: a\xffb\n\n", 1),
            vec![ev(None, "a\u{fffd}b", &["data: a\u{fffd}b"])]
        );
    }

    #[test]
    fn a_field_without_colon_and_an_empty_data_value() {
        assert_eq!(
            decode_in_pieces(b"data\n\ndata:\n\n", 2),
            vec![ev(None, "", &["data"]), ev(None, "", &["data:"])]
        );
    }
}
