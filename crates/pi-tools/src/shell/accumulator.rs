//! Streaming command output with bounded memory (Pi's `OutputAccumulator`): decodes chunks,
//! keeps a rolling decoded tail for display snapshots, counts lines and bytes, and moves the raw
//! output to a temp file once it outgrows the display limits.

use crate::output_file::create_output_file;
use crate::truncate::{Limits, TruncatedBy, Truncation, truncate_tail};
use pi_js::text_decoder::{Utf8Decoder, decode_utf8};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// A display snapshot: the tail shown to the model and what was cut.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub content: String,
    pub truncation: Truncation,
    pub full_output_path: Option<PathBuf>,
}

/// The full output for programmatic callers (`structuredContent.output`).
#[derive(Debug, Clone, PartialEq)]
pub struct FullOutput {
    pub content: String,
    pub truncated: bool,
}

pub struct OutputAccumulator {
    limits: Limits,
    max_rolling_bytes: usize,
    temp_prefix: String,
    decoder: Utf8Decoder,
    raw_chunks: Vec<Vec<u8>>,
    tail_text: String,
    tail_starts_at_line_boundary: bool,
    total_raw_bytes: usize,
    total_decoded_bytes: usize,
    completed_lines: usize,
    total_lines: usize,
    current_line_bytes: usize,
    has_open_line: bool,
    finished: bool,
    temp_path: Option<PathBuf>,
    temp_file: Option<File>,
    /// The first failure writing the temp file; the output itself is still shown.
    temp_error: Option<io::Error>,
}

impl OutputAccumulator {
    pub fn new(temp_prefix: &str) -> OutputAccumulator {
        let limits = Limits::default();
        OutputAccumulator {
            limits,
            max_rolling_bytes: (limits.max_bytes * 2).max(1),
            temp_prefix: temp_prefix.to_string(),
            decoder: Utf8Decoder::new(),
            raw_chunks: Vec::new(),
            tail_text: String::new(),
            tail_starts_at_line_boundary: true,
            total_raw_bytes: 0,
            total_decoded_bytes: 0,
            completed_lines: 0,
            total_lines: 0,
            current_line_bytes: 0,
            has_open_line: false,
            finished: false,
            temp_path: None,
            temp_file: None,
            temp_error: None,
        }
    }

