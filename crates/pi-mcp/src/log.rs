//! `mcp.log`: servers' `notifications/message` lines, appended as
//! `<time> [<server>] <level> <logger>: <message>`, moved to `mcp.log.1` past 5 MB. Best effort:
//! a write error never reaches a tool call.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

const MAX_LOG_BYTES: u64 = 5 * 1024 * 1024;

pub struct ServerLog {
    path: PathBuf,
    /// Bytes in the file as we last knew it (`None` before the first write).
    size: Mutex<Option<u64>>,
}

/// One log line (with its newline); continuation lines are indented.
pub fn format_line(server: &str, params: &Value, now_iso: &str) -> String {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .unwrap_or("info");
    let logger = match params.get("logger").and_then(Value::as_str) {
        Some(l) if !l.is_empty() => format!(" {l}:"),
        _ => String::new(),
    };
    let data = match params {
        Value::Object(m) => m.get("data").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let text = match &data {
        Value::String(s) => s.clone(),
        other => pi_js::json::to_js_string(other).unwrap_or_default(),
    };
    let text = text.replace("\r\n", "\n").replace('\n', "\n    ");
    format!("{now_iso} [{server}] {level}{logger} {text}\n")
}

impl ServerLog {
    pub fn new(path: PathBuf) -> ServerLog {
        ServerLog {
            path,
            size: Mutex::new(None),
        }
    }

    fn current_size(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    pub fn write(&self, server: &str, params: &Value) {
        let line = format_line(server, params, &pi_js::time::now_iso());
        let mut size = self.size.lock().unwrap_or_else(|p| p.into_inner());
        if size.is_none() {
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            *size = Some(self.current_size());
        }
        if size.unwrap_or(0) > MAX_LOG_BYTES {
            // Another process may have rotated it already.
            if self.current_size() > MAX_LOG_BYTES {
                let mut rotated = self.path.clone().into_os_string();
                rotated.push(".1");
                let _ = std::fs::rename(&self.path, rotated);
            }
            *size = Some(self.current_size());
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if written.is_ok() {
            *size = Some(size.unwrap_or(0) + line.len() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_name_server_level_and_logger() {
        let t = "2026-01-01T00:00:00.000Z";
        assert_eq!(
            format_line(
                "s",
                &json!({"level": "warning", "logger": "db", "data": "a\nb"}),
                t
            ),
            "2026-01-01T00:00:00.000Z [s] warning db: a\n    b\n"
        );
        assert_eq!(
            format_line("s", &json!({"data": {"k": 1}}), t),
            "2026-01-01T00:00:00.000Z [s] info {\"k\":1}\n"
        );
    }

    #[test]
    fn the_log_rotates_past_five_megabytes() {
        let dir = pi_test_support::TempDir::new();
        let path = dir.path().join("mcp.log");
        std::fs::write(&path, vec![b'x'; (MAX_LOG_BYTES + 1) as usize]).ok();
        let log = ServerLog::new(path.clone());
        log.write("s", &json!({"data": "new"}));
        assert!(dir.path().join("mcp.log.1").is_file());
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(text.ends_with("[s] info new\n"), "{text}");
    }
}
