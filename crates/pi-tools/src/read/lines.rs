//! Selecting lines of a text file for `read` while streaming it: only the lines the 2000-line /
//! 50 KB head truncation can show are kept, the rest are only counted, so memory does not grow
//! with the file (a 1 GB line is measured, never stored whole).

use crate::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, Truncation, truncate_head};
use pi_js::text_decoder::Utf8Decoder;
use std::io::{self, Read};
use tokio_util::sync::CancellationToken;

/// What was selected: the file's line count (newlines + 1), the truncation of the selected
/// text, and the size of the first selected line.
#[derive(Debug, Clone)]
pub struct Selection {
    pub total_file_lines: usize,
    pub truncation: Truncation,
    pub first_line_bytes: usize,
}

struct Selector {
    start: usize,
    end: usize,
    line: usize,
    stored: Vec<String>,
    stored_bytes: usize,
    stored_past_caps: bool,
    selected_lines: usize,
    selected_bytes: usize,
    first_line_bytes: usize,
    last_line_empty: bool,
    /// The selected line being read; `None` once lines are only counted.
    pieces: Option<String>,
    line_bytes: usize,
    line_has_text: bool,
}

impl Selector {
    fn selected(&self) -> bool {
        self.line >= self.start && self.line < self.end
    }

    fn append(&mut self, piece: &str) {
        self.line_has_text = true;
        if let Some(pieces) = self.pieces.as_mut() {
            // A line over the byte cap is never shown; keep just enough to know that.
            if self.line_bytes <= DEFAULT_MAX_BYTES {
                pieces.push_str(piece);
            }
        }
        self.line_bytes += piece.len();
    }

    fn finish_line(&mut self) {
        if let Some(text) = self.pieces.take() {
            if self.selected_lines == 0 {
                self.first_line_bytes = self.line_bytes;
            }
            // Storing goes one line past the caps, so a trailing empty line cannot hide that
            // the text was cut.
            if self.stored.len() > DEFAULT_MAX_LINES || self.stored_bytes > DEFAULT_MAX_BYTES {
                self.stored_past_caps = true;
            }
            self.stored_bytes += text.len() + usize::from(!self.stored.is_empty());
            self.stored.push(text);
        }
        self.selected_lines += 1;
        self.last_line_empty = !self.line_has_text;
        self.pieces = (!self.stored_past_caps).then(String::new);
        self.line_bytes = 0;
        self.line_has_text = false;
    }

    fn feed(&mut self, text: &str) {
        let mut rest = text;
        loop {
            let newline = rest.find('\n');
            let segment = &rest[..newline.unwrap_or(rest.len())];
            let selected = self.selected();
            if selected && !segment.is_empty() {
                self.append(segment);
            }
            if selected {
                self.selected_bytes += segment.len();
            }
            let Some(nl) = newline else { break };
            if selected {
                self.finish_line();
                // The newline joins this selected line to the next one only if that is selected.
                if self.line + 1 < self.end {
                    self.selected_bytes += 1;
                }
            }
            self.line += 1;
            rest = &rest[nl + 1..];
        }
    }
}

/// How much of the file is read and decoded at a time.
const CHUNK: usize = 64 * 1024;

/// Reads `reader` to the end, selecting `limit` lines (or all) from 0-based line `start`.
pub fn select_lines(
    mut reader: impl Read,
    start: usize,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> io::Result<Option<Selection>> {
    let mut s = Selector {
        start,
        end: limit.map_or(usize::MAX, |l| start.saturating_add(l)),
        line: 0,
        stored: Vec::new(),
        stored_bytes: 0,
        stored_past_caps: false,
        selected_lines: 0,
        selected_bytes: 0,
        first_line_bytes: 0,
        last_line_empty: true,
        pieces: Some(String::new()),
        line_bytes: 0,
        line_has_text: false,
    };
    let mut decoder = Utf8Decoder::keeping_bom();
    // Filled by `read_to_end`, which reads into the spare capacity as it is: a zeroed buffer
    // (`vec![0; ..]`) wrote all 64 KB (16 fresh pages on the tool thread's heap) even for a
    // file of a few lines.
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        if cancel.is_cancelled() {
            return Ok(None);
        }
        buf.clear();
        let n = match (&mut reader).take(CHUNK as u64).read_to_end(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(e),
        };
        if s.line >= s.end {
            // Past the selection only the line count matters.
            s.line += buf[..n].iter().filter(|&&b| b == b'\n').count();
        } else {
            let text = decoder.decode(&buf[..n]);
            s.feed(&text);
        }
        // `read_to_end` stops short of the chunk only at the end of the file, which it has
        // already seen: no read is needed to find it again.
        if n < CHUNK {
            break;
        }
    }
    if s.line < s.end {
        let text = decoder.finish();
        s.feed(&text);
    }
    if s.selected() {
        s.finish_line();
    }
    let head = truncate_head(&s.stored.join("\n"), Limits::default());
    let truncation = Truncation {
        total_lines: if s.selected_bytes == 0 {
            0
        } else {
            s.selected_lines - usize::from(s.last_line_empty)
        },
        total_bytes: s.selected_bytes,
        ..head
    };
    Ok(Some(Selection {
        total_file_lines: s.line + 1,
        truncation,
        first_line_bytes: s.first_line_bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(text: &str, start: usize, limit: Option<usize>) -> Selection {
        select_lines(text.as_bytes(), start, limit, &CancellationToken::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_newline_terminated_file_counts_a_phantom_last_line() {
        let s = select("alpha\nbeta\ngamma\n", 0, None);
        assert_eq!(s.total_file_lines, 4);
        assert_eq!(s.truncation.content, "alpha\nbeta\ngamma\n");
        assert_eq!(s.truncation.total_lines, 3);
        assert!(!s.truncation.truncated);
    }

    #[test]
    fn limits_select_a_window() {
        let s = select("alpha\nbeta\ngamma\n", 1, Some(1));
        assert_eq!(s.truncation.content, "beta");
        assert_eq!((s.truncation.total_lines, s.truncation.total_bytes), (1, 4));
    }

    #[test]
    fn long_files_are_cut_at_2000_lines() {
        let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
        let s = select(&text, 0, None);
        assert_eq!(s.total_file_lines, 2501);
        assert!(s.truncation.truncated);
        assert_eq!(s.truncation.output_lines, 2000);
        assert_eq!(s.truncation.total_lines, 2500);
    }
}
