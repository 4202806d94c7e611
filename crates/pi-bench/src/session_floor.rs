//! The session-open floor: the least any agent must do to answer `get_messages` for a session
//! file, as a calibration of the session-open figures. Whatever an agent does to read and check
//! the file, its answer (about the size of the file) has to go through the pipe to the client,
//! and that transfer alone is what this measures: started as `pi-bench` with [`ENV`] naming a
//! prepared copy of the answer ([`prepare`], made before the measurement), it answers every
//! command with a small success response and `get_messages` by handing that copy from the page
//! cache to stdout with `sendfile` (no copy through the process, no parsing, no checks). No
//! agent can answer faster than this on the same machine with the same client.

use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

pub const ENV: &str = "PI_BENCH_SESSION_FLOOR";

/// Writes the floor's `get_messages` answer (id `m`) for `session` to `dst`: the lines after
/// the header as the elements of one array, a response line of the size of the agents' ones.
pub fn prepare(session: &Path, dst: &Path) -> Result<(), String> {
    let mut bytes = std::fs::read(session).map_err(|e| format!("{}: {e}", session.display()))?;
    let start = bytes
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| i + 1);
    let mut end = bytes.len();
    while end > start && bytes[end - 1] == b'\n' {
        end -= 1;
    }
    let body = &mut bytes[start..end];
    for b in body.iter_mut() {
        if *b == b'\n' {
            *b = b',';
        }
    }
    let mut line = Vec::with_capacity(body.len() + 128);
    line.extend_from_slice(
        br#"{"id":"m","type":"response","command":"get_messages","success":true,"data":{"messages":["#,
    );
    line.extend_from_slice(body);
    line.extend_from_slice(b"]}}\n");
    std::fs::write(dst, line).map_err(|e| format!("{}: {e}", dst.display()))
}

pub fn run(answer: &str) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let field = |name: &str| pi_bench::text::string_field(&line, name).unwrap_or("");
        let (id, command) = (field("id"), field("type"));
        let ok = if command == "get_messages" {
            out.flush().and_then(|()| send_file(answer))
        } else {
            writeln!(
                out,
                "{{\"id\":\"{id}\",\"type\":\"response\",\"command\":\"{command}\",\"success\":true,\"data\":{{}}}}"
            )
        };
        if ok.and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// `path` to stdout through `sendfile(2)`.
fn send_file(path: &str) -> std::io::Result<()> {
    let file = std::fs::File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
    let mut offset: libc::off_t = 0;
    let mut sent = 0usize;
    while sent < len {
        // SAFETY: sendfile(2) with two open descriptors and a pointer to a local offset.
        #[allow(unsafe_code)]
        let n = unsafe { libc::sendfile(1, file.as_raw_fd(), &mut offset, len - sent) };
        if n <= 0 {
            return Err(std::io::Error::last_os_error());
        }
        sent += n as usize;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_prepared_answer_is_one_line_of_the_entries_after_the_header() {
        let dir = pi_test_support::TempDir::new();
        let session = dir.path().join("s.jsonl");
        let answer = dir.path().join("a.jsonl");
        std::fs::write(
            &session,
            "{\"type\":\"session\"}\n{\"a\":1}\n{\"b\":\"x\"}\n\n",
        )
        .unwrap();
        prepare(&session, &answer).unwrap();
        let text = std::fs::read_to_string(&answer).unwrap();
        assert_eq!(
            text,
            "{\"id\":\"m\",\"type\":\"response\",\"command\":\"get_messages\",\"success\":true,\
             \"data\":{\"messages\":[{\"a\":1},{\"b\":\"x\"}]}}\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["data"]["messages"].as_array().map(Vec::len), Some(2));
    }
}
