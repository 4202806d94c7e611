//! Configuration values (`apiKey`, header values, auth.json keys) as `resolve-config-value.js`
//! reads them: `!command` runs the rest through `/bin/sh -c` (10 s timeout, trimmed stdout, empty
//! output or failure = unresolved); anything else is a template where `$NAME` / `${NAME}` insert
//! an environment variable (unset or empty = the whole value is unresolved), `$$` is `$`, `$!` is
//! `!`, and every other character is literal.

use super::env::Env;
use std::collections::HashMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Extra variables consulted before the environment (a credential's `env`).
pub(crate) type ExplicitEnv = serde_json::Map<String, serde_json::Value>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Literal(String),
    Env(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConfigValue<'a> {
    /// The command text after `!`.
    Command(&'a str),
    Template(Vec<Part>),
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn push_literal(parts: &mut Vec<Part>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Part::Literal(last)) = parts.last_mut() {
        last.push_str(text);
    } else {
        parts.push(Part::Literal(text.to_string()));
    }
}

pub(crate) fn parse(config: &str) -> ConfigValue<'_> {
    if let Some(command) = config.strip_prefix('!') {
        return ConfigValue::Command(command);
    }
    let mut parts = Vec::new();
    let mut rest = config;
    while let Some(dollar) = rest.find('$') {
        push_literal(&mut parts, &rest[..dollar]);
        let after = &rest[dollar + 1..];
        match after.chars().next() {
            Some(c @ ('$' | '!')) => {
                push_literal(&mut parts, &c.to_string());
                rest = &after[1..];
            }
            Some('{') => match after[1..].find('}') {
                None => {
                    push_literal(&mut parts, "$");
                    rest = after;
                }
                Some(close) => {
                    let name = &after[1..1 + close];
                    let valid = name.starts_with(is_name_start) && name.chars().all(is_name_char);
                    if valid {
                        parts.push(Part::Env(name.to_string()));
                    } else {
                        push_literal(&mut parts, &rest[dollar..dollar + 1 + close + 2]);
                    }
                    rest = &after[close + 2..];
                }
            },
            Some(c) if is_name_start(c) => {
                let len = after.find(|c| !is_name_char(c)).unwrap_or(after.len());
                parts.push(Part::Env(after[..len].to_string()));
                rest = &after[len..];
            }
            _ => {
                push_literal(&mut parts, "$");
                rest = after;
            }
        }
    }
    push_literal(&mut parts, rest);
    ConfigValue::Template(parts)
}

pub(crate) fn is_command(config: &str) -> bool {
    config.starts_with('!')
}

/// Variables a template refers to, first occurrence order, no duplicates.
pub(crate) fn env_var_names(config: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let ConfigValue::Template(parts) = parse(config) {
        for part in parts {
            if let Part::Env(name) = part
                && !names.contains(&name)
            {
                names.push(name);
            }
        }
    }
    names
}

/// `env?.[name] || process.env[name] || undefined`.
fn lookup<'a>(name: &str, explicit: Option<&'a ExplicitEnv>, env: &'a Env) -> Option<&'a str> {
    explicit
        .and_then(|e| e.get(name))
        .and_then(|v| v.as_str())
        .filter(|v| !v.is_empty())
        .or_else(|| env.non_empty(name))
}

fn resolve_template(parts: &[Part], explicit: Option<&ExplicitEnv>, env: &Env) -> Option<String> {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Literal(text) => out.push_str(text),
            Part::Env(name) => out.push_str(lookup(name, explicit, env)?),
        }
    }
    Some(out)
}

/// Whether every variable the value refers to is set (commands count as configured).
pub(crate) fn missing_env_vars(
    config: &str,
    explicit: Option<&ExplicitEnv>,
    env: &Env,
) -> Vec<String> {
    env_var_names(config)
        .into_iter()
        .filter(|name| lookup(name, explicit, env).is_none())
        .collect()
}

/// Runs `command` like Node's `execSync` with a 10 s timeout: `/bin/sh -c`, stdin and stderr
/// ignored, the environment `env`. `None` when it fails, times out or prints only whitespace.
pub(crate) fn run_command(command: &str, env: &Env) -> Option<String> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .env_clear()
        .envs(env.iter())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // Read on a thread so a chatty command cannot block on a full pipe while we wait.
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let output = reader.join().ok()?.ok()?;
    if !status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output);
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// Results of `!command` values for the registry's lifetime (Pi caches auth.json commands per
/// process).
#[derive(Debug, Default)]
pub(crate) struct CommandCache(Mutex<HashMap<String, Option<String>>>);

impl CommandCache {
    pub(crate) fn run(&self, command: &str, env: &Env) -> Option<String> {
        if let Ok(cache) = self.0.lock()
            && let Some(hit) = cache.get(command)
        {
            return hit.clone();
        }
        let result = run_command(command, env);
        if let Ok(mut cache) = self.0.lock() {
            cache.insert(command.to_string(), result.clone());
        }
        result
    }
}

