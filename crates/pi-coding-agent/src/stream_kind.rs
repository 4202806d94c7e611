//! What a standard stream is, and how a task can use it without blocking. Both stdout (written
//! by the task that made a record) and stdin (read by the runtime) need this.
//!
//! A pipe is opened anew through `/proc`: an open file description of our own, so making it
//! non-blocking cannot affect whoever else shares the inherited one (elsewhere `/dev/fd` would
//! duplicate the shared description, so there is no such path). A stream socket is used through
//! a duplicate with `MSG_DONTWAIT`, its flags left as they are (Linux only here, as
//! `MSG_NOSIGNAL` on the write side is). Anything else (a file, a terminal) cannot be used
//! without blocking.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;

/// A close-on-exec descriptor for the stream, by kind.
pub enum Stream {
    /// A private non-blocking open of the pipe.
    Pipe(File),
    /// A duplicate of a `SOCK_STREAM` socket, for `send`/`recv` with `MSG_DONTWAIT`.
    Socket(File),
    /// A duplicate of anything else; only blocking use.
    Other(File),
}

/// Classifies `fd` (opening a pipe anew for writing or reading, as `write` says).
pub fn nonblocking(fd: BorrowedFd<'_>, write: bool) -> io::Result<Stream> {
    let dup = File::from(fd.try_clone_to_owned()?);
    let kind = dup.metadata().map(|m| m.file_type());
    if kind.as_ref().is_ok_and(|k| k.is_socket()) {
        return Ok(if cfg!(target_os = "linux") && is_stream_socket(&dup) {
            Stream::Socket(dup)
        } else {
            Stream::Other(dup)
        });
    }
    if !kind.is_ok_and(|k| k.is_fifo()) {
        return Ok(Stream::Other(dup));
    }
    Ok(match reopen_nonblocking(&dup, write) {
        Some(own) => Stream::Pipe(own),
        None => Stream::Other(dup),
    })
}

#[cfg(target_os = "linux")]
fn reopen_nonblocking(file: &File, write: bool) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn reopen_nonblocking(_file: &File, _write: bool) -> Option<File> {
    None
}

/// A `SOCK_STREAM` socket, where a short send leaves the rest of the bytes for later and a read
/// of 0 bytes is the end.
#[allow(unsafe_code)]
fn is_stream_socket(file: &File) -> bool {
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int into `kind` and its size into `len`.
    let r = unsafe {
        libc::getsockopt(
            file.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    r == 0 && kind == libc::SOCK_STREAM
}
