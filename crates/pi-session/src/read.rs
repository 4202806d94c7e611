//! Reading a session file in one pass, keeping only the parsed entries.
//!
//! Lines split on `\n` only; invalid UTF-8 becomes U+FFFD; blank lines, lines `JSON.parse`
//! rejects and lines that parse to a falsy value are skipped. The first parsed line must be a
//! header (`type:"session"` with a string `id`), otherwise the file counts as empty. A file that
//! does not end with `\n` is reported so the caller can terminate its last line, which turns a
//! torn tail into one skipped line instead of a corrupt next entry.
//!
//! The file is read (or, when large, mapped: [`crate::mapped`]) in blocks of whole lines; the
//! blocks of a current-version file are parsed on worker threads and reassembled in order, with
//! only a few blocks in flight. `message` lines in Pi's own form keep their message as text
//! inside the block they were read into ([`crate::message_line`]), so those blocks stay for the
//! life of the session and take the place of the parsed messages; a block nothing refers to is
//! freed once parsed.

use crate::blocks::Blocks;
use crate::canonical::Checker;
use crate::error::{Result, SessionError};
use crate::lenient::entry_from_line;
use crate::message_line::message_entry;
use bytes::Bytes;
use pi_js::parse::parse_js_json;
use pi_js::{to_number, trim as js_trim, truthy};
use pi_protocol::session_entry::SessionEntry;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::ErrorKind;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel};
use std::sync::{Arc, Mutex};

/// Most parser threads used.
const MAX_WORKERS: usize = 4;

/// The content of a session file.
pub(crate) struct FileContent {
    /// The header object, as read.
    pub header: Map<String, Value>,
    pub body: Body,
    /// The file is non-empty and does not end with `\n`.
    pub needs_newline: bool,
}

/// The lines after the header.
pub(crate) enum Body {
    /// A current (v3+) file: typed entries, file order; further `type:"session"` lines dropped.
    Current(Vec<SessionEntry>),
    /// An older file, to be migrated: every parsed object after the header, verbatim.
    Legacy(Vec<Map<String, Value>>),
}

/// What reading found.
pub(crate) enum ReadOutcome {
    Missing,
    /// No header: the file is empty or is not a session file.
    NoHeader,
    Session(FileContent),
}

/// Whether a header with this `version` needs no migration (`(version ?? 1) >= 3` in JS).
pub(crate) fn is_current_version(header: &Map<String, Value>) -> bool {
    match header.get("version") {
        None | Some(Value::Null) => false,
        Some(v) => to_number(v) >= 3.0,
    }
}

/// Whether `value` is a header Pi accepts: an object with `type:"session"` and a string `id`.
pub(crate) fn as_header(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map)
            if map.get("type").and_then(Value::as_str) == Some("session")
                && map.get("id").is_some_and(Value::is_string) =>
        {
            Some(map)
        }
        _ => None,
    }
}

/// One line, parsed as Pi does: `None` for blank, malformed and falsy lines.
pub(crate) fn parse_line(text: &str) -> Option<Value> {
    if js_trim(text).is_empty() {
        return None;
    }
    parse_js_json(text).ok().filter(truthy)
}

/// The spans of the lines of a block, without their `\n`.
fn line_spans(block: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let body = block.strip_suffix(b"\n").unwrap_or(block);
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', body).chain(std::iter::once(body.len()));
    ends.map(move |end| {
        let span = (start, end);
        start = end + 1;
        span
    })
}

/// The lines of a block, without their `\n`.
fn raw_lines(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    line_spans(block).map(|(start, end)| &block[start..end])
}

/// A line as text: invalid UTF-8 becomes U+FFFD, as Node's decoder does.
fn text(raw: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

/// The lines of a block as text.
fn lines(block: &[u8]) -> impl Iterator<Item = Cow<'_, str>> {
    raw_lines(block).map(text)
}

