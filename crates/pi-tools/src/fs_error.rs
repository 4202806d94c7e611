//! File-system errors worded as Node.js words them (`ENOENT: no such file or directory, access
//! '/abs/path'`): Pi lets these messages through to the model unchanged.

use std::io;
use std::path::Path;

/// The libuv code and description of an OS error.
pub fn code_and_description(err: &io::Error) -> (&'static str, &'static str) {
    let Some(errno) = err.raw_os_error() else {
        return ("UNKNOWN", "unknown error");
    };
    match errno {
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::ENFILE => ("ENFILE", "file table overflow"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EINVAL => ("EINVAL", "invalid argument"),
        libc::EIO => ("EIO", "i/o error"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
        libc::ENXIO => ("ENXIO", "no such device or address"),
        libc::ENODEV => ("ENODEV", "no such device"),
        libc::EXDEV => ("EXDEV", "cross-device link not permitted"),
        libc::ENOTEMPTY => ("ENOTEMPTY", "directory not empty"),
        libc::EDQUOT => ("EDQUOT", "disk quota exceeded"),
        _ => ("UNKNOWN", "unknown error"),
    }
}

/// The error's code alone (`ENOENT`), as `error.code` reads in JavaScript.
pub fn code(err: &io::Error) -> &'static str {
    code_and_description(err).0
}

/// `<CODE>: <description>, <syscall> '<path>'`.
pub fn with_path(err: &io::Error, syscall: &str, path: &Path) -> String {
    let (code, description) = code_and_description(err);
    format!("{code}: {description}, {syscall} '{}'", path.display())
}

/// `<CODE>: <description>, <syscall>` (errors of calls on an open file have no path).
pub fn without_path(err: &io::Error, syscall: &str) -> String {
    let (code, description) = code_and_description(err);
    format!("{code}: {description}, {syscall}")
}

/// `access(path, mode)` as Node's `fs.access` checks it.
pub fn access(path: &Path, mode: libc::c_int) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::access(c_path.as_ptr(), mode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
