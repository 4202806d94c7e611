//! The threads that search files for `grep`: started with the first directory search and kept
//! for the life of the process. Starting and ending two threads per call (stacks mapped and
//! unmapped, a malloc arena each) was ~15% of a short search; an idle thread costs nothing.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

/// A piece of work for a search thread; it gets the thread's own read buffer, which keeps its
/// size between jobs.
pub(crate) type Job = Box<dyn FnOnce(&mut Vec<u8>) + Send>;

/// The number of search threads, asked once per process: the standard library reads the
/// cgroup's CPU quota files on every call.
pub(crate) fn workers() -> usize {
    static WORKERS: OnceLock<usize> = OnceLock::new();
    *WORKERS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
    })
}

/// Where jobs go: `None` when not one thread could be started.
fn queue() -> &'static Option<Sender<Job>> {
    static QUEUE: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let started = (0..workers())
            .filter(|_| {
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name("grep-search".into())
                    .spawn(move || serve(&rx))
                    .is_ok()
            })
            .count();
        (started > 0).then_some(tx)
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn serve(rx: &Mutex<Receiver<Job>>) {
    let mut buf = Vec::new();
    loop {
        // The lock is held only while waiting: the job runs after it is released.
        let job = lock(rx).recv();
        let Ok(job) = job else { return };
        // A job reports its own panics (as failed files); this only keeps the thread alive.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut buf)));
    }
}

/// Runs `job` on a search thread, or right here when there is none.
pub(crate) fn submit(job: Job) {
    let job = match queue() {
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(returned) => returned.0,
        },
        None => job,
    };
    job(&mut Vec::new());
}
