//! Serializes `edit` and `write` calls that target the same file (keyed by its real path, or the
//! resolved path when it does not exist yet); calls on different files run concurrently.

use crate::fs_error;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

type Queues = HashMap<PathBuf, Arc<AsyncMutex<()>>>;

static QUEUES: Mutex<Option<Queues>> = Mutex::new(None);

fn with_queues<T>(f: impl FnOnce(&mut Queues) -> T) -> T {
    let mut guard = match QUEUES.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    f(guard.get_or_insert_with(HashMap::new))
}

/// Holds a file's turn; the next call for the file starts when this is dropped.
pub struct FileTurn {
    key: PathBuf,
    queue: Arc<AsyncMutex<()>>,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for FileTurn {
    fn drop(&mut self) {
        self.guard.take();
        with_queues(|queues| {
            // Forget the queue once nobody else holds or waits for it.
            if Arc::strong_count(&self.queue) == 2 {
                queues.remove(&self.key);
            }
        });
    }
}

fn queue_key(path: &Path) -> Result<PathBuf, String> {
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(real),
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            Ok(path.to_path_buf())
        }
        Err(err) => Err(describe(&err, path)),
    }
}

fn describe(err: &io::Error, path: &Path) -> String {
    fs_error::with_path(err, "realpath", path)
}

/// Waits for `path`'s turn (FIFO among calls for the same file).
pub async fn wait_turn(path: &Path) -> Result<FileTurn, String> {
    let key = queue_key(path)?;
    let queue = with_queues(|queues| queues.entry(key.clone()).or_default().clone());
    let guard = queue.clone().lock_owned().await;
    Ok(FileTurn {
        key,
        queue,
        guard: Some(guard),
    })
}
