//! A large session file mapped into memory instead of read, kept safe by a read lease.
//!
//! Reading a 100 MB file copies it into fresh memory, and on a VM every fresh page is a fault
//! the host has to back (70–90 ms per 100 MB here, against 9 ms to map the page cache). Kept
//! message texts point into the file's bytes for the life of the session, so those bytes have
//! to stay put: a mapping alone would turn another program's truncation of the file into a
//! `SIGBUS` on the next read. So a file is mapped only under a read lease (`F_SETLEASE`), which
//! the kernel breaks before anyone opens the file for writing or truncates it: the opener waits
//! while a keeper thread, woken by the lease signal, copies each mapping whose lease is being
//! broken into anonymous memory at the same address (`mremap` over it, so readers never see a
//! gap) and then releases that lease. Our own first append breaks the lease the same way, so a
//! session that is only viewed never pays for the copy. Where no lease can be had (someone has
//! the file open for writing, a file system without leases, another owner) the caller reads the
//! file instead.

use bytes::Bytes;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Mutex, OnceLock};

/// Files smaller than this are read: mapping saves nothing measurable below a few blocks.
pub(crate) const MIN_MAPPED: u64 = 2 << 20;

/// The signal the kernel sends when a lease of ours is being broken.
const LEASE_SIGNAL: libc::c_int = libc::SIGIO;

/// `fcntl` command naming that signal (Linux's `F_SETSIG`, absent from the libc crate).
const F_SETSIG: libc::c_int = 10;

/// One mapped file.
struct Region {
    addr: usize,
    len: usize,
    /// The lease holder, until the region is copied out.
    file: Option<File>,
}

/// The regions currently mapped, by address.
static REGIONS: Mutex<Vec<Region>> = Mutex::new(Vec::new());

/// The write end of the keeper's wake-up pipe (set once the keeper runs).
static WAKE: OnceLock<RawFd> = OnceLock::new();

/// The whole file as bytes that stay valid whatever happens to the file, or `None` when it
/// cannot be mapped under a lease (the caller then reads it).
pub(crate) fn map(file: &File, len: u64) -> Option<Bytes> {
    let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
    keeper_ready()?;
    let lease_fd = file.try_clone().ok()?;
    let fd = lease_fd.as_raw_fd();
    // SAFETY: fcntl, fstat and mmap on a descriptor we own; the mapping is read-only and its
    // length is the file's length while the lease keeps writers out.
    #[allow(unsafe_code)]
    unsafe {
        if libc::fcntl(fd, F_SETSIG, LEASE_SIGNAL) != 0
            || libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) != 0
        {
            return None;
        }
        // The length under the lease: a writer that finished before it may have grown the file.
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 || usize::try_from(st.st_size).ok() != Some(len) {
            release(&lease_fd);
            return None;
        }
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            fd,
            0,
        );
        if addr == libc::MAP_FAILED {
            release(&lease_fd);
            return None;
        }
        let addr = addr as usize;
        lock_regions().push(Region {
            addr,
            len,
            file: Some(lease_fd),
        });
        Some(Bytes::from_owner(Mapping { addr, len }))
    }
}

/// Whether `bytes` lie in a mapped region, and if so whether it was copied out (tests).
#[cfg(test)]
fn region_of(bytes: &[u8]) -> Option<bool> {
    let at = bytes.as_ptr() as usize;
    lock_regions()
        .iter()
        .find(|r| at >= r.addr && at < r.addr + r.len)
        .map(|r| r.file.is_none())
}

#[cfg(test)]
pub(crate) fn is_mapped(bytes: &[u8]) -> bool {
    region_of(bytes).is_some()
}

#[cfg(test)]
pub(crate) fn is_copied_out(bytes: &[u8]) -> bool {
    region_of(bytes) == Some(true)
}

fn lock_regions() -> std::sync::MutexGuard<'static, Vec<Region>> {
    REGIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The owner of a mapping, kept by every slice of it.
