//! The one owner of stdout.
//!
//! At start we move the real stdout to a private close-on-exec descriptor and point fd 1 at
//! stderr. From then on nothing else can write protocol bytes: a stray `println!`, a library's
//! print, or a child process that inherited fd 1 all land on stderr, and no child can ever hold
//! our stdout pipe open. Records reach the private descriptor only through [`Output`], whole
//! records under one lock, so records never interleave.
//!
//! A record is written by the task that produced it when nothing is queued before it and the
//! pipe or socket has room (a non-blocking write into a private open of the pipe, or a
//! `MSG_DONTWAIT` send on a stream socket, which is what Node gives a child's stdio): no hand-off
//! to another thread, which was most of the cost of a streamed delta. Streamed updates go further: they
//! collect in a small buffer that is written when the runtime runs out of work (its park hook,
//! [`Output::idle_flush`]), so the deltas decoded from one network read leave in one write, as
//! soon as nothing more is being done. Anything else is written at once, after what was collected.
//! A record that cannot be written at once joins a bounded queue drained by one writer thread,
//! so a client that stops reading stalls producers instead of growing memory, and order is kept:
//! nothing is written directly while anything is queued. That thread starts with the first
//! queued record: a session whose client keeps up and asks for nothing large never needs it.
//!
//! A record too large to build in memory (`get_messages`, `get_tree`, `get_entries` of a long
//! session are each about the size of the session file) is queued as a producer that the
//! writer thread runs in its turn, serializing straight into the output buffer: no copy, no
//! hand-off between threads.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use tokio::sync::mpsc;

/// Records buffered between producers and the writer before producers wait.
const CHANNEL_RECORDS: usize = 1024;
/// Collected streamed updates are written once they reach this size even if the runtime is busy.
const COALESCE_BYTES: usize = 32 * 1024;
/// Requested capacity of the stdout pipe (Linux's default unprivileged maximum).
#[cfg(target_os = "linux")]
const STDOUT_PIPE_BYTES: libc::c_int = 1 << 20;

/// A record written by the writer thread itself (it must end with `\n`).
type Producer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// What the writer takes from the queue.
enum Item {
    /// Complete records, or what a direct write left of them.
    Bytes(Vec<u8>),
    /// One record written by its producer.
    Produce(Producer),
}

/// The private stdout and the rules for writing to it.
struct Sink {
    file: File,
    /// Whether and how tasks may write to the descriptor directly. Otherwise (a file, a
    /// terminal) only the writer thread writes.
    direct: Direct,
    /// Collected streamed updates, not yet written. Held while writing directly and while
    /// queueing, so a direct write never overlaps another or the start of the queue.
    gate: Mutex<Vec<u8>>,
    /// Items queued for the writer thread and not yet completely written. Direct writes
    /// happen only while it is zero, which keeps records in the order they were sent; while it
    /// is not zero nothing is collected.
    queued: AtomicUsize,
    /// The writer thread, started by the first item queued.
    writer: Mutex<WriterThread>,
}

enum WriterThread {
    /// Nothing was queued yet; the queue's receiving end waits for the thread.
    NotStarted(mpsc::Receiver<Item>),
    Running {
        handle: JoinHandle<()>,
        /// Disconnected when the thread ends (its sender is dropped then).
        ended: std::sync::mpsc::Receiver<()>,
    },
    /// Taken by [`Writer::finish_within`].
    Finished,
}

/// How a task writes to stdout without blocking.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direct {
    /// It does not; the writer thread writes everything.
    No,
    /// `write` on a private non-blocking open of the pipe.
    Pipe,
    /// `send` with `MSG_DONTWAIT` on a stream socket (its flags stay as they are).
    Socket,
}

/// A cloneable handle that writes complete JSONL records to stdout.
#[derive(Clone)]
pub struct Output {
    tx: mpsc::Sender<Item>,
    sink: Arc<Sink>,
    /// Drops records instead of writing them (print mode shows only the final answer).
    muted: bool,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("muted", &self.muted)
            .finish()
    }
}

impl Output {
    /// The same stdout, but every record sent through the copy is dropped.
    pub fn muted(&self) -> Output {
        Output {
            tx: self.tx.clone(),
            sink: self.sink.clone(),
            muted: true,
        }
    }

    /// Writes one record (which must end in `\n`) after everything sent before it, waiting
    /// while the client is slow to read. Returns false once stdout is gone.
    pub async fn send(&self, record: String) -> bool {
        self.send_as(record, false).await
    }

    /// Like [`Self::send`] for a streamed update: it may wait in a small buffer until the
    /// runtime has nothing else to do, so that a burst leaves in one write.
    pub async fn send_update(&self, record: String) -> bool {
        self.send_as(record, true).await
    }

    async fn send_as(&self, record: String, coalesce: bool) -> bool {
        if self.muted {
            return true;
        }
        match self.write_direct(record, coalesce) {
            None => true,
            Some(record) => self.enqueue(Item::Bytes(record.into_bytes())).await,
        }
    }

