//! The lock Pi takes around reading and writing `settings.json` and `trust.json`
//! (`proper-lockfile`): a directory `<file>.lock` created with `mkdir`, which is atomic. Taking
//! the same lock lets us and a Pi process running at the same time not overwrite each other.
//! Like Pi we try 10 times, 20 ms apart, and treat a lock older than 10 s as abandoned.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const ATTEMPTS: u32 = 10;
const RETRY_DELAY: Duration = Duration::from_millis(20);
/// `proper-lockfile`'s default `stale` time: its holders refresh the lock's mtime more often.
const STALE_AFTER: Duration = Duration::from_secs(10);

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct FileLock {
    dir: PathBuf,
}

impl FileLock {
    /// Locks `file` (the lock is `<file>.lock`, next to it; its folder must exist).
    pub fn acquire(file: &Path) -> io::Result<FileLock> {
        let mut name = file.as_os_str().to_owned();
        name.push(".lock");
        let dir = PathBuf::from(name);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(FileLock { dir }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if is_stale(&dir) {
                        // Another process died holding it; take it over as proper-lockfile does.
                        let _ = std::fs::remove_dir(&dir);
                        continue;
                    }
                    if attempt >= ATTEMPTS {
                        return Err(io::Error::new(
                            io::ErrorKind::WouldBlock,
                            "Lock file is already being held",
                        ));
                    }
                    std::thread::sleep(RETRY_DELAY);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn is_stale(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > STALE_AFTER)
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;

    #[test]
    fn lock_is_exclusive_and_released() {
        let tmp = TempDir::new();
        let file = tmp.path().join("settings.json");
        let lock = FileLock::acquire(&file).unwrap();
        assert!(tmp.path().join("settings.json.lock").is_dir());
        let err = FileLock::acquire(&file).unwrap_err();
        assert_eq!(err.to_string(), "Lock file is already being held");
        drop(lock);
        assert!(!tmp.path().join("settings.json.lock").exists());
        assert!(FileLock::acquire(&file).is_ok());
    }
}