struct Mapping {
    addr: usize,
    len: usize,
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the range is mapped readable until this owner drops (a copy-out replaces it
        // in place with the same bytes).
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.addr as *const u8, self.len)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let mut regions = lock_regions();
        if let Some(i) = regions.iter().position(|r| r.addr == self.addr)
            && let Some(file) = regions.swap_remove(i).file
        {
            release(&file);
        }
        // SAFETY: the last slice of the mapping is gone; under the lock no copy-out runs.
        #[allow(unsafe_code)]
        unsafe {
            libc::munmap(self.addr as *mut libc::c_void, self.len);
        }
    }
}

/// Starts the keeper thread and installs the lease signal's handler, once per process;
/// `None` if either failed (nothing is mapped then).
fn keeper_ready() -> Option<()> {
    static READY: OnceLock<bool> = OnceLock::new();
    READY.get_or_init(start_keeper).then_some(())
}

fn start_keeper() -> bool {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors; sigaction installs a handler that only writes
    // to the pipe (async-signal-safe) and keeps errno.
    #[allow(unsafe_code)]
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
            return false;
        }
        let (read_end, write_end) = (fds[0], fds[1]);
        // The keeper blocks on its end; only the writer stays non-blocking.
        libc::fcntl(read_end, libc::F_SETFL, 0);
        let spawned = std::thread::Builder::new()
            .name("session-lease".into())
            .stack_size(64 * 1024)
            .spawn(move || keeper(read_end));
        if spawned.is_err() {
            libc::close(read_end);
            libc::close(write_end);
            return false;
        }
        let _ = WAKE.set(write_end);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_lease_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(LEASE_SIGNAL, &action, std::ptr::null_mut()) == 0
    }
}

extern "C" fn on_lease_signal(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let Some(&fd) = WAKE.get() else { return };
    // SAFETY: write(2) of one byte from a local; errno is restored for the interrupted code.
    #[allow(unsafe_code)]
    unsafe {
        let errno = *libc::__errno_location();
        let byte = 1u8;
        libc::write(fd, (&raw const byte).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// Waits for lease signals; each copies out every mapped file whose lease is being broken and
/// releases that lease.
fn keeper(read_end: RawFd) {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: read(2) into a local buffer from the pipe this thread owns.
        #[allow(unsafe_code)]
        let n = unsafe { libc::read(read_end, buf.as_mut_ptr().cast(), buf.len()) };
        if n == 0
            || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            return;
        }
        for region in lock_regions().iter_mut() {
            // Only the leases being broken: another file's lease says nothing about this one.
            let Some(file) = region.file.take_if(|f| !holds_read_lease(f)) else {
                continue;
            };
            if copy_out(region.addr, region.len) {
                // The opener goes on once the lease is gone.
                release(&file);
            } else {
                region.file = Some(file);
            }
        }
    }
}

/// Whether `file` still holds its read lease undisturbed: while a lease is being broken,
/// `F_GETLEASE` reports the type it is being broken to (`F_UNLCK` for a read lease).
fn holds_read_lease(file: &File) -> bool {
    // SAFETY: fcntl on a descriptor we own.
    #[allow(unsafe_code)]
    let lease = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLEASE) };
    lease == libc::F_RDLCK
}

/// Gives up the lease on `file`'s open file description (shared with the reader's descriptor,
/// so closing ours alone would not).
fn release(file: &File) {
    // SAFETY: fcntl on a descriptor we own.
    #[allow(unsafe_code)]
    unsafe {
        libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK);
    }
}

/// Bytes copied out of a file mapping at a time: the file's pages leave our memory as their
/// copies arrive, so a copy-out adds one chunk to the peak, not the file's size.
const COPY_CHUNK: usize = 8 << 20;

/// Replaces the file mapping at `addr` with anonymous memory holding the same bytes, chunk by
/// chunk; false if memory ran out (the lease then lapses after the kernel's break time).
fn copy_out(addr: usize, len: usize) -> bool {
    let mut at = 0;
    while at < len {
        let n = COPY_CHUNK.min(len - at);
        if !copy_chunk_out(addr + at, n) {
            return false;
        }
        at += n;
    }
    true
}

