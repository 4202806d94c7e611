//! Which shell runs commands and with which environment.

use crate::paths::expand_path;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The variables the bash tool sets from the session; inherited values are removed first.
pub const SESSION_ENV_VARS: [&str; 5] = [
    "PI_SESSION_ID",
    "PI_SESSION_FILE",
    "PI_PROVIDER",
    "PI_MODEL",
    "PI_REASONING_LEVEL",
];

/// The shell: the `shellPath` setting (which must exist), else `/bin/bash`, else `bash` on
/// `PATH`, else `sh`. The error is Pi's text.
pub fn resolve_shell(shell_path: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(custom) = shell_path {
        let expanded = PathBuf::from(expand_path(&custom.to_string_lossy()));
        if std::fs::metadata(&expanded).is_ok() {
            return Ok(expanded);
        }
        return Err(format!("Custom shell path not found: {}", custom.display()));
    }
    let bin_bash = Path::new("/bin/bash");
    if std::fs::metadata(bin_bash).is_ok() {
        return Ok(bin_bash.to_path_buf());
    }
    if let Some(found) = find_on_path("bash") {
        return Ok(found);
    }
    Ok(PathBuf::from("sh"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The environment commands start from: `base` (or this process's environment, as extensions
/// left it) with
/// `<agent dir>/bin` put first on `PATH` unless it is already there, and `PI_CODING_AGENT=true`
/// (which Pi sets on its own process at startup).
pub fn shell_env(
    base: Option<&[(OsString, OsString)]>,
    bin_dir: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = match base {
        Some(vars) => vars.to_vec(),
        None => pi_js::process_env::vars_os(),
    };
    let path_key = env
        .iter()
        .map(|(k, _)| k.clone())
        .find(|k| k.to_string_lossy().eq_ignore_ascii_case("path"))
        .unwrap_or_else(|| OsString::from("PATH"));
    let current = get(&env, &path_key).unwrap_or_default();
    let bin = bin_dir.as_os_str();
    let has_bin = current
        .to_string_lossy()
        .split(':')
        .filter(|p| !p.is_empty())
        .any(|p| OsStr::new(p) == bin);
    if !has_bin {
        let mut updated = OsString::from(bin);
        if !current.is_empty() {
            updated.push(":");
            updated.push(&current);
        }
        set(&mut env, &path_key, updated);
    }
    if get(&env, OsStr::new("PI_CODING_AGENT")).is_none() {
        set(
            &mut env,
            OsStr::new("PI_CODING_AGENT"),
            OsString::from("true"),
        );
    }
    env
}

pub fn get(env: &[(OsString, OsString)], key: &OsStr) -> Option<OsString> {
    env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

pub fn set(env: &mut Vec<(OsString, OsString)>, key: &OsStr, value: OsString) {
    match env.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value,
        None => env.push((key.to_os_string(), value)),
    }
}

pub fn remove(env: &mut Vec<(OsString, OsString)>, key: &str) {
    env.retain(|(k, _)| k != key);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_dir_goes_first_on_path_once() {
        let base = vec![(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let env = shell_env(Some(&base), Path::new("/a/bin"));
        assert_eq!(
            get(&env, OsStr::new("PATH")).unwrap(),
            "/a/bin:/usr/bin:/bin"
        );
        assert_eq!(get(&env, OsStr::new("PI_CODING_AGENT")).unwrap(), "true");
        let again = shell_env(Some(&env), Path::new("/a/bin"));
        assert_eq!(
            get(&again, OsStr::new("PATH")).unwrap(),
            "/a/bin:/usr/bin:/bin"
        );
    }

    #[test]
    fn a_missing_custom_shell_is_reported_with_pis_text() {
        let err = resolve_shell(Some(Path::new("/nope/sh"))).unwrap_err();
        assert_eq!(err, "Custom shell path not found: /nope/sh");
    }
}