/// The entries of a block of a current-version file.
fn parse_block(block: &Bytes) -> Vec<SessionEntry> {
    let mut out = Vec::new();
    let mut checker = Checker::default();
    for (start, end) in line_spans(block) {
        let raw = &block[start..end];
        if raw.starts_with(b"{\"type\":\"message\",")
            && let Some(entry) = message_entry(&mut checker, block, (start, end))
        {
            out.push(entry);
            continue;
        }
        let text = text(raw);
        // Non-object values are skipped (Pi would keep them as unusable pseudo-entries), and so
        // are further headers (Pi ignores them).
        if let Some(Value::Object(map)) = parse_line(&text)
            && map.get("type").and_then(Value::as_str) != Some("session")
        {
            out.push(entry_from_line(map, &text));
        }
    }
    out
}

/// Reads the whole file at `path`.
pub(crate) fn read_session_file(path: &Path) -> Result<ReadOutcome> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(ReadOutcome::Missing),
        Err(e) => return Err(SessionError::io(path, e)),
    };
    let io = |e| SessionError::io(path, e);
    let mut blocks = Blocks::new(file);
    // The header: the first parsed line, looked for line by line.
    let mut header = None;
    let mut rest = Bytes::new();
    while header.is_none() {
        let Some(block) = blocks.next().map_err(io)? else {
            return Ok(ReadOutcome::NoHeader);
        };
        let mut offset = 0;
        for raw in raw_lines(&block) {
            offset += raw.len() + 1;
            if let Some(value) = parse_line(&text(raw)) {
                match as_header(value) {
                    Some(h) => header = Some(h),
                    None => return Ok(ReadOutcome::NoHeader),
                }
                break;
            }
        }
        if header.is_some() {
            rest = block.slice(offset.min(block.len())..);
        }
    }
    let Some(header) = header else {
        return Ok(ReadOutcome::NoHeader);
    };
    let body = if is_current_version(&header) {
        let mut entries = parse_block(&rest);
        drop(rest);
        parse_remaining(&mut blocks, &mut entries).map_err(io)?;
        Body::Current(entries)
    } else {
        let mut maps = Vec::new();
        let mut block = Some(rest);
        while let Some(b) = block {
            maps.extend(lines(&b).filter_map(|t| match parse_line(&t) {
                Some(Value::Object(m)) => Some(m),
                _ => None,
            }));
            block = blocks.next().map_err(io)?;
        }
        Body::Legacy(maps)
    };
    Ok(ReadOutcome::Session(FileContent {
        header,
        body,
        needs_newline: blocks.last_byte.is_some_and(|b| b != b'\n'),
    }))
}

