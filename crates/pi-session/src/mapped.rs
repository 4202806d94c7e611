//! A large session file mapped into memory instead of read into it.
//!
//! Reading a 100 MB file costs 100 MB of fresh memory, which the kernel must hand out and zero
//! page by page before `read` copies the file into it: on the VMs this runs on (whose free memory
//! the host takes back), that was most of the time the process spent opening a long session,
//! and with huge pages it varied from 10 to 400 ms. A private mapping shows the page cache's own
//! pages instead: no zeroing, no copy.
//!
//! Message texts kept from the file (see `message_line`) point into the mapping for the life of
//! the session, so it must not change under them. A private mapping still shows the file's
//! pages, and once the file is truncated by someone else, reading past its new end faults
//! (`SIGBUS`, even for pages already copied on write). Pi and we only ever append to a
//! current-version file (rewrites replace the file by a rename), but a person or another
//! program may not. So the mapping is then detached from the file: a background thread at idle
//! priority reads the file again, a few megabytes at a time, into fresh anonymous memory and
//! moves that over the mapped range (`mremap`, one atomic step per piece): the same bytes at
//! the same addresses, no longer the file's. That is the copy a `read` would have made, moved
//! off the path of the first response; memory stays one copy plus a piece. Only a truncation in
//! the moment between opening and the end of that copy can still fault.

use bytes::Bytes;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Weak};

/// Files smaller than this are read: their copy is cheap, and the mapping has a thread to pay.
pub(crate) const MIN_MAPPED: u64 = 1 << 20;

/// One private, read-only mapping of a file; unmapped when the last [`Bytes`] of it is dropped.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory that nothing writes through this pointer (the detach
// only changes which pages back it, never their content), so it may be shared across threads.
#[allow(unsafe_code)]
unsafe impl Send for Mapping {}
#[allow(unsafe_code)]
unsafe impl Sync for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.ptr, self.len)
        }
    }
}

/// What the [`Bytes`] of a mapping own: the detach holds the mapping only weakly, so a session
/// closed before its copy is done (a switch right after opening) frees the mapping at once and
/// ends the copy.
struct Shared(Arc<Mapping>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range is the mapping made in `map` and nothing refers to it any more.
        #[allow(unsafe_code)]
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The first `len` bytes of `file`, mapped and being detached from the file (see the module
/// documentation); `None` when the file should be read instead.
#[cfg(target_os = "linux")]
pub(crate) fn map(file: &File, len: u64) -> Option<Bytes> {
    let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
    // SAFETY: a fresh private read-only mapping of an open file; the kernel picks the address.
    #[allow(unsafe_code)]
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_POPULATE,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return None;
    }
    let mapping = Mapping {
        ptr: ptr.cast(),
        len,
    };
    // The kernel checks the advice before the (empty) range: this only asks whether it knows
    // MADV_POPULATE_WRITE. Without it the mapping could not be detached.
    // SAFETY: an empty range at the start of the mapping; nothing is changed.
    #[allow(unsafe_code)]
    if unsafe { libc::madvise(ptr, 0, libc::MADV_POPULATE_WRITE) } != 0 {
        return None;
    }
    let mapping = Arc::new(mapping);
    let bytes = Bytes::from_owner(Shared(Arc::clone(&mapping)));
    // Unit tests detach at once, so a test can truncate the file right after opening it. So
    // does a process that cannot start the thread: the copy is then on the path of the
    // response, as a read would be.
    let spawned = !cfg!(test)
        && file.try_clone().is_ok_and(|own| {
            let weak = Arc::downgrade(&mapping);
            std::thread::Builder::new()
                .name("session-detach".into())
                .spawn(move || {
                    idle_priority();
                    detach(&weak, &own);
                })
                .is_ok()
        });
    if !spawned {
        detach(&Arc::downgrade(&mapping), file);
    }
    Some(bytes)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn map(_file: &File, _len: u64) -> Option<Bytes> {
    None
}

/// Bytes moved from the file to anonymous memory per step of the detach.
const PIECE: usize = 2 << 20;

/// Lets the parse and the first responses go first: the copy takes the time they leave.
#[cfg(target_os = "linux")]
fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: changes this thread's own scheduling policy only.
    #[allow(unsafe_code)]
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

/// Replaces `mapping`, piece by piece, with anonymous memory holding the same bytes read from
/// `file`. Stops at the first failure, leaving the rest mapped, and once the mapping is gone.
#[cfg(target_os = "linux")]
fn detach(mapping: &Weak<Mapping>, file: &File) {
    let mut offset = 0;
    loop {
        // Held for one piece: the range stays mapped (and ours) while it is replaced.
        let Some(mapping) = mapping.upgrade() else {
            return;
        };
        let (base, len) = (mapping.ptr as usize, mapping.len);
        if offset >= len {
            return;
        }
        let n = PIECE.min(len - offset);
        // SAFETY: a fresh anonymous mapping of `n` bytes, filled by pread(2) within its length,
        // made read-only and moved over `[base + offset, base + offset + n)`, which lies in the
        // mapping `mapping` keeps alive (mremap replaces that range in one step, so readers see
        // the old pages or the new ones, with the same content). On failure it is unmapped.
        #[allow(unsafe_code)]
        unsafe {
            let piece = libc::mmap(
                std::ptr::null_mut(),
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            );
            if piece == libc::MAP_FAILED {
                return;
            }
            let moved = fill(file, piece.cast(), n, offset)
                && libc::mprotect(piece, n, libc::PROT_READ) == 0
                && libc::mremap(
                    piece,
                    n,
                    n,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    (base + offset) as *mut libc::c_void,
                ) != libc::MAP_FAILED;
            if !moved {
                libc::munmap(piece, n);
                return;
            }
        }
        offset += n;
    }
}

/// Reads `n` bytes of `file` at `offset` into `at`; false if the file no longer has them.
///
/// # Safety
/// `at` must be valid for writes of `n` bytes.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
unsafe fn fill(file: &File, at: *mut u8, n: usize, offset: usize) -> bool {
    let mut done = 0;
    while done < n {
        let Ok(position) = libc::off_t::try_from(offset + done) else {
            return false;
        };
        // SAFETY: `at + done` has `n - done` writable bytes (the caller's promise).
        let r = unsafe { libc::pread(file.as_raw_fd(), at.add(done).cast(), n - done, position) };
        match r {
            r if r > 0 => done += r as usize,
            0 => return false,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return false,
        }
    }
    true
}
