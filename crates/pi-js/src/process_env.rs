//! `process.env` as extensions leave it. In Pi, extensions share the agent's process, so a
//! variable an extension sets reaches the bash tool, user commands, MCP servers and credential
//! lookups. Here extensions run in a separate host, which reports its changes; they are kept as an
//! overlay over this process's real environment (never written into it: `setenv` is unsound
//! while other threads read the environment).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::RwLock;

/// Variable name → its value, or `None` when an extension deleted it.
static OVERLAY: RwLock<BTreeMap<String, Option<String>>> = RwLock::new(BTreeMap::new());

fn read() -> std::sync::RwLockReadGuard<'static, BTreeMap<String, Option<String>>> {
    OVERLAY
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Records variables set and deleted by extensions.
pub fn apply(
    set: impl IntoIterator<Item = (String, String)>,
    unset: impl IntoIterator<Item = String>,
) {
    let mut overlay = OVERLAY
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (k, v) in set {
        overlay.insert(k, Some(v));
    }
    for k in unset {
        overlay.insert(k, None);
    }
}

/// Whether any extension changed the environment (the common case is not).
pub fn is_changed() -> bool {
    !read().is_empty()
}

/// The process environment with the extensions' changes, in the process's order (new variables
/// last).
pub fn vars_os() -> Vec<(OsString, OsString)> {
    let overlay = read();
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter_map(
            |(k, v)| match k.to_str().and_then(|name| overlay.get(name)) {
                None => Some((k, v)),
                Some(Some(value)) => Some((k, OsString::from(value))),
                Some(None) => None,
            },
        )
        .collect();
    for (k, v) in overlay.iter() {
        if let Some(v) = v
            && std::env::var_os(k).is_none()
        {
            vars.push((OsString::from(k), OsString::from(v)));
        }
    }
    vars
}

/// One variable as extensions see it.
pub fn var(name: &str) -> Option<String> {
    match read().get(name) {
        Some(v) => v.clone(),
        None => std::env::var(name).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_sets_replaces_and_deletes() {
        let path = std::env::var_os("PATH");
        apply(
            [("PI_JS_ENV_TEST_NEW".into(), "1".into())],
            ["PI_JS_ENV_TEST_GONE".into()],
        );
        assert_eq!(var("PI_JS_ENV_TEST_NEW").as_deref(), Some("1"));
        assert_eq!(var("PI_JS_ENV_TEST_GONE"), None);
        let vars = vars_os();
        assert!(
            vars.iter()
                .any(|(k, v)| k == "PI_JS_ENV_TEST_NEW" && v == "1")
        );
        assert_eq!(
            vars.iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone()),
            path
        );
        apply([], ["PI_JS_ENV_TEST_NEW".into()]);
        assert_eq!(var("PI_JS_ENV_TEST_NEW"), None);
        assert!(is_changed());
    }
}
