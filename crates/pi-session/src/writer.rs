//! The session file on disk: created once with everything so far, then appended to one complete
//! line per `write`.
//!
//! Durability rules:
//! * Appends go through an `O_APPEND` handle, one `write` per entry line, and return only after
//!   the kernel took the whole line. A crash can therefore only tear the last line, which the
//!   reader tolerates.
//! * A failed append truncates the file back to its length before the write, so a short write
//!   can never leave a fragment that the next line would be glued to. Appends hold an exclusive
//!   advisory lock (`flock`) for the write, so that length is right when several of our
//!   processes append to one file.
//! * A new file is created exclusively (it must not exist) and gets its header in a write of its
//!   own, so the header line is never torn; the entries follow in large writes (a crash tears
//!   at most the last line, as for appends).
//! * Whole-file rewrites (migrations, forks) go to a temporary file that is renamed over the
//!   target, so a crash leaves either the old or the new file.
//!
//! Entries are written as they are serialized, never gathered first: a fork of a 1 GB session
//! would otherwise hold a second gigabyte.

use crate::error::{Result, SessionError};
use pi_js::json::write_js;
use pi_protocol::session_entry::SessionEntry;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Write buffer for whole files: a long session goes out in megabyte writes.
const WRITE_BUFFER: usize = 1 << 20;

/// A write buffer that grows up to [`WRITE_BUFFER`] before it writes: a new session's few
/// lines go out in one write without mapping (and unmapping) a megabyte first, as a
/// `BufWriter` of that capacity would.
struct Batched<W: Write> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> Batched<W> {
    fn new(inner: W) -> Self {
        Batched {
            inner,
            buf: Vec::new(),
        }
    }

