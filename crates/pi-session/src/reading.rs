//! `read_session`: another session's entries or messages, read without opening it as the
//! current session — nothing is written, not even a migration or a torn line's terminator.
//!
//! The entries of a current-version file stream from the file a line at a time (a 100 MB session
//! never sits in memory); an older file is migrated in memory first. The messages view builds
//! the context of the session's leaf, which needs the whole tree.

use crate::error::{Result, SessionError};
use crate::lenient::{entry_from_line, entry_from_map};
use crate::migrate::migrate;
use crate::read::{
    Body, ReadOutcome, as_header, is_current_version, parse_line, read_session_file,
};
use crate::store::SessionStore;
use pi_protocol::session_entry::{SessionEntry, SessionHeader};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A session file opened for reading its entries.
pub struct SessionReader {
    path: PathBuf,
    header: SessionHeader,
    leaf_id: Option<String>,
    source: Source,
}

enum Source {
    /// Entries are read from this byte offset of the file (a current-version file).
    File(u64),
    /// The entries, migrated in memory (an older file).
    Loaded(Vec<SessionEntry>),
}

impl SessionReader {
    /// Opens `path` for its entries after the one with id `since` (all without). Fails for a
    /// missing or non-session file and for a `since` that is not in the file.
    pub fn open(path: &Path, since: Option<&str>) -> Result<SessionReader> {
        let (header_map, body_offset) = read_header(path)?;
        let header = SessionHeader::from_map(header_map.clone())
            .map_err(|_| SessionError::InvalidSessionFile(path.to_path_buf()))?;
        if !is_current_version(&header_map) {
            let store = SessionStore::open_read_only(path)?;
            let entries = store.entries_since(since)?.to_vec();
            return Ok(SessionReader {
                path: path.to_path_buf(),
                // The migrated header (a migration sets `version`).
                header: SessionHeader::from_map(store.header().clone())
                    .map_err(|_| SessionError::InvalidSessionFile(path.to_path_buf()))?,
                leaf_id: store.leaf_id().map(str::to_string),
                source: Source::Loaded(entries),
            });
        }
        let start = match since {
            None => body_offset,
            Some(id) => offset_after(path, body_offset, id)?
                .ok_or_else(|| SessionError::SinceNotFound(id.to_string()))?,
        };
        Ok(SessionReader {
            path: path.to_path_buf(),
            header,
            leaf_id: last_entry_id(path, body_offset)?,
            source: Source::File(start),
        })
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The last entry of the file: where the session would continue.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf_id.as_deref()
    }

    /// The entries, in file order. A read error ends them early (the file was opened fine a
    /// moment ago; what can still fail is the disk).
    pub fn entries(self) -> Box<dyn Iterator<Item = SessionEntry> + Send> {
        match self.source {
            Source::Loaded(entries) => Box::new(entries.into_iter()),
            Source::File(offset) => {
                let Ok(mut file) = File::open(&self.path) else {
                    return Box::new(std::iter::empty());
                };
                if file.seek(SeekFrom::Start(offset)).is_err() {
                    return Box::new(std::iter::empty());
                }
                Box::new(FileEntries {
                    reader: BufReader::with_capacity(1 << 16, file),
                    line: Vec::new(),
                })
            }
        }
    }
}

/// The entries of a current-version file from some offset on.
struct FileEntries {
    reader: BufReader<File>,
    line: Vec<u8>,
}

impl Iterator for FileEntries {
    type Item = SessionEntry;

    fn next(&mut self) -> Option<SessionEntry> {
        loop {
            self.line.clear();
            if self.reader.read_until(b'\n', &mut self.line).ok()? == 0 {
                return None;
            }
            let text = String::from_utf8_lossy(strip_newline(&self.line));
            if let Some(map) = entry_map(&text) {
                return Some(entry_from_line(map, &text));
            }
        }
    }
}

fn strip_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// A line as an entry object: parsed, an object, not a (further) header.
fn entry_map(text: &str) -> Option<Map<String, Value>> {
    match parse_line(text)? {
        Value::Object(map) if map.get("type").and_then(Value::as_str) != Some("session") => {
            Some(map)
        }
        _ => None,
    }
}

