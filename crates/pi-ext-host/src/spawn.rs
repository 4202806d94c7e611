//! Starting the Node child: which `node`, the three channel pipes on fds 3, 4 and 5, its own
//! process group, and death with its parent.

use std::io::{PipeReader, PipeWriter};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::{Child, Command};

/// The environment variable naming the Node binary; otherwise `node` is looked up on `PATH`.
pub const NODE_ENV: &str = "PI_NODE";

/// `$PI_NODE`, else the first `node` on `PATH`.
pub fn find_node() -> Option<PathBuf> {
    if let Some(node) = std::env::var_os(NODE_ENV).filter(|n| !n.is_empty()) {
        return Some(PathBuf::from(node));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Our ends of the channel.
pub struct Pipes {
    /// fd 3 in the host: everything it sends.
    pub from_host: PipeReader,
    /// fd 4 in the host: requests and notifications.
    pub to_host: PipeWriter,
    /// fd 5 in the host: answers to its synchronous calls.
    pub sync_replies: PipeWriter,
}

/// Starts `node --no-warnings <host_dir>/main.mjs` in `cwd` with stdin null, stdout and stderr on
/// our stderr, and the channel pipes on fds 3–5. `prepare` sees the command first.
pub fn spawn(
    node: &Path,
    host_dir: &Path,
    cwd: &Path,
    prepare: impl FnOnce(&mut std::process::Command),
) -> std::io::Result<(Child, Pipes)> {
    let (from_host, host_out) = std::io::pipe()?;
    let (host_in, to_host) = std::io::pipe()?;
    let (host_sync, sync_replies) = std::io::pipe()?;
    let child_fds: [OwnedFd; 3] = [host_out.into(), host_in.into(), host_sync.into()];
    let raw: [RawFd; 3] = [
        child_fds[0].as_raw_fd(),
        child_fds[1].as_raw_fd(),
        child_fds[2].as_raw_fd(),
    ];
    let stderr = std::io::stderr().as_fd_owned()?;
    let stderr_again = stderr.try_clone()?;
    let mut command = Command::new(node);
    command
        .arg("--no-warnings")
        .arg(host_dir.join("main.mjs"))
        .current_dir(cwd)
        .env("PI_EXT_HOST", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(stderr))
        .stderr(Stdio::from(stderr_again))
        .process_group(0)
        .kill_on_drop(true);
    prepare(command.as_std_mut());
    install_channel_fds(&mut command, raw);
    let child = command.spawn()?;
    // The child has its copies; ours would keep the pipes open after it dies.
    drop(child_fds);
    Ok((
        child,
        Pipes {
            from_host,
            to_host,
            sync_replies,
        },
    ))
}

trait StderrFd {
    fn as_fd_owned(&self) -> std::io::Result<OwnedFd>;
}

impl StderrFd for std::io::Stderr {
    fn as_fd_owned(&self) -> std::io::Result<OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned()
    }
}

/// Puts `fds` on 3, 4 and 5 in the child, and has the kernel kill the child when we die.
#[allow(unsafe_code)]
fn install_channel_fds(command: &mut Command, fds: [RawFd; 3]) {
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // calls (fcntl, dup2, close, prctl) on descriptors that are open in the child.
    unsafe {
        command.pre_exec(move || {
            // First above the target numbers, so moving one cannot clobber another.
            let mut high = [0; 3];
            for (slot, fd) in high.iter_mut().zip(fds) {
                *slot = libc::fcntl(fd, libc::F_DUPFD, 10);
                if *slot < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (target, fd) in (3..).zip(high) {
                if libc::dup2(fd, target) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
            }
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}