    pub fn append(&mut self, data: &[u8]) {
        if self.finished {
            return;
        }
        self.total_raw_bytes += data.len();
        let text = self.decoder.decode(data);
        self.append_decoded(&text);
        if self.temp_file.is_some() || self.should_use_temp_file() {
            self.ensure_temp_file();
            self.write_temp(data);
        } else if !data.is_empty() {
            self.raw_chunks.push(data.to_vec());
        }
    }

    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let rest = self.decoder.finish();
        self.append_decoded(&rest);
        if self.should_use_temp_file() {
            self.ensure_temp_file();
        }
    }

    /// The current display tail. With `persist_if_truncated`, a truncated output is saved to
    /// the temp file so the notice can name it.
    pub fn snapshot(&mut self, persist_if_truncated: bool) -> Snapshot {
        // Clipping drops the partial first line of the retained tail; when the tail is only the
        // end of one over-long line, show that end instead.
        let text = match self.snapshot_text() {
            "" => self.tail_text.as_str(),
            t => t,
        };
        let tail = truncate_tail(text, self.limits);
        let truncated = self.total_lines > self.limits.max_lines
            || self.total_decoded_bytes > self.limits.max_bytes;
        let truncated_by = truncated.then(|| {
            tail.truncated_by
                .unwrap_or(if self.total_decoded_bytes > self.limits.max_bytes {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                })
        });
        let truncation = Truncation {
            truncated,
            truncated_by,
            total_lines: self.total_lines,
            total_bytes: self.total_decoded_bytes,
            max_lines: self.limits.max_lines,
            max_bytes: self.limits.max_bytes,
            ..tail
        };
        if persist_if_truncated && truncation.truncated {
            self.ensure_temp_file();
        }
        Snapshot {
            content: truncation.content.clone(),
            truncation,
            full_output_path: self.temp_path.clone(),
        }
    }

    /// Bytes of the last (possibly unterminated) line.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    /// Flushes and closes the temp file.
    pub fn close_temp_file(&mut self) -> io::Result<()> {
        if let Some(mut file) = self.temp_file.take() {
            file.flush()?;
        }
        match self.temp_error.take() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// The complete output; over `max_bytes` raw bytes it keeps the first and last half around
    /// an omission marker. Call after [`finish`](Self::finish) and [`close_temp_file`](Self::close_temp_file).
    pub fn read_full_output(&self, max_bytes: usize) -> io::Result<FullOutput> {
        let Some(path) = &self.temp_path else {
            return Ok(FullOutput {
                content: decode_utf8(&self.raw_chunks.concat()),
                truncated: false,
            });
        };
        let mut file = File::open(path)?;
        let size = file.metadata()?.len() as usize;
        if size <= max_bytes {
            let mut bytes = Vec::with_capacity(size);
            file.read_to_end(&mut bytes)?;
            return Ok(FullOutput {
                content: decode_utf8(&bytes),
                truncated: false,
            });
        }
        let head_bytes = max_bytes / 2;
        let tail_bytes = max_bytes - head_bytes;
        let mut head = vec![0u8; head_bytes];
        file.read_exact(&mut head)?;
        let mut tail = vec![0u8; tail_bytes];
        file.seek(SeekFrom::Start((size - tail_bytes) as u64))?;
        file.read_exact(&mut tail)?;
        // Cut at character boundaries: an incomplete sequence ending the head is held back, the
        // tail skips leading continuation bytes.
        let head_text = Utf8Decoder::new().decode(&head);
        let start = tail.iter().take_while(|b| *b & 0xc0 == 0x80).count();
        let tail_text = decode_utf8(&tail[start..]);
        let omitted = size - head_bytes - tail_bytes;
        Ok(FullOutput {
            content: format!("{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail_text}"),
            truncated: true,
        })
    }

    fn append_decoded(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let bytes = text.len();
        self.total_decoded_bytes += bytes;
        self.tail_text.push_str(text);
        if self.tail_text.len() > self.max_rolling_bytes * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => {
                self.current_line_bytes += bytes;
                self.has_open_line = true;
            }
            Some(last) => {
                self.completed_lines += text.matches('\n').count();
                let rest = &text[last + 1..];
                self.current_line_bytes = rest.len();
                self.has_open_line = !rest.is_empty();
            }
        }
        self.total_lines = self.completed_lines + usize::from(self.has_open_line);
    }

    fn trim_tail(&mut self) {
        let len = self.tail_text.len();
        if len <= self.max_rolling_bytes {
            return;
        }
        let mut start = len - self.max_rolling_bytes;
        while !self.tail_text.is_char_boundary(start) {
            start += 1;
        }
        if start > 0 {
            self.tail_starts_at_line_boundary = self.tail_text.as_bytes()[start - 1] == b'\n';
        }
        self.tail_text.drain(..start);
    }

    fn snapshot_text(&self) -> &str {
        if self.tail_starts_at_line_boundary {
            return &self.tail_text;
        }
        match self.tail_text.find('\n') {
            Some(i) => &self.tail_text[i + 1..],
            None => &self.tail_text,
        }
    }

    fn should_use_temp_file(&self) -> bool {
        self.total_raw_bytes > self.limits.max_bytes
            || self.total_decoded_bytes > self.limits.max_bytes
            || self.total_lines > self.limits.max_lines
    }

    fn ensure_temp_file(&mut self) {
        if self.temp_path.is_some() {
            return;
        }
        match create_output_file(&self.temp_prefix, ".log") {
            Ok((path, file)) => {
                self.temp_path = Some(path);
                self.temp_file = Some(file);
                for chunk in std::mem::take(&mut self.raw_chunks) {
                    self.write_temp(&chunk);
                }
            }
            Err(err) => {
                self.temp_error.get_or_insert(err);
            }
        }
    }

    fn write_temp(&mut self, data: &[u8]) {
        if let Some(Err(err)) = self.temp_file.as_mut().map(|file| file.write_all(data)) {
            self.temp_error.get_or_insert(err);
        }
    }
}