    /// Queues one record that `produce` writes (including its final `\n`) when its turn
    /// comes, on the writer thread, so its size never sits in memory. Nothing else is written
    /// inside it. Returns false once the writer is gone.
    pub async fn send_streamed<F>(&self, produce: F) -> bool
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
    {
        if self.muted {
            return true;
        }
        self.enqueue(Item::Produce(Box::new(produce))).await
    }

    /// What writes the collected updates when the runtime is about to wait for events (its
    /// park hook). It does not keep the writer alive.
    pub fn idle_flush(&self) -> IdleFlush {
        IdleFlush {
            sink: self.sink.clone(),
            tx: self.tx.downgrade(),
        }
    }

    async fn enqueue(&self, item: Item) -> bool {
        {
            let mut collected = lock(&self.sink.gate);
            if !collected.is_empty() {
                // Collected updates precede the item; nothing is queued while they exist.
                queue_now(
                    &self.sink,
                    &self.tx,
                    Item::Bytes(std::mem::take(&mut *collected)),
                );
            }
            self.sink.queued.fetch_add(1, Ordering::SeqCst);
        }
        start_writer(&self.sink);
        self.tx.send(item).await.is_ok()
    }

    /// Writes (or collects) `record` now if nothing is queued; returns it when it must be
    /// queued instead. Called with the gate free.
    fn write_direct(&self, record: String, coalesce: bool) -> Option<String> {
        if self.sink.direct == Direct::No {
            return Some(record);
        }
        let mut collected = lock(&self.sink.gate);
        if self.sink.queued.load(Ordering::SeqCst) != 0 {
            return Some(record);
        }
        if coalesce && collected.len() + record.len() <= COALESCE_BYTES {
            collected.extend_from_slice(record.as_bytes());
            return None;
        }
        let bytes = if collected.is_empty() {
            record.into_bytes()
        } else {
            let mut all = std::mem::take(&mut *collected);
            all.extend_from_slice(record.as_bytes());
            all
        };
        write_or_queue_rest(&self.sink, &self.tx, bytes);
        None
    }
}

/// Writes the collected updates of an [`Output`] (see [`Output::idle_flush`]).
pub struct IdleFlush {
    sink: Arc<Sink>,
    tx: mpsc::WeakSender<Item>,
}

impl IdleFlush {
    pub fn flush(&self) {
        let mut collected = lock(&self.sink.gate);
        if collected.is_empty() {
            return;
        }
        // Without a sender every Output is gone and Writer::finish writes what is left.
        if let Some(tx) = self.tx.upgrade() {
            let bytes = std::mem::take(&mut *collected);
            write_or_queue_rest(&self.sink, &tx, bytes);
        }
    }
}

