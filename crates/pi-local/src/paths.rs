//! Where local models live: the models directory, and the file a model's `baseUrl` names.

use std::path::PathBuf;

/// Overrides the models directory.
pub const MODEL_DIR_ENV: &str = "PI_LOCAL_MODEL_DIR";

/// The models directory, from the process environment (see [`models_dir_from`]).
pub fn models_dir() -> Option<PathBuf> {
    models_dir_from(|k| std::env::var(k).ok())
}

/// `$PI_LOCAL_MODEL_DIR`, else `$XDG_DATA_HOME/pi/models`, else `~/.local/share/pi/models`
/// (empty values count as unset). Kept in step with `scripts/setup-local-model`.
pub fn models_dir_from(get: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |k: &str| get(k).filter(|v| !v.is_empty());
    if let Some(dir) = var(MODEL_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    if let Some(data) = var("XDG_DATA_HOME") {
        return Some(PathBuf::from(data).join("pi").join("models"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".local/share/pi/models"))
}

/// The GGUF file a local model's `baseUrl` names: a `file://` URL or a path; `~/` is the home
/// directory and a relative path is inside the models directory.
pub fn resolve_model_path(base_url: &str) -> Option<PathBuf> {
    resolve_model_path_from(base_url, |k| std::env::var(k).ok())
}

pub fn resolve_model_path_from(
    base_url: &str,
    get: impl Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let raw = base_url.strip_prefix("file://").unwrap_or(base_url);
    if raw.is_empty() {
        return None;
    }
    if let Some(rest) = raw.strip_prefix("~/") {
        return get("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(rest));
    }
    let path = PathBuf::from(raw);
    if path.is_absolute() {
        return Some(path);
    }
    models_dir_from(get).map(|dir| dir.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn models_dir_prefers_the_explicit_variable_then_xdg_then_home() {
        let all = [
            ("PI_LOCAL_MODEL_DIR", "/m"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(models_dir_from(env(&all)), Some("/m".into()));
        assert_eq!(models_dir_from(env(&all[1..])), Some("/x/pi/models".into()));
        assert_eq!(
            models_dir_from(env(&[("XDG_DATA_HOME", ""), ("HOME", "/h")])),
            Some("/h/.local/share/pi/models".into())
        );
        assert_eq!(models_dir_from(env(&[])), None);
    }

    #[test]
    fn base_url_may_be_a_file_url_a_home_path_or_a_name_in_the_models_dir() {
        let e = [("HOME", "/h")];
        let r = |u: &str| resolve_model_path_from(u, env(&e));
        assert_eq!(r("file:///a/b.gguf"), Some("/a/b.gguf".into()));
        assert_eq!(r("/a/b.gguf"), Some("/a/b.gguf".into()));
        assert_eq!(r("~/m/b.gguf"), Some("/h/m/b.gguf".into()));
        assert_eq!(r("b.gguf"), Some("/h/.local/share/pi/models/b.gguf".into()));
        assert_eq!(r(""), None);
    }
}
