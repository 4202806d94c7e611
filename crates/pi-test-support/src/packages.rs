//! Package sources for tests, on 127.0.0.1 only: a tiny npm registry (package documents and
//! tarballs made with `tar` from folders the test writes) and git repositories served over
//! git's "dumb" HTTP protocol (static files of a bare repository after `update-server-info`).
//!
//! ```text
//! GET /<name>                    the package document of every published version
//! GET /<name>/-/<file>.tgz       a tarball
//! GET /git/<owner>/<repo>.git/…  files of a bare repository
//! ```
//!
//! npm is pointed at it with `npm_config_registry=<PackageServer::registry()>`; git sources are
//! `http://127.0.0.1:<port>/git/<owner>/<repo>.git`.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The server; stops when dropped.
pub struct PackageServer {
    port: u16,
    root: PathBuf,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
}

impl PackageServer {
    /// Serves the files under `root` (`npm/` and `git/` are created).
    pub fn start(root: &Path) -> std::io::Result<PackageServer> {
        std::fs::create_dir_all(root.join("npm"))?;
        std::fs::create_dir_all(root.join("git"))?;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let (root_c, stop_c, requests_c) = (root.to_path_buf(), stop.clone(), requests.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop_c.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                requests_c.fetch_add(1, Ordering::SeqCst);
                let root = root_c.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &root, port);
                });
            }
        });
        Ok(PackageServer {
            port,
            root: root.to_path_buf(),
            stop,
            requests,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The registry URL for `npm_config_registry`.
    pub fn registry(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// How many connections were served.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Publishes the package in `dir` (its `package.json` names it and its version).
    pub fn publish(&self, dir: &Path) -> Result<(), String> {
        let manifest =
            std::fs::read_to_string(dir.join("package.json")).map_err(|e| e.to_string())?;
        let pkg: serde_json::Value = serde_json::from_str(&manifest).map_err(|e| e.to_string())?;
        let name = pkg["name"].as_str().ok_or("package.json has no name")?;
        let version = pkg["version"]
            .as_str()
            .ok_or("package.json has no version")?;
        let folder = self.root.join("npm").join(name);
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        // npm expects every entry under `package/`.
        let stage = self
            .root
            .join(format!("stage-{}-{version}", name.replace('/', "-")));
        let _ = std::fs::remove_dir_all(&stage);
        copy_dir(dir, &stage.join("package")).map_err(|e| e.to_string())?;
        let tarball = folder.join(format!("{}-{version}.tgz", base_name(name)));
        run(Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&stage)
            .arg("package"))?;
        let _ = std::fs::remove_dir_all(&stage);
        std::fs::write(folder.join(format!("{version}.json")), manifest).map_err(|e| e.to_string())
    }

    /// Withdraws a published version.
    pub fn unpublish(&self, name: &str, version: &str) {
        let folder = self.root.join("npm").join(name);
        let _ = std::fs::remove_file(folder.join(format!("{version}.json")));
        let _ = std::fs::remove_file(folder.join(format!("{}-{version}.tgz", base_name(name))));
    }

    /// Creates `<owner>/<repo>.git` from `files` (one commit on `main`, tagged `v1`) and returns
    /// its URL.
    pub fn git_repo(
        &self,
        owner: &str,
        repo: &str,
        files: &[(&str, &str)],
    ) -> Result<String, String> {
        let work = self.root.join("work").join(owner).join(repo);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        git(&work, &["init", "-q", "-b", "main"])?;
        write_files(&work, files)?;
        git(&work, &["add", "-A"])?;
        git(&work, &["commit", "-q", "-m", "v1"])?;
        git(&work, &["tag", "v1"])?;
        let bare = self
            .root
            .join("git")
            .join(owner)
            .join(format!("{repo}.git"));
        let _ = std::fs::remove_dir_all(&bare);
        std::fs::create_dir_all(bare.parent().unwrap_or(&bare)).map_err(|e| e.to_string())?;
        let bare_s = bare.to_string_lossy().into_owned();
        git(&work, &["clone", "-q", "--bare", ".", &bare_s])?;
        git(&bare, &["update-server-info"])?;
        git(&work, &["remote", "add", "origin", &bare_s])?;
        Ok(self.git_url(owner, repo))
    }

    /// Commits `files` on `main` of a repository made by [`PackageServer::git_repo`]; returns
    /// the new commit.
    pub fn git_commit(
        &self,
        owner: &str,
        repo: &str,
        files: &[(&str, &str)],
        message: &str,
    ) -> Result<String, String> {
        let work = self.root.join("work").join(owner).join(repo);
        write_files(&work, files)?;
        git(&work, &["add", "-A"])?;
        git(&work, &["commit", "-q", "-m", message])?;
        git(&work, &["push", "-q", "origin", "main"])?;
        let bare = self
            .root
            .join("git")
            .join(owner)
            .join(format!("{repo}.git"));
        git(&bare, &["update-server-info"])?;
        git(&work, &["rev-parse", "HEAD"])
    }

    pub fn git_url(&self, owner: &str, repo: &str) -> String {
        format!("http://127.0.0.1:{}/git/{owner}/{repo}.git", self.port)
    }
}

impl Drop for PackageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// `@scope/name` → `name` (npm's tarball file names drop the scope).
fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<(), String> {
    for (rel, text) in files {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    run(Command::new("git")
        .args([
            "-c",
            "user.name=pi test",
            "-c",
            "user.email=pi@test.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1"))
}

/// One request, answered and closed.
fn serve(conn: TcpStream, root: &Path, port: u16) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let path = path.split('?').next().unwrap_or("").to_string();
    let (status, kind, body) = respond(&decode(&path), root, port);
    let mut conn = conn;
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    conn.write_all(&body)?;
    conn.flush()
}

fn decode(path: &str) -> String {
    path.replace("%2f", "/")
        .replace("%2F", "/")
        .replace("%40", "@")
}

fn respond(path: &str, root: &Path, port: u16) -> (&'static str, &'static str, Vec<u8>) {
    let not_found = || {
        (
            "404 Not Found",
            "application/json",
            br#"{"error":"not found"}"#.to_vec(),
        )
    };
    let rel = path.trim_start_matches('/');
    if rel.split('/').any(|s| s == "..") {
        return not_found();
    }
    if let Some(git_path) = rel.strip_prefix("git/") {
        let file = root.join("git").join(git_path);
        return match std::fs::read(&file) {
            Ok(bytes) if file.is_file() => ("200 OK", "application/octet-stream", bytes),
            _ => not_found(),
        };
    }
    if let Some((name, file)) = rel.split_once("/-/") {
        let tarball = root.join("npm").join(name).join(file);
        return match std::fs::read(tarball) {
            Ok(bytes) => ("200 OK", "application/octet-stream", bytes),
            Err(_) => not_found(),
        };
    }
    let folder = root.join("npm").join(rel);
    let Ok(entries) = std::fs::read_dir(&folder) else {
        return not_found();
    };
    let mut versions = serde_json::Map::new();
    let mut latest: Option<(Vec<u64>, String)> = None;
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(version) = file.strip_suffix(".json") else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
            continue;
        };
        doc["dist"] = serde_json::json!({
            "tarball": format!("http://127.0.0.1:{port}/{rel}/-/{}-{version}.tgz", base_name(rel)),
        });
        let key: Vec<u64> = version
            .split(['.', '-'])
            .take(3)
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        if latest.as_ref().is_none_or(|(k, _)| key > *k) {
            latest = Some((key, version.to_string()));
        }
        versions.insert(version.to_string(), doc);
    }
    let Some((_, latest)) = latest else {
        return not_found();
    };
    let doc = serde_json::json!({
        "name": rel,
        "dist-tags": {"latest": latest},
        "versions": versions,
    });
    ("200 OK", "application/json", doc.to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn serves_package_documents_and_tarballs() {
        let tmp = crate::TempDir::new();
        let server = PackageServer::start(&tmp.path().join("srv")).unwrap();
        tmp.write(
            "pkg/package.json",
            r#"{"name":"@s/demo","version":"1.2.0"}"#,
        );
        tmp.write("pkg/index.js", "module.exports = 1;\n");
        server.publish(&tmp.path().join("pkg")).unwrap();
        let (status, _, body) = respond("/@s/demo", &tmp.path().join("srv"), server.port());
        assert_eq!(status, "200 OK");
        let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["dist-tags"]["latest"], "1.2.0");
        let url = doc["versions"]["1.2.0"]["dist"]["tarball"]
            .as_str()
            .unwrap();
        assert!(url.ends_with("/@s/demo/-/demo-1.2.0.tgz"), "{url}");
        let (status, _, tgz) = respond("/@s/demo/-/demo-1.2.0.tgz", &tmp.path().join("srv"), 0);
        assert_eq!(status, "200 OK");
        assert_eq!(&tgz[..2], &[0x1f, 0x8b]);
        assert_eq!(
            respond("/nothing", &tmp.path().join("srv"), 0).0,
            "404 Not Found"
        );
    }
}
