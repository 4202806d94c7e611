//! Where a llama.cpp server is: its address as Pi normalizes it, taken from a credential or the
//! environment, and its OpenAI-compatible endpoint. Shared by the provider's catalog
//! (`llama.rs`) and the key resolution (`builtin_auth.rs`).

/// `normalizeLlamaServerUrl`: http(s) only, no query or fragment, no trailing slashes or `/v1`.
pub fn normalize_server_url(value: &str) -> Result<String, String> {
    let mut url = reqwest::Url::parse(value.trim()).map_err(|_| "Invalid URL".to_string())?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err("Server URL must use http or https".into());
    }
    url.set_fragment(None);
    url.set_query(None);
    let trimmed = url.path().trim_end_matches('/');
    let path = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string();
    url.set_path(if path.is_empty() { "/" } else { &path });
    let text = url.to_string();
    Ok(text.strip_suffix('/').unwrap_or(&text).to_string())
}

/// `<server>/v1`, where its OpenAI-compatible API lives.
pub fn inference_url(server_url: &str) -> String {
    format!("{server_url}/v1")
}

/// The server a credential (its `env.LLAMA_BASE_URL`) or else the environment names.
pub(crate) fn server_url(
    credential_env: Option<&str>,
    process_env: Option<&str>,
) -> Option<String> {
    let from = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|s| !s.is_empty())
            .and_then(|s| normalize_server_url(s).ok())
    };
    from(credential_env).or_else(|| from(process_env))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_normalize_like_pi() {
        let n = |s: &str| normalize_server_url(s);
        assert_eq!(
            n("http://127.0.0.1:8080/v1/").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(n(" http://h:1/x/v1?q=1#f ").unwrap(), "http://h:1/x");
        assert_eq!(n("https://h//").unwrap(), "https://h");
        assert_eq!(
            n("ftp://h").unwrap_err(),
            "Server URL must use http or https"
        );
        assert!(n("not a url").is_err());
        assert_eq!(
            server_url(Some(" "), Some("http://e:2/v1")).as_deref(),
            Some("http://e:2")
        );
        assert_eq!(server_url(None, None), None);
    }
}
