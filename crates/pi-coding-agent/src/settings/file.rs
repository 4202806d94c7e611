//! Reading one settings file into a layer, and writing single keys back the way Pi does.
//!
//! Reading: a missing or empty file is an empty layer; the text loses a leading BOM and is parsed
//! like `JSON.parse` (so a broken file yields V8's exact message), then migrated. Pi then runs
//! `"queueMode" in settings`, which throws for `null` and other primitives; we report the same
//! message.
//!
//! Writing (`persistScopedSettings`): under the file lock, re-read the file as it is now, replace
//! only the keys this process changed (for nested keys such as `compaction.enabled`, only that
//! member), and write `JSON.stringify(settings, null, 2)` without a trailing newline. The other
//! keys keep their order and values; formatting is normalized to two spaces, as in Pi.

use super::lock::FileLock;
use super::merge::migrate;
use pi_js::json::to_js_string_pretty;
use pi_js::parse::parse_js_json;
use serde_json::{Map, Value};
use std::io;
use std::path::Path;

/// One changed key, as Pi marks it modified.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyUpdate {
    /// A top-level key (`steeringMode`) gets this value.
    Top { key: String, value: Value },
    /// One member of an object key (`compaction.enabled`); the object's other members stay.
    Nested {
        key: String,
        member: String,
        value: Value,
    },
}

/// Reads the settings layer in `path`. `Err` is the message Pi reports after
/// `Invalid settings file <path>: `.
pub fn read_layer(path: &Path) -> Result<Map<String, Value>, String> {
    match read_text(path)? {
        None => Ok(Map::new()),
        Some(text) => parse_layer(&text),
    }
}

/// Parses settings text (a BOM allowed) into a migrated layer.
pub fn parse_layer(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let value = parse_js_json(text)?;
    let mut layer = match value {
        Value::Object(m) => m,
        // An array is an object with index keys to JavaScript, and passes Pi's checks.
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        other => {
            return Err(format!(
                "Cannot use 'in' operator to search for 'queueMode' in {}",
                js_string(&other)
            ));
        }
    };
    migrate(&mut layer);
    Ok(layer)
}

/// The file's text, `None` when it does not exist or is empty (Pi's `if (!content)`).
fn read_text(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.is_empty() => Ok(None),
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(node_io_message(&e, path)),
    }
}

/// Writes `updates` into the settings file at `path` (created with its folder if missing),
/// keeping every other key as the file has it now.
pub fn persist(path: &Path, updates: &[KeyUpdate]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| node_io_message(&e, dir))?;
    }
    let _lock = FileLock::acquire(path).map_err(|e| e.to_string())?;
    let mut settings = match read_text(path)? {
        None => Map::new(),
        Some(text) => parse_layer(&text)?,
    };
    for update in updates {
        match update {
            KeyUpdate::Top { key, value } => {
                settings.insert(key.clone(), value.clone());
            }
            KeyUpdate::Nested { key, member, value } => {
                let mut nested = match settings.get(key) {
                    Some(Value::Object(m)) => m.clone(),
                    _ => Map::new(),
                };
                nested.insert(member.clone(), value.clone());
                settings.insert(key.clone(), Value::Object(nested));
            }
        }
    }
    let text = to_js_string_pretty(&settings).map_err(|e| e.to_string())?;
    write_preserving(path, &text).map_err(|e| node_io_message(&e, path))
}

/// Replaces the file's content through a temporary sibling and a rename, so a crash never
/// leaves half a file. A symlinked settings file (dotfile repos) stays a symlink: we write its
/// target. The file keeps its permissions.
fn write_preserving(path: &Path, text: &str) -> io::Result<()> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut tmp_name = target.as_os_str().to_owned();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp_name);
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(&target) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// An I/O error in the words Node uses (`EACCES: permission denied, open '<path>'`).
pub fn node_io_message(e: &io::Error, path: &Path) -> String {
    let p = path.display();
    match e.kind() {
        io::ErrorKind::PermissionDenied => format!("EACCES: permission denied, open '{p}'"),
        io::ErrorKind::IsADirectory => "EISDIR: illegal operation on a directory, read".into(),
        io::ErrorKind::NotFound => format!("ENOENT: no such file or directory, open '{p}'"),
        _ => format!("{e}, open '{p}'"),
    }
}

