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
//! session are each about the size of the session file) is written by a producer on a blocking
//! thread in chunks; the writer takes the chunks in order before any later record.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use tokio::sync::mpsc;

/// Records buffered between producers and the writer before producers wait.
const CHANNEL_RECORDS: usize = 1024;
/// Bytes per chunk of a streamed record, and chunks queued before its producer waits.
const CHUNK: usize = 256 * 1024;
const CHUNKS_IN_FLIGHT: usize = 4;

/// What the writer takes from the queue.
#[derive(Debug)]
enum Item {
    /// One complete record.
    Record(String),
    /// One record in chunks, complete when the sender is dropped.
    Stream(std_mpsc::Receiver<Vec<u8>>),
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

    /// Queues one record that `produce` writes (including its final `\n`) on a blocking
    /// thread, in chunks, so its size never sits in memory. Nothing else is written between
    /// its chunks. Returns false once the writer is gone.
    pub async fn send_streamed<F>(&self, produce: F) -> bool
    where
        F: FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
    {
        if self.muted {
            return true;
        }
        let (tx, rx) = std_mpsc::sync_channel(CHUNKS_IN_FLIGHT);
        if self.tx.send(Item::Stream(rx)).await.is_err() {
            return false;
        }
        let done = tokio::task::spawn_blocking(move || {
            let mut chunks = ChunkWriter {
                tx,
                buf: Vec::with_capacity(CHUNK),
            };
            let produced = produce(&mut chunks);
            if let Err(e) = &produced {
                eprintln!("pi: could not write a record: {e}");
                // The writer is gone, or (never for our types) serialization failed midway:
                // end the line so the stream stays line-framed.
                chunks.buf.push(b'\n');
            }
            chunks.finish().and(produced)
        })
        .await;
        matches!(done, Ok(Ok(())))
    }
}

/// The producer side of a streamed record.
struct ChunkWriter {
    tx: std_mpsc::SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    fn send_buf(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .send(chunk)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    fn finish(mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send_buf()
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK {
            self.send_buf()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
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
        Item::Stream(chunks) => chunks.iter().try_for_each(|c| out.write_all(&c)),
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
        Ok(File::from(OwnedFd::from_raw_fd(private)))
    }
}