/// The header object and the byte offset of the line after it.
fn read_header(path: &Path) -> Result<(Map<String, Value>, u64)> {
    let file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut offset = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| SessionError::io(path, e))?;
        if n == 0 {
            return Err(SessionError::InvalidSessionFile(path.to_path_buf()));
        }
        offset += n as u64;
        if let Some(value) = parse_line(&String::from_utf8_lossy(strip_newline(&line))) {
            return match as_header(value) {
                Some(header) => Ok((header, offset)),
                None => Err(SessionError::InvalidSessionFile(path.to_path_buf())),
            };
        }
    }
}

/// The offset of the line after the entry with id `id` (the last one, if repeated, as the
/// store's index keeps the last). Only lines containing the id's text are parsed.
fn offset_after(path: &Path, start: u64, id: &str) -> Result<Option<u64>> {
    let mut file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    file.seek(SeekFrom::Start(start))
        .map_err(|e| SessionError::io(path, e))?;
    let needle = serde_json::to_string(id).unwrap_or_default();
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let (mut line, mut offset, mut found) = (Vec::new(), start, None);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| SessionError::io(path, e))?;
        if n == 0 {
            return Ok(found);
        }
        offset += n as u64;
        if finder.find(&line).is_some()
            && let Some(map) = entry_map(&String::from_utf8_lossy(strip_newline(&line)))
            && map.get("id").and_then(Value::as_str) == Some(id)
        {
            found = Some(offset);
        }
    }
}

/// The id of the last entry of the file, read from its end backwards (a window that doubles
/// until it holds a whole entry line, or the body).
fn last_entry_id(path: &Path, body_start: u64) -> Result<Option<String>> {
    let mut file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| SessionError::io(path, e))?
        .len();
    let mut window = 64 * 1024u64;
    loop {
        let from = len.saturating_sub(window).max(body_start);
        file.seek(SeekFrom::Start(from))
            .map_err(|e| SessionError::io(path, e))?;
        let mut bytes = Vec::new();
        file.by_ref()
            .take(len - from)
            .read_to_end(&mut bytes)
            .map_err(|e| SessionError::io(path, e))?;
        // The first line of a window that does not start at the body may be cut: skip it.
        let whole = if from == body_start {
            &bytes[..]
        } else {
            match memchr::memchr(b'\n', &bytes) {
                Some(i) => &bytes[i + 1..],
                None => &[][..],
            }
        };
        for line in whole.rsplit(|b| *b == b'\n') {
            if let Some(map) = entry_map(&String::from_utf8_lossy(line)) {
                return Ok(map.get("id").and_then(Value::as_str).map(str::to_string));
            }
        }
        if from == body_start {
            return Ok(None);
        }
        window *= 2;
    }
}

impl SessionStore {
    /// Loads a session for reading only: nothing is ever written to the file (an older version
    /// is migrated in memory, a torn last line is left as is). Appends to the result stay in
    /// memory.
    pub fn open_read_only(path: &Path) -> Result<SessionStore> {
        let content = match read_session_file(path)? {
            ReadOutcome::Session(c) => c,
            ReadOutcome::Missing => {
                return Err(SessionError::io(
                    path,
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                ));
            }
            ReadOutcome::NoHeader => return Err(SessionError::InvalidSessionFile(path.into())),
        };
        let mut header = content.header;
        let entries = match content.body {
            Body::Current(entries) => entries,
            Body::Legacy(mut maps) => {
                migrate(&mut header, &mut maps);
                maps.into_iter()
                    .filter(|m| m.get("type").and_then(Value::as_str) != Some("session"))
                    .map(entry_from_map)
                    .collect()
            }
        };
        let cwd = header
            .get("cwd")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut store = SessionStore::in_memory(&cwd, Default::default())?;
        store.header = header;
        store.entries = entries;
        store.rebuild_index();
        Ok(store)
    }

    /// The messages of the current branch, as `get_messages` shows a session's.
    pub fn context_messages(&self) -> Vec<pi_protocol::SharedMessage> {
        self.build_context().into_owned_messages()
    }
}