/// JavaScript's `String(value)` for a JSON value.
pub fn js_string(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let mut s = String::new();
            pi_js::json::push_js_number(&mut s, n.as_f64().unwrap_or(0.0));
            s
        }
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_test_support::TempDir;
    use serde_json::json;

    #[test]
    fn read_errors_carry_v8_messages() {
        let tmp = TempDir::new();
        let p = tmp.write(
            "settings.json",
            "{\n  \"steeringMode\": \"all\",\n  oops\n}\n",
        );
        assert_eq!(
            read_layer(&p).unwrap_err(),
            "Expected double-quoted property name in JSON at position 29 (line 3 column 3)"
        );
        tmp.write("settings.json", "null");
        assert_eq!(
            read_layer(&p).unwrap_err(),
            "Cannot use 'in' operator to search for 'queueMode' in null"
        );
        tmp.write("settings.json", "\u{FEFF}{\"queueMode\": \"all\"}");
        assert_eq!(
            Value::Object(read_layer(&p).unwrap()),
            json!({"steeringMode": "all"})
        );
        tmp.write("settings.json", "");
        assert!(read_layer(&p).unwrap().is_empty());
        assert!(
            read_layer(&tmp.path().join("missing.json"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn persist_keeps_other_keys_and_order() {
        // Recorded from Pi: tests/fixtures/resources/persist/expected/existing_file.json.
        let tmp = TempDir::new();
        let p = tmp.write(
            "agent/settings.json",
            "{\n    \"zeta\": 1,\n    \"compaction\": {\"reserveTokens\": 1000},\n    \"steeringMode\": \"one-at-a-time\",\n    \"defaultModel\": \"x\"\n}",
        );
        let top = |k: &str, v: Value| KeyUpdate::Top {
            key: k.into(),
            value: v,
        };
        let nested = |k: &str, m: &str, v: Value| KeyUpdate::Nested {
            key: k.into(),
            member: m.into(),
            value: v,
        };
        persist(&p, &[top("steeringMode", json!("all"))]).unwrap();
        persist(&p, &[top("followUpMode", json!("all"))]).unwrap();
        persist(&p, &[nested("compaction", "enabled", json!(false))]).unwrap();
        persist(&p, &[nested("retry", "enabled", json!(false))]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\n  \"zeta\": 1,\n  \"compaction\": {\n    \"reserveTokens\": 1000,\n    \"enabled\": false\n  },\n  \"steeringMode\": \"all\",\n  \"defaultModel\": \"x\",\n  \"followUpMode\": \"all\",\n  \"retry\": {\n    \"enabled\": false\n  }\n}"
        );
        assert!(!tmp.path().join("agent/settings.json.lock").exists());
    }

    #[test]
    fn persist_creates_the_file() {
        let tmp = TempDir::new();
        let p = tmp.path().join("new/agent/settings.json");
        persist(
            &p,
            &[KeyUpdate::Nested {
                key: "retry".into(),
                member: "enabled".into(),
                value: json!(true),
            }],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "{\n  \"retry\": {\n    \"enabled\": true\n  }\n}"
        );
    }

    #[test]
    fn persist_refuses_a_broken_file() {
        let tmp = TempDir::new();
        let p = tmp.write("settings.json", "{broken");
        assert!(persist(&p, &[]).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{broken");
    }

    #[test]
    fn js_string_of_values() {
        assert_eq!(js_string(&json!([1, null, "a", [2, 3]])), "1,,a,2,3");
        assert_eq!(js_string(&json!({"a": 1})), "[object Object]");
        assert_eq!(js_string(&json!(1.5)), "1.5");
        assert_eq!(js_string(&json!(1e21)), "1e+21");
    }
}