/// Queues `item` while the gate is held and nothing else is queued (so the channel has room).
fn queue_now(sink: &Arc<Sink>, tx: &mpsc::Sender<Item>, item: Item) {
    sink.queued.fetch_add(1, Ordering::SeqCst);
    start_writer(sink);
    if tx.try_send(item).is_err() {
        sink.queued.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes what the pipe takes of `bytes` without blocking and queues the rest, while the gate
/// is held and nothing is queued.
fn write_or_queue_rest(sink: &Arc<Sink>, tx: &mpsc::Sender<Item>, mut bytes: Vec<u8>) {
    let written = match write_some(sink, &bytes) {
        Ok(n) => n,
        Err(e) => stdout_failed(&e),
    };
    if written < bytes.len() {
        bytes.drain(..written);
        queue_now(sink, tx, Item::Bytes(bytes));
    }
}

/// Writes as much of `bytes` as the descriptor takes without blocking.
fn write_some(sink: &Sink, bytes: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        let sent = match sink.direct {
            Direct::Socket => send_nowait(&sink.file, rest),
            _ => (&sink.file).write(rest),
        };
        match sent {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn send_nowait(file: &File, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: a valid buffer of `bytes.len()` bytes and a descriptor the file keeps open.
    let n = unsafe {
        libc::send(
            file.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Only Linux takes the direct socket path (`MSG_NOSIGNAL` is Linux's).
#[cfg(not(target_os = "linux"))]
fn send_nowait(_file: &File, _bytes: &[u8]) -> io::Result<usize> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Like Pi: once the reader is gone (EPIPE and friends) nothing more can be delivered.
fn stdout_failed(e: &io::Error) -> ! {
    eprintln!("pi: stdout write failed: {e}");
    std::process::exit(1);
}

/// Starts the writer thread unless it runs already. Without it nothing queued would ever be
/// written, so failing to start it ends the process as a failed stdout does.
fn start_writer(sink: &Arc<Sink>) {
    let mut state = lock(&sink.writer);
    let rx = match std::mem::replace(&mut *state, WriterThread::Finished) {
        WriterThread::NotStarted(rx) => rx,
        other => {
            *state = other;
            return;
        }
    };
    let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
    let writer_sink = sink.clone();
    let spawned = std::thread::Builder::new()
        .name("stdout-writer".into())
        .spawn(move || {
            write_loop(writer_sink, rx);
            drop(ended_tx);
        });
    match spawned {
        Ok(handle) => *state = WriterThread::Running { handle, ended },
        Err(e) => {
            eprintln!("pi: cannot start the stdout writer: {e}");
            std::process::exit(1);
        }
    }
}

/// Flushes what is queued and collected at the end; see [`Writer::finish_within`].
pub struct Writer {
    sink: Arc<Sink>,
}

impl Writer {
    /// Waits up to `grace` until every queued record was written, then writes the collected
    /// updates (there are some only if nothing was queued after them). Call after dropping all
    /// [`Output`]s. A client that stopped reading cannot hold the exit longer than `grace`.
    pub fn finish_within(self, grace: std::time::Duration) {
        use std::sync::mpsc::RecvTimeoutError;
        let state = std::mem::replace(&mut *lock(&self.sink.writer), WriterThread::Finished);
        if let WriterThread::Running { handle, ended } = state {
            if let Err(RecvTimeoutError::Timeout) = ended.recv_timeout(grace) {
                return;
            }
            let _ = handle.join();
        }
        let collected = std::mem::take(&mut *lock(&self.sink.gate));
        if let Err(e) = Blocking(self.sink.clone()).write_all(&collected) {
            eprintln!("pi: stdout write failed: {e}");
        }
    }
}

/// Takes over stdout (the writer thread starts when something is first queued).
pub fn start() -> io::Result<(Output, Writer)> {
    let (file, direct) = take_over_stdout()?;
    let (tx, rx) = mpsc::channel::<Item>(CHANNEL_RECORDS);
    let sink = Arc::new(Sink {
        file,
        direct,
        gate: Mutex::new(Vec::new()),
        queued: AtomicUsize::new(0),
        writer: Mutex::new(WriterThread::NotStarted(rx)),
    });
    Ok((
        Output {
            tx,
            sink: sink.clone(),
            muted: false,
        },
        Writer { sink },
    ))
}

fn write_item(out: &mut impl Write, item: Item) -> io::Result<()> {
    match item {
        Item::Bytes(bytes) => out.write_all(&bytes),
        Item::Produce(produce) => match produce(out) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Serialization failed midway (never for our types) or stdout failed: end the
                // line so the stream stays line-framed; a stdout failure fails this write too.
                eprintln!("pi: could not write a record: {e}");
                out.write_all(b"\n")
            }
        },
    }
}

/// The writer thread's view of the sink: waits for room instead of failing when the
/// descriptor is non-blocking.
struct Blocking(Arc<Sink>);

impl Write for Blocking {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match (&self.0.file).write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_writable(&self.0.file)?,
                other => return other,
            }
        }
    }

    /// `writev(2)`: large records made of many pieces (`get_messages`) go out without being
    /// copied into the buffer first.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        loop {
            match (&self.0.file).write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_writable(&self.0.file)?,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[allow(unsafe_code)]
fn wait_writable(file: &File) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd for a descriptor the file keeps open.
    let r = unsafe { libc::poll(&mut pfd, 1, -1) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn write_loop(sink: Arc<Sink>, mut rx: mpsc::Receiver<Item>) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, Blocking(sink.clone()));
    while let Some(first) = rx.blocking_recv() {
        let mut written = 1;
        let mut result = write_item(&mut out, first);
        // Batch whatever is already queued into one flush: fewer syscalls under a stream of
        // small deltas, and nothing sits in the buffer once the queue is empty.
        while result.is_ok() {
            match rx.try_recv() {
                Ok(next) => {
                    written += 1;
                    result = write_item(&mut out, next);
                }
                Err(_) => break,
            }
        }
        if result.is_ok() {
            result = out.flush();
        }
        if let Err(e) = result {
            stdout_failed(&e);
        }
        sink.queued.fetch_sub(written, Ordering::SeqCst);
    }
}

/// Duplicates fd 1 to a private close-on-exec descriptor and redirects fd 1 to stderr.
/// Returns the descriptor and how tasks may write to it (see [`Sink::direct`]).
fn take_over_stdout() -> io::Result<(File, Direct)> {
    use crate::stream_kind::Stream;
    use std::os::fd::AsFd;
    // A close-on-exec descriptor (fd >= 3), so no child inherits the protocol stream.
    let stream = crate::stream_kind::nonblocking(io::stdout().as_fd(), true)?;
    redirect_stdout_to_stderr()?;
    Ok(match stream {
        Stream::Pipe(own) => {
            enlarge_pipe(&own);
            (own, Direct::Pipe)
        }
        Stream::Socket(file) => (file, Direct::Socket),
        Stream::Other(file) => (file, Direct::No),
    })
}

/// Points fd 1 at stderr, so stray prints (ours or a library's) cannot reach the protocol.
#[allow(unsafe_code)]
fn redirect_stdout_to_stderr() -> io::Result<()> {
    // SAFETY: dup2 on fds 1 and 2, which exist for the whole process; no Rust object owns fd 1.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A larger pipe (when stdout is one) takes a large record in far fewer write/wake-up rounds
/// with the client; failure (over the system limit) changes nothing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn enlarge_pipe(file: &File) {
    // SAFETY: fcntl on a descriptor `file` keeps open.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, STDOUT_PIPE_BYTES) };
}

#[cfg(not(target_os = "linux"))]
fn enlarge_pipe(_file: &File) {}