    fn flush_buffer(&mut self) -> io::Result<()> {
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes what is buffered and returns the writer.
    fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Batched<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.len() >= WRITE_BUFFER {
            // A large piece (an image's base64) goes out as it is, not through a copy.
            self.flush_buffer()?;
            self.inner.write_all(data)?;
            return Ok(data.len());
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= WRITE_BUFFER {
            self.flush_buffer()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_buffer()?;
        self.inner.flush()
    }
}

/// Writes `entries` as JSONL lines.
pub(crate) fn write_entries(w: &mut dyn Write, entries: &[SessionEntry]) -> io::Result<()> {
    for e in entries {
        write_js(&mut *w, e).map_err(io::Error::other)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// The file backing a persisted session.
#[derive(Debug)]
pub(crate) struct SessionFile {
    path: PathBuf,
    /// Open append handle once something was appended or the file was created.
    handle: Option<File>,
    /// The open handle's device and inode, to see that the path was replaced without asking
    /// the handle again at every append.
    identity: (u64, u64),
    /// The file was there when loaded (it is opened for appending only at the first append:
    /// opening it for writing would break the read lease of a mapped session, see `mapped`).
    loaded: bool,
    /// Bytes in the file, as far as this writer knows (the truncation point after a failure).
    len: u64,
}

impl SessionFile {
    /// A file that does not exist yet (written at the first conversation message).
    pub(crate) fn pending(path: PathBuf) -> SessionFile {
        SessionFile {
            path,
            handle: None,
            identity: (0, 0),
            loaded: false,
            len: 0,
        }
    }

    /// An existing file that new entries are appended to.
    pub(crate) fn existing(path: PathBuf) -> SessionFile {
        SessionFile {
            loaded: true,
            ..SessionFile::pending(path)
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file has been written (or was loaded).
    pub(crate) fn is_flushed(&self) -> bool {
        self.loaded || self.handle.is_some()
    }

    fn open_append(&mut self) -> Result<()> {
        let handle = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        let meta = handle
            .metadata()
            .map_err(|e| SessionError::io(&self.path, e))?;
        self.len = meta.len();
        self.identity = identity(&meta);
        self.handle = Some(handle);
        Ok(())
    }

    /// Creates the file, failing if it exists, with the header line and then what `rest`
    /// writes.
    pub(crate) fn create(
        &mut self,
        header_line: &[u8],
        rest: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<()> {
        let mut handle = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        let written = handle.write_all(header_line).and_then(|()| {
            let mut w = Batched::new(&handle);
            rest(&mut w)?;
            w.finish().map(drop)
        });
        match written.and_then(|()| handle.metadata()) {
            Ok(meta) => {
                self.len = meta.len();
                self.identity = identity(&meta);
            }
            Err(e) => {
                // Nothing of this session was on disk before: leave nothing behind.
                drop(handle);
                let _ = std::fs::remove_file(&self.path);
                return Err(SessionError::io(&self.path, e));
            }
        }
        self.handle = Some(handle);
        Ok(())
    }

    /// Appends one complete line (`line` ends with `\n`) with a single `write`.
    ///
    /// Another process may append to the same file (Pi takes no lock either): `O_APPEND` keeps
    /// every line whole, and each writer's entries chain to its own leaf. The exclusive advisory
    /// lock around the write makes the truncation point after a failure the file's length under
    /// that lock, so a failed append never cuts off a line another of our processes wrote
    /// meanwhile. A file replaced by a rename (another process migrated it) is reopened first, so
    /// nothing is written into an unlinked file.
    pub(crate) fn append(&mut self, line: &[u8]) -> Result<()> {
        if self.handle.is_none() || self.replaced() {
            self.handle = None;
            self.open_append()?;
        }
        let Some(handle) = self.handle.as_mut() else {
            return Err(SessionError::io(
                &self.path,
                std::io::Error::other("session file is not open"),
            ));
        };
        let locked = flock(handle, libc::LOCK_EX);
        let start = handle.metadata().map(|m| m.len()).unwrap_or(self.len);
        let written = handle.write_all(line);
        if written.is_err() {
            let _ = handle.set_len(start);
        }
        if locked {
            flock(handle, libc::LOCK_UN);
        }
        match written {
            Ok(()) => {
                self.len = start + line.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.len = start;
                Err(SessionError::io(&self.path, e))
            }
        }
    }

    /// Whether the path now names another file than the open handle.
    fn replaced(&self) -> bool {
        self.handle.is_some()
            && std::fs::metadata(&self.path)
                .is_ok_and(|at_path| identity(&at_path) != self.identity)
    }

    /// Replaces the file's content with what `content` writes (temporary file + rename) and
    /// keeps appending to the new file.
    pub(crate) fn rewrite(
        &mut self,
        content: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<()> {
        let tmp = temp_sibling(&self.path);
        let result = (|| {
            let f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            let mut w = Batched::new(f);
            content(&mut w)?;
            let f = w.finish()?;
            f.sync_data()?;
            drop(f);
            std::fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(SessionError::io(&self.path, e));
        }
        self.handle = None;
        self.open_append()
    }
}

/// A file's device and inode.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// `flock(2)` on an open file (std's `File::lock` is newer than our minimum Rust); whether it
/// succeeded (an interrupted or unsupported lock leaves the write unlocked, as Pi's are).
fn flock(file: &File, op: libc::c_int) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this `File` owns for the duration of the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
    rc == 0
}

fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.{:08x}.tmp",
        crate::ids::random_u64() >> 32
    ))
}

/// Appends a single `\n` to a file whose last line is unterminated (Pi does this on load so
/// later entries start on a fresh line).
pub(crate) fn terminate_last_line(path: &Path) -> Result<()> {
    OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(b"\n"))
        .map_err(|e| SessionError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    #[test]
    fn create_append_rewrite() {
        let dir = TempDir::new();
        let p = dir.path().join("a.jsonl");
        let mut f = SessionFile::pending(p.clone());
        assert!(!f.is_flushed());
        f.create(b"h\n", |w| w.write_all(b"1\n2\n")).unwrap();
        f.append(b"3\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n2\n3\n");
        let mut again = SessionFile::pending(p.clone());
        assert!(again.create(b"x\n", |_| Ok(())).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n2\n3\n");
        f.rewrite(|w| w.write_all(b"new\n")).unwrap();
        f.append(b"4\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n4\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        terminate_last_line(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n4\n\n");
    }

    /// Two writers on one file: lines stay whole and in each writer's order; a file renamed over
    /// the path is followed.
    #[test]
    fn two_writers_on_one_file() {
        let dir = TempDir::new();
        let p = dir.path().join("a.jsonl");
        let mut a = SessionFile::pending(p.clone());
        a.create(b"h\n", |_| Ok(())).unwrap();
        let mut b = SessionFile::existing(p.clone());
        a.append(b"a1\n").unwrap();
        b.append(b"b1\n").unwrap();
        a.append(b"a2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\na1\nb1\na2\n");
        a.rewrite(|w| w.write_all(b"new\n")).unwrap();
        b.append(b"b2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\nb2\n");
    }

    /// Entries are streamed in, so a serializer failing halfway must not leave half a file.
    #[test]
    fn a_write_failing_halfway_leaves_nothing_behind() {
        let dir = TempDir::new();
        let p = dir.path().join("a.jsonl");
        let fail_after_some = |w: &mut dyn Write| {
            w.write_all(&vec![b'x'; 3 * WRITE_BUFFER])?;
            Err(io::Error::other("serializer failed"))
        };
        let mut f = SessionFile::pending(p.clone());
        assert!(f.create(b"h\n", fail_after_some).is_err());
        assert!(!p.exists());
        assert!(!f.is_flushed());

        f.create(b"h\n", |w| w.write_all(b"1\n")).unwrap();
        assert!(f.rewrite(fail_after_some).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n");
        // No temporary file left next to it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        f.append(b"2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n2\n");
    }

    /// Small pieces are gathered into writes of at least a megabyte, a large piece goes out as
    /// it is after what was gathered, and nothing is reordered.
    #[test]
    fn batched_writes_keep_order_and_size() {
        struct Log(Vec<usize>, Vec<u8>);
        impl Write for Log {
            fn write(&mut self, d: &[u8]) -> io::Result<usize> {
                self.0.push(d.len());
                self.1.extend_from_slice(d);
                Ok(d.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = Batched::new(Log(Vec::new(), Vec::new()));
        let mut expected = Vec::new();
        for i in 0..WRITE_BUFFER / 1000 + 10 {
            let line = format!("{i:0999}\n");
            w.write_all(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        let big = vec![b'b'; WRITE_BUFFER];
        w.write_all(&big).unwrap();
        expected.extend_from_slice(&big);
        w.write_all(b"tail\n").unwrap();
        expected.extend_from_slice(b"tail\n");
        let log = w.finish().unwrap();
        assert_eq!(log.1, expected);
        // One full batch, the rest gathered so far, the large piece, the tail.
        assert_eq!(log.0.len(), 4);
        assert!(log.0[0] >= WRITE_BUFFER);
        assert_eq!(log.0[2], WRITE_BUFFER);
        assert_eq!(log.0[3], 5);
    }
}