/// Parses the remaining blocks into `entries`, in order, on worker threads when there is more
/// than one block and more than one core.
fn parse_remaining(blocks: &mut Blocks, entries: &mut Vec<SessionEntry>) -> std::io::Result<()> {
    let Some(first) = blocks.next()? else {
        return Ok(());
    };
    let second = blocks.next()?;
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS);
    if workers < 2 || second.is_none() {
        entries.extend(parse_block(&first));
        let mut next = second;
        while let Some(b) = next {
            let parsed = parse_block(&b);
            entries.reserve_exact(parsed.len());
            entries.extend(parsed);
            next = blocks.next()?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = sync_channel::<(usize, Bytes)>(workers);
        let job_rx = Arc::new(Mutex::new(job_rx));
        // A parser that panicked reports `None`, so the reader never waits for it forever.
        let (done_tx, done_rx) = channel::<(usize, Option<Vec<SessionEntry>>)>();
        for _ in 0..workers {
            let (job_rx, done_tx) = (Arc::clone(&job_rx), done_tx.clone());
            scope.spawn(move || {
                loop {
                    let job = job_rx
                        .lock()
                        .map_err(|_| ())
                        .and_then(|rx| rx.recv().map_err(|_| ()));
                    let Ok((i, block)) = job else {
                        break;
                    };
                    let parsed = std::panic::catch_unwind(AssertUnwindSafe(|| parse_block(&block)));
                    if done_tx.send((i, parsed.ok())).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        // At most this many blocks are read but not yet appended, bounding memory.
        let window = workers + 1;
        let mut queue = vec![first];
        let mut next_block = second;
        let (mut sent, mut appended) = (0usize, 0usize);
        let mut parked: BTreeMap<usize, Vec<SessionEntry>> = BTreeMap::new();
        loop {
            while sent - appended < window {
                let block = match queue.pop() {
                    Some(b) => b,
                    None => match next_block.take() {
                        Some(b) => {
                            next_block = blocks.next()?;
                            b
                        }
                        None => break,
                    },
                };
                if job_tx.send((sent, block)).is_err() {
                    return Err(std::io::Error::other("session parser stopped"));
                }
                sent += 1;
            }
            if appended == sent {
                return Ok(());
            }
            let Ok((i, Some(parsed))) = done_rx.recv() else {
                return Err(std::io::Error::other("session parser stopped"));
            };
            parked.insert(i, parsed);
            while let Some(parsed) = parked.remove(&appended) {
                // Exact growth: a doubled vector of ~500-byte entries would hold up to half
                // again as much memory at the peak (large buffers grow in place).
                entries.reserve_exact(parsed.len());
                entries.extend(parsed);
                appended += 1;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    fn read(content: &str) -> ReadOutcome {
        let dir = TempDir::new();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, content).unwrap();
        read_session_file(&p).unwrap()
    }

    const H: &str = r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}"#;

    fn entry(i: usize) -> String {
        format!(
            r#"{{"type":"custom","customType":"c","data":"{}","id":"{i:08x}","parentId":null,"timestamp":"t"}}"#,
            "x".repeat(i % 5000)
        )
    }

    #[test]
    fn skips_blank_malformed_and_falsy_lines_and_flags_a_torn_tail() {
        let content = format!(
            "\n{H}\r\n  \nnot json\nnull\n0\n[1]\n{}\n{}",
            r#"{"type":"custom","customType":"c","id":"a","parentId":null,"timestamp":"t"}"#,
            r#"{"type":"custom","customType":"c","id":"b","par"#
        );
        let ReadOutcome::Session(f) = read(&content) else {
            panic!()
        };
        assert!(f.needs_newline);
        let Body::Current(entries) = f.body else {
            panic!()
        };
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].id(), Some("a"));
    }

    #[test]
    fn first_parsed_line_must_be_a_header() {
        assert!(matches!(read(""), ReadOutcome::NoHeader));
        assert!(matches!(read("\n \n"), ReadOutcome::NoHeader));
        assert!(matches!(
            read(r#"{"type":"session","id":5}"#),
            ReadOutcome::NoHeader
        ));
        assert!(matches!(
            read(&format!("[1]\n{H}\n")),
            ReadOutcome::NoHeader
        ));
        let ReadOutcome::Session(f) = read(&format!("garbage\n{H}\n")) else {
            panic!()
        };
        assert!(!f.needs_newline);
        assert!(matches!(
            read(r#"{"type":"session","id":"v1"}"#),
            ReadOutcome::Session(FileContent {
                body: Body::Legacy(_),
                ..
            })
        ));
    }

    #[test]
    fn multi_block_files_keep_line_order_across_blocks_and_threads() {
        let n = 3000;
        let mut content = format!("{H}\n");
        for i in 0..n {
            content.push_str(&entry(i));
            content.push('\n');
        }
        assert!(content.len() > 4 * crate::blocks::BLOCK);
        content.push_str(r#"{"type":"custom","#);
        let ReadOutcome::Session(f) = read(&content) else {
            panic!()
        };
        assert!(f.needs_newline);
        let Body::Current(entries) = f.body else {
            panic!()
        };
        let ids: Vec<String> = entries.iter().map(|e| e.id().unwrap().to_owned()).collect();
        let want: Vec<String> = (0..n).map(|i| format!("{i:08x}")).collect();
        assert_eq!(ids, want);
    }
}