/// `resolveConfigValue` (cached commands), used for auth.json keys.
pub(crate) fn resolve_cached(
    config: &str,
    explicit: Option<&ExplicitEnv>,
    env: &Env,
    cache: &CommandCache,
) -> Option<String> {
    match parse(config) {
        ConfigValue::Command(command) => cache.run(command, env),
        ConfigValue::Template(parts) => resolve_template(&parts, explicit, env),
    }
}

/// `resolveConfigValueOrThrow`: uncached; the error is Pi's message for `description`.
pub(crate) fn resolve_or_error(
    config: &str,
    description: &str,
    explicit: Option<&ExplicitEnv>,
    env: &Env,
) -> Result<String, String> {
    match parse(config) {
        ConfigValue::Command(command) => run_command(command, env).ok_or_else(|| {
            format!("Failed to resolve {description} from shell command: {command}")
        }),
        ConfigValue::Template(parts) => {
            if let Some(value) = resolve_template(&parts, explicit, env) {
                return Ok(value);
            }
            let missing = missing_env_vars(config, explicit, env);
            Err(match missing.as_slice() {
                [one] => {
                    format!("Failed to resolve {description} from environment variable: {one}")
                }
                [] => format!("Failed to resolve {description}"),
                many => format!(
                    "Failed to resolve {description} from environment variables: {}",
                    many.join(", ")
                ),
            })
        }
    }
}

/// `resolveHeadersOrThrow`: every header must resolve; `None` for no headers.
pub(crate) fn resolve_headers_or_error(
    headers: Option<&[(String, String)]>,
    description: &str,
    explicit: Option<&ExplicitEnv>,
    env: &Env,
) -> Result<Option<Vec<(String, String)>>, String> {
    let Some(headers) = headers else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let what = format!("{description} header \"{name}\"");
        out.push((name.clone(), resolve_or_error(value, &what, explicit, env)?));
    }
    Ok((!out.is_empty()).then_some(out))
}

/// `resolveConfigValueOrThrow` against the process environment, for other crates' config
/// values (MCP servers' `env`, `headers` and `oauth.clientSecret`).
pub fn resolve_config_value(config: &str, description: &str) -> Result<String, String> {
    resolve_or_error(config, description, None, &Env::from_process())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env::from_pairs([("KEY", "secret"), ("EMPTY", ""), ("A", "1")])
    }

    #[test]
    fn templates_follow_pi_syntax() {
        let e = env();
        let r = |s: &str| resolve_or_error(s, "API key", None, &e);
        assert_eq!(r("$KEY"), Ok("secret".into()));
        assert_eq!(r("${KEY}-x"), Ok("secret-x".into()));
        assert_eq!(r("pre$KEY.post"), Ok("presecret.post".into()));
        assert_eq!(r("KEY"), Ok("KEY".into()));
        assert_eq!(r("$$KEY"), Ok("$KEY".into()));
        assert_eq!(r("$!x"), Ok("!x".into()));
        assert_eq!(r("a$"), Ok("a$".into()));
        assert_eq!(r("${1X}"), Ok("${1X}".into()));
        assert_eq!(r("${KEY"), Ok("${KEY".into()));
        assert_eq!(r("$1"), Ok("$1".into()));
        assert_eq!(
            r("$EMPTY"),
            Err("Failed to resolve API key from environment variable: EMPTY".into())
        );
        assert_eq!(
            r("$NOPE${EMPTY}$A"),
            Err("Failed to resolve API key from environment variables: NOPE, EMPTY".into())
        );
    }

    #[test]
    fn explicit_env_wins_and_empty_falls_through() {
        let e = env();
        let mut explicit = ExplicitEnv::new();
        explicit.insert("KEY".into(), "override".into());
        explicit.insert("A".into(), "".into());
        assert_eq!(
            resolve_or_error("$KEY$A", "x", Some(&explicit), &e),
            Ok("override1".into())
        );
    }

    #[test]
    fn env_var_names_are_unique_and_ordered() {
        assert_eq!(env_var_names("$B${A}$B!"), vec!["B", "A"]);
        assert!(env_var_names("!echo $X").is_empty());
    }

    #[test]
    fn commands_run_through_sh_and_trim() {
        let e = Env::from_pairs([("PATH", "/usr/bin:/bin"), ("V", "fromenv")]);
        assert_eq!(
            resolve_or_error("!echo \"  $V  \"", "k", None, &e),
            Ok("fromenv".into())
        );
        assert_eq!(
            resolve_or_error("!exit 3", "API key for provider \"p\"", None, &e),
            Err("Failed to resolve API key for provider \"p\" from shell command: exit 3".into())
        );
        assert_eq!(run_command("printf '   '", &e), None);
    }

    #[test]
    fn cache_runs_a_command_once() {
        let dir = std::env::temp_dir().join(format!("pi-ai-cmd-cache-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let e = Env::from_pairs([("PATH", "/usr/bin:/bin")]);
        let cmd = format!("echo x >> {0}; wc -l < {0}", dir.display());
        let cache = CommandCache::default();
        assert_eq!(cache.run(&cmd, &e), Some("1".into()));
        assert_eq!(cache.run(&cmd, &e), Some("1".into()));
        let _ = std::fs::remove_file(&dir);
    }
}
