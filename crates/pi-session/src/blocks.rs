//! A session file as blocks of whole lines.
//!
//! A large file is mapped ([`crate::mapped`]); a smaller one is read into one buffer the size
//! of the file. Either way blocks are handed out as shared slices of it, so parsing overlaps
//! reading, and message texts kept from a block (see `message_line`) point into it without a
//! copy. The buffer is allocated once, sized up front (it lives as long as any message kept
//! from it, so spare capacity would stay too), and read into without being zeroed first.
//!
//! No huge pages: they saved page faults, but on a VM whose free memory the host reclaims each
//! 2 MB page is backed anew when first touched, which made opening a 100 MB session take 10 to
//! 400 ms of system time instead of a steady 60 (`perf`: `clear_page_erms` under
//! `folio_zero_user`).

use bytes::{Bytes, BytesMut};
use std::fs::File;
use std::io;

/// Bytes per block handed to a parser (a block always ends at a line end).
pub(crate) const BLOCK: usize = 1 << 19;

/// The file as blocks of whole lines.
pub(crate) struct Blocks {
    source: Source,
    /// The last byte of the file so far.
    pub last_byte: Option<u8>,
}

enum Source {
    /// The file as mapped when opened: what has not been handed out yet.
    Mapped(Bytes),
    Read {
        file: File,
        /// What has been read and not handed out yet, in front of the capacity still to fill.
        buf: BytesMut,
        eof: bool,
    },
}

impl Blocks {
    pub(crate) fn new(file: File) -> Blocks {
        Blocks::with_mapping_from(file, crate::mapped::MIN_MAPPED)
    }

    /// Maps the file when it has at least `min_mapped` bytes.
    pub(crate) fn with_mapping_from(file: File, min_mapped: u64) -> Blocks {
        let size = file.metadata().map_or(0, |m| m.len());
        if size >= min_mapped
            && let Some(bytes) = crate::mapped::map(&file, size)
        {
            // What the file holds when it is opened is the session; a line appended meanwhile
            // is read with the next open, as it would be had it come a moment later.
            return Blocks {
                last_byte: bytes.last().copied(),
                source: Source::Mapped(bytes),
            };
        }
        // The file may still grow while it is read; the buffer then grows with it.
        let buf = BytesMut::with_capacity(usize::try_from(size).unwrap_or(0).max(1));
        Blocks {
            source: Source::Read {
                file,
                buf,
                eof: false,
            },
            last_byte: None,
        }
    }

    /// The next block: whole lines, about [`BLOCK`] bytes or more, or the rest of the file.
    pub(crate) fn next(&mut self) -> io::Result<Option<Bytes>> {
        let (file, buf, eof) = match &mut self.source {
            Source::Mapped(rest) => {
                if rest.is_empty() {
                    return Ok(None);
                }
                let end = rest
                    .get(BLOCK..)
                    .and_then(|tail| memchr::memchr(b'\n', tail))
                    .map_or(rest.len(), |nl| BLOCK + nl + 1);
                return Ok(Some(rest.split_to(end)));
            }
            Source::Read { file, buf, eof } => (file, buf, eof),
        };
        loop {
            if buf.len() >= BLOCK
                && let Some(nl) = memchr::memrchr(b'\n', buf)
            {
                return Ok(Some(buf.split_to(nl + 1).freeze()));
            }
            if *eof {
                return Ok((!buf.is_empty()).then(|| buf.split().freeze()));
            }
            let n = read_more(file, buf)?;
            if n == 0 {
                *eof = true;
            } else {
                self.last_byte = buf.last().copied();
            }
        }
    }
}

/// Reads up to a block into the spare capacity of `buf`; 0 at the end of the file.
fn read_more(file: &File, buf: &mut BytesMut) -> io::Result<usize> {
    if buf.capacity() == buf.len() {
        buf.reserve(BLOCK);
    }
    let spare = buf.spare_capacity_mut();
    let want = spare.len().min(BLOCK);
    let at = spare.as_mut_ptr();
    loop {
        // SAFETY: read(2) writes at most `want` bytes into the spare capacity, which is
        // that long, and the length grows only by what it reports written.
        #[allow(unsafe_code)]
        let n = unsafe {
            let n = libc::read(std::os::fd::AsRawFd::as_raw_fd(file), at.cast(), want);
            if n >= 0 {
                buf.set_len(buf.len() + n as usize);
            }
            n
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use pi_js::json::to_js_string;

    /// Blocks of a file as `min_mapped` decides (mapped or read), with their checks.
    fn blocks_of(path: &std::path::Path, min_mapped: u64) -> (Vec<Bytes>, Option<u8>) {
        let mut blocks = Blocks::with_mapping_from(File::open(path).unwrap(), min_mapped);
        assert_eq!(
            matches!(blocks.source, Source::Mapped(_)),
            min_mapped == 0,
            "mapped iff asked to"
        );
        let mut out = Vec::new();
        while let Some(b) = blocks.next().unwrap() {
            out.push(b);
        }
        (out, blocks.last_byte)
    }

    #[test]
    fn mapped_and_read_files_give_the_same_blocks_of_whole_lines() {
        let dir = TempDir::new();
        let p = dir.path().join("s.jsonl");
        let mut content = Vec::new();
        for i in 0..40_000 {
            content.extend_from_slice(format!("line {i} {}\n", "y".repeat(i % 97)).as_bytes());
        }
        // A torn last line, and a line longer than a block.
        content.extend_from_slice(&vec![b'z'; BLOCK + 10]);
        content.extend_from_slice(b"\ntorn");
        std::fs::write(&p, &content).unwrap();
        let (mapped, mapped_last) = blocks_of(&p, 0);
        let (read, read_last) = blocks_of(&p, u64::MAX);
        assert_eq!(mapped_last, Some(b'n'));
        assert_eq!(read_last, mapped_last);
        for blocks in [&mapped, &read] {
            assert!(blocks.len() > 2);
            assert_eq!(blocks.concat(), content);
            let (last, whole) = blocks.split_last().unwrap();
            assert!(whole.iter().all(|b| b.ends_with(b"\n")));
            assert!(last.ends_with(b"torn"));
        }
    }

    #[test]
    fn a_mapped_session_survives_its_file_being_truncated() {
        let dir = TempDir::new();
        let p = dir.path().join("s.jsonl");
        let mut lines =
            vec![r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}"#.to_owned()];
        let mut parent = "null".to_owned();
        for i in 0..3000 {
            let id = format!("{i:08x}");
            lines.push(format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"t","message":{{"role":"user","content":"{}","timestamp":{i}}}}}"#,
                "w".repeat(500)
            ));
            parent = format!("\"{id}\"");
        }
        let text = lines.join("\n") + "\n";
        assert!(text.len() as u64 > crate::mapped::MIN_MAPPED);
        std::fs::write(&p, &text).unwrap();
        let store = crate::SessionStore::open(&p, None, None).unwrap();
        // Without the detach, reading the kept message texts now would end the process (SIGBUS).
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
        std::fs::write(&p, "overwritten\n").unwrap();
        let written: Vec<String> = store
            .entries()
            .iter()
            .map(|e| to_js_string(e).unwrap())
            .collect();
        assert_eq!(written, lines[1..]);
    }
}
