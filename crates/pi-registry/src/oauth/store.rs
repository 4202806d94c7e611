//! `auth.json` changes under the lock Pi takes (`proper-lockfile` on the file's real path: a
//! directory `<realpath>.lock` made with `mkdir`, which is atomic). While one process holds it
//! another waits, retrying with growing pauses for up to 30 s; a lock left for longer than 30 s by
//! a holder that died is taken over. The file is rewritten whole, as Pi's
//! `JSON.stringify(data, null, 2)`, created with mode 0600.

use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How long a holder may keep the lock before others treat it as abandoned (Pi's `stale`).
const STALE_AFTER: Duration = Duration::from_secs(30);
/// How long a waiter keeps trying.
const WAIT_AT_MOST: Duration = Duration::from_secs(30);

/// A held lock on `auth.json`; released when dropped.
#[derive(Debug)]
pub struct AuthLock {
    dir: PathBuf,
}

impl Drop for AuthLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn is_stale(dir: &Path) -> bool {
    std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > STALE_AFTER)
}

/// Creates the file (`{}`, mode 0600) and its folder (0700) when missing, as Pi does before
/// locking (the lock is taken on the real path, which must exist).
fn ensure_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    if !path.exists() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .or_else(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    std::fs::OpenOptions::new().append(true).open(path)
                } else {
                    Err(e)
                }
            })?;
        if f.metadata()?.len() == 0 {
            f.write_all(b"{}")?;
        }
    }
    Ok(())
}

/// Takes the lock, waiting as Pi's `acquireLockAsync` does.
pub async fn lock(path: &Path) -> io::Result<AuthLock> {
    ensure_file(path)?;
    let real = std::fs::canonicalize(path)?;
    let mut name = real.into_os_string();
    name.push(".lock");
    let dir = PathBuf::from(name);
    let deadline = Instant::now() + WAIT_AT_MOST;
    let mut retry: u32 = 0;
    loop {
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(AuthLock { dir }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if is_stale(&dir) {
                    let _ = std::fs::remove_dir(&dir);
                    continue;
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        "Lock file is already being held",
                    ));
                }
                let base = (10u64 << retry.min(7)).min(1000);
                retry += 1;
                let jitter = u64::from(
                    SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .unwrap_or_default()
                        .subsec_nanos(),
                ) % (base + 1);
                let delay = Duration::from_millis(base + jitter).min(deadline - now);
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads the file as an object (a missing or empty file is `{}`).
pub fn read(path: &Path) -> Result<Map<String, Value>, String> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(e.to_string()),
    };
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    if text.is_empty() {
        return Ok(Map::new());
    }
    match pi_js::parse::parse_js_json(text)? {
        Value::Object(m) => Ok(m),
        _ => Err("Invalid auth.json: expected an object".into()),
    }
}

/// Writes the whole file as Pi does (two-space indentation, keys in order).
pub fn write(path: &Path, data: &Map<String, Value>) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let text = pi_js::json::to_js_string_pretty(data).map_err(io::Error::other)?;
    // Rewritten in place (not renamed over): the lock is on this path, and a mode or ACL an
    // administrator set on the file stays.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// Replaces `provider`'s entry with what `f` returns for the current one (read under the lock);
/// `None` leaves the file as it is. Returns the entry after the change.
pub async fn modify<F, Fut>(path: &Path, provider: &str, f: F) -> Result<Option<Value>, String>
where
    F: FnOnce(Option<Value>) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Value>, String>>,
{
    let _lock = lock(path).await.map_err(|e| e.to_string())?;
    let mut data = read(path)?;
    let current = data.get(provider).cloned();
    match f(current.clone()).await? {
        None => Ok(current),
        Some(next) => {
            data.insert(provider.to_string(), next.clone());
            write(path, &data).map_err(|e| e.to_string())?;
            Ok(Some(next))
        }
    }
}

/// Removes `provider`'s entry under the lock.
pub async fn remove(path: &Path, provider: &str) -> Result<(), String> {
    let _lock = lock(path).await.map_err(|e| e.to_string())?;
    let mut data = read(path)?;
    data.shift_remove(provider);
    write(path, &data).map_err(|e| e.to_string())
}
