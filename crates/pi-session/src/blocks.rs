//! A session file as blocks of whole lines, read into one buffer the size of the file.
//!
//! Blocks are handed out as shared slices of that buffer while the rest is still being read, so
//! parsing overlaps reading, and message texts kept from a block (see `message_line`) point
//! into it without a copy. One allocation sized up front leaves no spare capacity behind (the
//! buffer lives as long as any message kept from it), and it is read into without being zeroed
//! first. It asks for no huge pages: they saved page faults, but on a VM whose free memory the
//! host takes back, every fresh 2 MB page is backed anew and zeroed when first touched, which
//! measured 0.04–1.0 s of system time per 100 MB open (a steady ~60 ms without them).
//!
//! A large file is mapped instead where a read lease can be had ([`crate::mapped`]): the blocks
//! are then cut from the mapping, with no copy and no fresh memory.

use bytes::{Bytes, BytesMut};
use std::fs::File;
use std::io;

/// Bytes per block handed to a parser (a block always ends at a line end).
pub(crate) const BLOCK: usize = 1 << 19;

/// The file as blocks of whole lines.
pub(crate) struct Blocks {
    file: File,
    /// What has been read and not handed out yet, in front of the capacity still to fill.
    buf: BytesMut,
    /// The rest of a mapped file, which blocks are cut from instead of reading.
    mapped: Option<Bytes>,
    eof: bool,
    /// The last byte of the file so far.
    pub last_byte: Option<u8>,
}

impl Blocks {
    pub(crate) fn new(file: File) -> Blocks {
        // The file may still grow while it is read; the buffer then grows with it.
        let size = file.metadata().map_or(0, |m| m.len());
        if size >= crate::mapped::MIN_MAPPED
            && let Some(all) = crate::mapped::map(&file, size)
        {
            return Blocks {
                file,
                buf: BytesMut::new(),
                last_byte: all.last().copied(),
                mapped: Some(all),
                eof: true,
            };
        }
        let buf = BytesMut::with_capacity(usize::try_from(size).unwrap_or(0).max(1));
        Blocks {
            file,
            buf,
            mapped: None,
            eof: false,
            last_byte: None,
        }
    }

    /// The next block: at least [`BLOCK`] bytes ending with `\n`, or the rest of the file.
    pub(crate) fn next(&mut self) -> io::Result<Option<Bytes>> {
        if let Some(rest) = &mut self.mapped {
            let end = match rest.get(BLOCK - 1..).and_then(|t| memchr::memchr(b'\n', t)) {
                Some(i) => BLOCK + i,
                None => rest.len(),
            };
            return Ok((end > 0).then(|| rest.split_to(end)));
        }
        loop {
            if self.buf.len() >= BLOCK
                && let Some(nl) = memchr::memrchr(b'\n', &self.buf)
            {
                return Ok(Some(self.buf.split_to(nl + 1).freeze()));
            }
            if self.eof {
                return Ok((!self.buf.is_empty()).then(|| self.buf.split().freeze()));
            }
            let n = self.read_more()?;
            if n == 0 {
                self.eof = true;
            } else {
                self.last_byte = self.buf.last().copied();
            }
        }
    }

    /// Reads up to a block into the spare capacity; 0 at the end of the file.
    fn read_more(&mut self) -> io::Result<usize> {
        if self.buf.capacity() == self.buf.len() {
            self.buf.reserve(BLOCK);
        }
        let spare = self.buf.spare_capacity_mut();
        let want = spare.len().min(BLOCK);
        let at = spare.as_mut_ptr();
        loop {
            // SAFETY: read(2) writes at most `want` bytes into the spare capacity, which is
            // that long, and the length grows only by what it reports written.
            #[allow(unsafe_code)]
            let n = unsafe {
                let n = libc::read(std::os::fd::AsRawFd::as_raw_fd(&self.file), at.cast(), want);
                if n >= 0 {
                    self.buf.set_len(self.buf.len() + n as usize);
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
}
