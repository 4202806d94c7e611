//! The relay floor: the least any agent must do to relay a streamed delta, as a calibration
//! of the stream figures. Started as `pi-bench` with [`PORT_ENV`] set, it answers `get_state`,
//! and for each `prompt` POSTs to the mock on that port and writes one `text_delta`-shaped
//! line per text-delta SSE event (a fixed line: no JSON work), then `agent_settled`. One thread, blocking
//! I/O, unbuffered writes: just the syscalls and wake-ups a relay cannot avoid.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

pub const PORT_ENV: &str = "PI_BENCH_RELAY_PORT";

const DELTA: &[u8] = b"{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"w\"}}\n";

pub fn run(port: &str) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let id = line
            .split("\"id\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("");
        let ok = if line.contains("\"type\":\"get_state\"") {
            writeln!(
                out,
                "{{\"id\":\"{id}\",\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{{}}}}"
            )
            .is_ok()
        } else if line.contains("\"type\":\"prompt\"") {
            relay(port, &mut out).is_ok()
                && out
                    .write_all(b"{\"type\":\"agent_settled\",\"aborted\":false}\n")
                    .is_ok()
        } else {
            true
        };
        if !ok || out.flush().is_err() {
            return;
        }
    }
}

fn relay(port: &str, out: &mut impl Write) -> std::io::Result<()> {
    let mut sock = TcpStream::connect(format!("127.0.0.1:{port}"))?;
    sock.set_nodelay(true)?;
    let body = r#"{"model":"mock-gpt","stream":true,"messages":[]}"#;
    write!(
        sock,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut r = BufReader::with_capacity(1 << 16, sock);
    let mut line = String::new();
    // Response head.
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
    }
    // Chunked body: one SSE event per chunk.
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
        if size == 0 {
            return Ok(());
        }
        let mut chunk = vec![0; size + 2];
        r.read_exact(&mut chunk)?;
        // Text deltas only (not the finish, usage and [DONE] events).
        if chunk.windows(10).any(|w| w == b"\"content\":") {
            out.write_all(DELTA)?;
            out.flush()?;
        }
    }
}
