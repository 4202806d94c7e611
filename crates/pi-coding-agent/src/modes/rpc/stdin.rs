//! Reading the commands on stdin. Where stdin is a pipe or a stream socket (what clients give a
//! child), a task on the runtime reads it whenever it becomes readable: no thread of its own
//! (a thread is a measurable part of what a short-lived agent costs) and no hand-off between
//! threads before a command is handled. Anything that cannot be polled (a regular file, a
//! terminal, `/dev/null`) is read by a thread with blocking reads, as before.
//!
//! Either way the lines of one read travel together as one batch (see
//! `InFlight::spawn_after_batch`), extension UI answers are taken out at once for their own
//! channel, and the bounded batch channel pushes back on a client that writes faster than
//! commands are handled: the reader stops reading until there is room.

use super::dispatch;
use super::framing::{Frame, LineSplitter};
use pi_protocol::command::ExtensionUiResponse;
use std::io::{self, Read};
use tokio::sync::mpsc;

/// Batches of lines waiting for the input loop before the reader waits.
const BATCHES: usize = 64;
/// First read buffer: an idle agent's commands are short, and the buffer is zeroed, so its
/// size is resident. Doubled while reads fill it, up to [`MAX_READ`].
const FIRST_READ: usize = 4 * 1024;
const MAX_READ: usize = 1024 * 1024;

pub type Batches = mpsc::Receiver<Vec<Frame>>;
pub type UiAnswers = mpsc::UnboundedReceiver<ExtensionUiResponse>;

/// Starts reading stdin; call within the runtime.
pub fn spawn_reader() -> (Batches, UiAnswers) {
    let (tx, rx) = mpsc::channel::<Vec<Frame>>(BATCHES);
    let (ui_tx, ui_rx) = mpsc::unbounded_channel();
    let framer = Framer {
        splitter: LineSplitter::new(),
        buf: vec![0u8; FIRST_READ],
        ui_tx,
    };
    match pollable::open() {
        Some(source) => {
            tokio::spawn(read_polled(source, framer, tx));
        }
        None => spawn_thread(framer, tx),
    }
    (rx, ui_rx)
}

/// What both readers do with the bytes they read.
struct Framer {
    splitter: LineSplitter,
    buf: Vec<u8>,
    ui_tx: mpsc::UnboundedSender<ExtensionUiResponse>,
}

impl Framer {
    /// The lines completed by the `n` bytes just read into `buf`, UI answers taken out; grows
    /// the buffer when the read filled it.
    fn frames(&mut self, n: usize) -> Vec<Frame> {
        let mut frames = Vec::new();
        self.splitter.push(&self.buf[..n], &mut frames);
        if n == self.buf.len() && self.buf.len() < MAX_READ {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        frames.retain(|frame| match dispatch::ui_answer(frame) {
            Some(answer) => {
                let _ = self.ui_tx.send(answer);
                false
            }
            None => true,
        });
        frames
    }

    /// A last line without its LF, at EOF.
    fn finish(mut self) -> Option<Frame> {
        self.splitter.finish()
    }
}

fn read_failed(e: &io::Error) {
    eprintln!("pi: stdin read failed: {e}");
}

/// Blocking reads on a thread of their own: the cheapest way to follow what cannot be polled.
fn spawn_thread(mut framer: Framer, tx: mpsc::Sender<Vec<Frame>>) {
    let spawned = std::thread::Builder::new()
        .name("stdin-reader".into())
        .spawn(move || {
            let mut stdin = io::stdin().lock();
            loop {
                let n = match stdin.read(&mut framer.buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        read_failed(&e);
                        break;
                    }
                };
                let frames = framer.frames(n);
                if !frames.is_empty() && tx.blocking_send(frames).is_err() {
                    return;
                }
            }
            if let Some(last) = framer.finish() {
                let _ = tx.blocking_send(vec![last]);
            }
        });
    if let Err(e) = spawned {
        eprintln!("pi: cannot start the stdin reader: {e}");
    }
}

/// Reads as the runtime reports stdin readable.
async fn read_polled(
    source: tokio::io::unix::AsyncFd<pollable::Source>,
    mut framer: Framer,
    tx: mpsc::Sender<Vec<Frame>>,
) {
    loop {
        let mut ready = match source.readable().await {
            Ok(r) => r,
            Err(e) => {
                read_failed(&e);
                break;
            }
        };
        let n = match ready.try_io(|s| s.get_ref().read_now(&mut framer.buf)) {
            Ok(Ok(0)) => break,
            Ok(Ok(n)) => n,
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => {
                read_failed(&e);
                break;
            }
            // Nothing to read after all; readiness was cleared, wait for the next.
            Err(_) => continue,
        };
        let frames = framer.frames(n);
        if !frames.is_empty() && tx.send(frames).await.is_err() {
            return;
        }
    }
    if let Some(last) = framer.finish() {
        let _ = tx.send(vec![last]).await;
    }
}

/// Stdin as something the runtime can poll, where it is one.
mod pollable {
    use pi_coding_agent::stream_kind::Stream;
    use std::fs::File;
    use std::io::{self, Read};
    use std::os::fd::{AsFd, AsRawFd, RawFd};
    use tokio::io::unix::AsyncFd;

    /// How stdin is read without blocking (see `pi_coding_agent::stream_kind`).
    pub enum Source {
        Pipe(File),
        Socket(File),
    }

    impl AsRawFd for Source {
        fn as_raw_fd(&self) -> RawFd {
            match self {
                Source::Pipe(f) | Source::Socket(f) => f.as_raw_fd(),
            }
        }
    }

    impl Source {
        pub fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
            match self {
                Source::Pipe(f) => (&*f).read(buf),
                Source::Socket(f) => recv_nowait(f, buf),
            }
        }
    }

    /// `None` when stdin is neither a pipe nor a stream socket, or cannot be registered.
    pub fn open() -> Option<AsyncFd<Source>> {
        let source = match pi_coding_agent::stream_kind::nonblocking(io::stdin().as_fd(), false) {
            Ok(Stream::Pipe(f)) => Source::Pipe(f),
            Ok(Stream::Socket(f)) => Source::Socket(f),
            Ok(Stream::Other(_)) | Err(_) => return None,
        };
        register(source)
    }

    #[allow(unsafe_code)]
    fn register(source: Source) -> Option<AsyncFd<Source>> {
        // SAFETY: `source` owns its descriptor, which stays open and the same file for as long
        // as the registration (the AsyncFd owns `source`).
        unsafe { AsyncFd::register_with_interest(source, tokio::io::Interest::READABLE) }.ok()
    }

    #[allow(unsafe_code)]
    fn recv_nowait(file: &File, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: a valid buffer of `buf.len()` bytes and a descriptor the file keeps open.
        let n = unsafe {
            libc::recv(
                file.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}