fn copy_chunk_out(addr: usize, len: usize) -> bool {
    // SAFETY: a fresh anonymous mapping of `len` bytes is filled from the file mapping (still
    // valid: the lease holds the breaker back), made read-only and moved over the old range in
    // one step, so concurrent readers see the same bytes before and after.
    #[allow(unsafe_code)]
    unsafe {
        let copy = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if copy == libc::MAP_FAILED {
            return false;
        }
        std::ptr::copy_nonoverlapping(addr as *const u8, copy.cast::<u8>(), len);
        libc::mprotect(copy, len, libc::PROT_READ);
        let moved = libc::mremap(
            copy,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            addr as *mut libc::c_void,
        );
        if moved == libc::MAP_FAILED {
            libc::munmap(copy, len);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::Blocks;
    use crate::testutil::TempDir;
    use std::fs::OpenOptions;
    use std::process::Command;

    /// A file of `MIN_MAPPED` and more: numbered lines of varying length.
    fn big_file(dir: &TempDir) -> (std::path::PathBuf, Vec<u8>) {
        let p = dir.path().join("s.jsonl");
        let mut content = Vec::new();
        let mut i = 0;
        while content.len() < MIN_MAPPED as usize + 300_000 {
            content.extend_from_slice(format!("{i} {}\n", "x".repeat(i % 3000)).as_bytes());
            i += 1;
        }
        std::fs::write(&p, &content).unwrap();
        (p, content)
    }

    fn all_blocks(path: &std::path::Path) -> Vec<Bytes> {
        let mut blocks = Blocks::new(File::open(path).unwrap());
        let mut out = Vec::new();
        while let Some(b) = blocks.next().unwrap() {
            out.push(b);
        }
        out
    }

    /// Whether this file system grants read leases (ext4, xfs and tmpfs do).
    fn leases_work(dir: &TempDir) -> bool {
        let p = dir.path().join("probe");
        std::fs::write(&p, b"x").unwrap();
        let f = File::open(&p).unwrap();
        // SAFETY: fcntl on a descriptor this test owns.
        #[allow(unsafe_code)]
        unsafe {
            libc::fcntl(f.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) == 0
        }
    }

    fn joined(blocks: &[Bytes]) -> Vec<u8> {
        blocks.iter().flat_map(|b| b.iter().copied()).collect()
    }

    /// Without the lease, the truncation would make the next read of a kept block a `SIGBUS`.
    #[test]
    fn a_mapped_file_survives_another_process_truncating_it() {
        let dir = TempDir::new();
        let (p, content) = big_file(&dir);
        let blocks = all_blocks(&p);
        assert!(blocks.len() > 2);
        assert!(
            blocks[..blocks.len() - 1]
                .iter()
                .all(|b| b.ends_with(b"\n"))
        );
        assert_eq!(joined(&blocks), content);
        if !leases_work(&dir) {
            assert!(!is_mapped(&blocks[0]));
            eprintln!("no leases on this file system: the file was read");
            return;
        }
        assert!(is_mapped(&blocks[0]) && !is_copied_out(&blocks[0]));
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!(": > '{}'", p.display()))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0);
        assert!(is_copied_out(&blocks[0]));
        assert_eq!(joined(&blocks), content);
        drop(blocks);
    }

    /// Our own append breaks our own lease: the open waits for the copy-out, then goes on.
    #[test]
    fn our_own_append_copies_the_mapping_out_first() {
        let dir = TempDir::new();
        let (p, content) = big_file(&dir);
        let blocks = all_blocks(&p);
        let mapped = is_mapped(&blocks[0]);
        assert_eq!(mapped, leases_work(&dir));
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b"more\n").unwrap();
        assert_eq!(is_copied_out(&blocks[0]), mapped);
        assert_eq!(joined(&blocks), content);
    }

    /// A file someone has open for writing gets no lease: it is read, with the same blocks.
    #[test]
    fn a_file_open_for_writing_elsewhere_is_read() {
        let dir = TempDir::new();
        let (p, content) = big_file(&dir);
        let writer = OpenOptions::new().append(true).open(&p).unwrap();
        let blocks = all_blocks(&p);
        assert!(!is_mapped(&blocks[0]));
        assert_eq!(joined(&blocks), content);
        drop(writer);
        let small = dir.path().join("small.jsonl");
        std::fs::write(&small, b"a\nb\n").unwrap();
        let blocks = all_blocks(&small);
        assert!(!is_mapped(&blocks[0]));
        assert_eq!(joined(&blocks), b"a\nb\n");
    }
}
