//! The one owner of stdout.
//!
//! At start we move the real stdout to a private close-on-exec descriptor and point fd 1 at
//! stderr. From then on nothing else can write protocol bytes: a stray `println!`, a library's
//! print, or a child process that inherited fd 1 all land on stderr, and no child can ever hold
//! our stdout pipe open. Records reach the private descriptor only through [`Output`], a bounded
//! channel drained by one writer thread, so records never interleave and a client that stops
//! reading stalls producers instead of growing memory.
//!
//! A record too large to build in memory (`get_messages`, `get_tree`, `get_entries` of a long
//! session are each about the size of the session file) is queued as a producer that the
//! writer thread runs in its turn, serializing straight into the output buffer: no copy, no
//! hand-off between threads.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::thread::JoinHandle;
use tokio::sync::mpsc;

/// Records buffered between producers and the writer before producers wait.
const CHANNEL_RECORDS: usize = 1024;
/// Requested capacity of the stdout pipe (Linux's default unprivileged maximum).
const STDOUT_PIPE_BYTES: libc::c_int = 1 << 20;

/// A record written by the writer thread itself (it must end with `\n`).
type Producer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// What the writer takes from the queue.
enum Item {
    /// One complete record.
    Record(String),
    /// One record written by its producer.
    Produce(Producer),
}

/// A cloneable handle that queues complete JSONL records for stdout.
#[derive(Clone, Debug)]
pub struct Output {
    tx: mpsc::Sender<Item>,
    /// Drops records instead of writing them (print mode shows only the final answer).
    muted: bool,
}

impl Output {
    /// The same stdout, but every record sent through the copy is dropped.
    pub fn muted(&self) -> Output {
        Output {
            tx: self.tx.clone(),
            muted: true,
        }
    }

    /// Queues one record (which must end in `\n`), waiting while the channel is full.
    /// Returns false once the writer is gone (stdout closed).
    pub async fn send(&self, record: String) -> bool {
        if self.muted {
            return true;
        }
        self.tx.send(Item::Record(record)).await.is_ok()
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
        self.tx.send(Item::Produce(Box::new(produce))).await.is_ok()
    }
}

/// The writer thread; join it to flush everything queued before it.
pub struct Writer {
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// Waits until every queued record was written. Call after dropping all [`Output`]s.
    pub fn finish(&self) {
        let handle = self.handle.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// Takes over stdout and starts the writer thread.
pub fn start() -> io::Result<(Output, Writer)> {
    let file = take_over_stdout()?;
    let (tx, rx) = mpsc::channel::<Item>(CHANNEL_RECORDS);
    let handle = std::thread::Builder::new()
        .name("stdout-writer".into())
        .spawn(move || write_loop(file, rx))?;
    Ok((
        Output { tx, muted: false },
        Writer {
            handle: Mutex::new(Some(handle)),
        },
    ))
}

fn write_item(out: &mut impl Write, item: Item) -> io::Result<()> {
    match item {
        Item::Record(record) => out.write_all(record.as_bytes()),
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

fn write_loop(file: File, mut rx: mpsc::Receiver<Item>) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, file);
    while let Some(first) = rx.blocking_recv() {
        let mut result = write_item(&mut out, first);
        // Batch whatever is already queued into one flush: fewer syscalls under a stream of
        // small deltas, and nothing sits in the buffer once the queue is empty.
        while result.is_ok() {
            match rx.try_recv() {
                Ok(next) => result = write_item(&mut out, next),
                Err(_) => break,
            }
        }
        if result.is_ok() {
            result = out.flush();
        }
        if let Err(e) = result {
            // Like Pi: the reader is gone (EPIPE and friends), nothing more can be delivered.
            eprintln!("pi: stdout write failed: {e}");
            std::process::exit(1);
        }
    }
}

/// Duplicates fd 1 to a private close-on-exec descriptor and redirects fd 1 to stderr.
#[allow(unsafe_code)]
fn take_over_stdout() -> io::Result<File> {
    // SAFETY: plain descriptor syscalls on fds 1 and 2, which exist for the whole process; the
    // duplicated descriptor is new and owned solely by the returned File.
    unsafe {
        let private = libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if private < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            let err = io::Error::last_os_error();
            libc::close(private);
            return Err(err);
        }
        // A larger pipe (when stdout is one) takes a large record in far fewer write/wake-up
        // rounds with the client; failure (not a pipe, over the system limit) changes nothing.
        libc::fcntl(private, libc::F_SETPIPE_SZ, STDOUT_PIPE_BYTES);
        Ok(File::from(OwnedFd::from_raw_fd(private)))
    }
}
