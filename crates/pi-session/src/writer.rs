//! The session file on disk: created once with everything so far, then appended to one complete
//! line per `write`.
//!
//! Durability rules:
//! * Appends go through an `O_APPEND` handle, one `write` per entry line, and return only after
//!   the kernel took the whole line. A crash can therefore only tear the last line, which the
//!   reader tolerates.
//! * A failed append truncates the file back to its previous length, so a short write can never
//!   leave a fragment that the next line would be glued to.
//! * A new file is created exclusively (it must not exist) and gets its header in a write of its
//!   own, so the header line is never torn; the entries follow in one more write.
//! * Whole-file rewrites (migrations, forks) go to a temporary file that is renamed over the
//!   target, so a crash leaves either the old or the new file.

use crate::error::{Result, SessionError};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file backing a persisted session.
#[derive(Debug)]
pub(crate) struct SessionFile {
    path: PathBuf,
    /// Open append handle once the file exists.
    handle: Option<File>,
    /// Bytes in the file, as far as this writer knows (the truncation point after a failure).
    len: u64,
}

impl SessionFile {
    /// A file that does not exist yet (written at the first conversation message).
    pub(crate) fn pending(path: PathBuf) -> SessionFile {
        SessionFile {
            path,
            handle: None,
            len: 0,
        }
    }

    /// An existing file that new entries are appended to.
    pub(crate) fn existing(path: PathBuf) -> Result<SessionFile> {
        let mut f = SessionFile::pending(path);
        f.open_append()?;
        Ok(f)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file has been written (or was loaded).
    pub(crate) fn is_flushed(&self) -> bool {
        self.handle.is_some()
    }

    fn open_append(&mut self) -> Result<()> {
        let handle = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        self.len = handle
            .metadata()
            .map_err(|e| SessionError::io(&self.path, e))?
            .len();
        self.handle = Some(handle);
        Ok(())
    }

    /// Creates the file, failing if it exists, with the header line and then `rest`.
    pub(crate) fn create(&mut self, header_line: &[u8], rest: &[u8]) -> Result<()> {
        let mut handle = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&self.path)
            .map_err(|e| SessionError::io(&self.path, e))?;
        let written = handle
            .write_all(header_line)
            .and_then(|()| handle.write_all(rest));
        if let Err(e) = written {
            // Nothing of this session was on disk before: leave nothing behind.
            drop(handle);
            let _ = std::fs::remove_file(&self.path);
            return Err(SessionError::io(&self.path, e));
        }
        self.len = (header_line.len() + rest.len()) as u64;
        self.handle = Some(handle);
        Ok(())
    }

    /// Appends one complete line (`line` ends with `\n`) with a single `write`.
    pub(crate) fn append(&mut self, line: &[u8]) -> Result<()> {
        if self.handle.is_none() {
            self.open_append()?;
        }
        let Some(handle) = self.handle.as_mut() else {
            return Err(SessionError::io(
                &self.path,
                std::io::Error::other("session file is not open"),
            ));
        };
        match handle.write_all(line) {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = handle.set_len(self.len);
                Err(SessionError::io(&self.path, e))
            }
        }
    }

    /// Replaces the file's content with `content` (temporary file + rename) and keeps appending
    /// to the new file.
    pub(crate) fn rewrite(&mut self, content: &[u8]) -> Result<()> {
        let tmp = temp_sibling(&self.path);
        let result = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(content)?;
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
        f.create(b"h\n", b"1\n2\n").unwrap();
        f.append(b"3\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n2\n3\n");
        let mut again = SessionFile::pending(p.clone());
        assert!(again.create(b"x\n", b"").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\n1\n2\n3\n");
        f.rewrite(b"new\n").unwrap();
        f.append(b"4\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n4\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        terminate_last_line(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n4\n\n");
    }
}
