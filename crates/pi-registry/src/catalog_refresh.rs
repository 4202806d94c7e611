//! `pi update --models`: each configured built-in provider's catalog fetched from Pi's catalog
//! service (`GET {base}/api/models/providers/<id>?types=chat,image,classifier`, revalidated with
//! the cached ETag) and cached in `<agent-dir>/models-store.json` under Pi's lock, in Pi's entry
//! shape (`models`, `lastModified`, `etag`, `checkedAt`). The registry overlays a cached catalog
//! newer than the bundled data (see `store.rs`).
//!
//! The service is Pi's; `PI_MODEL_CATALOG_URL` (ours, for tests) names another. OpenRouter's
//! personalized list and Radius's gateway catalog come from the account: `account_catalogs.rs`.

use crate::ModelRegistry;
use crate::oauth::store;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::time::Duration;

const DEFAULT_CATALOG_BASE_URL: &str = "https://pi.dev";
/// Model types this client reads (Pi sends them so the service returns the full shard).
pub(crate) const TYPES: [&str; 3] = ["chat", "image", "classifier"];

/// What one provider's refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Updated,
    Unchanged,
    /// The service has no catalog for the provider.
    NotServed,
}

impl ModelRegistry {
    /// The built-in providers whose catalog Pi refreshes online: configured ones, without
    /// OpenRouter and Radius (their catalogs come from the account).
    pub fn remote_catalog_providers(&self) -> Vec<String> {
        crate::catalog::catalog()
            .providers()
            .iter()
            .map(|p| p.id)
            .filter(|&id| id != "openrouter" && id != "radius" && self.has_configured_auth(id))
            .map(str::to_owned)
            .collect()
    }

    /// `<agent-dir>/models-store.json`.
    pub fn models_store_path(&self) -> std::path::PathBuf {
        self.auth_path.with_file_name("models-store.json")
    }
}

/// `encodeURIComponent`.
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `pi/<version> (<platform>; rust; <arch>)`, as our requests name themselves.
pub(crate) fn user_agent() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("pi/1.6.0 ({os}; rust; {arch})")
}

pub(crate) fn catalog_base() -> String {
    std::env::var("PI_MODEL_CATALOG_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_CATALOG_BASE_URL.into())
        .trim_end_matches('/')
        .to_string()
}

/// The entries of a catalog answer (`[...]`, `{models: [...]}` or an object of models) with
/// an `id` and a type this client reads, each marked with `provider`.
pub(crate) fn parse_catalog(provider: &str, value: &Value) -> Result<Vec<Value>, String> {
    let entries: Vec<&Value> = match value {
        Value::Array(a) => a.iter().collect(),
        Value::Object(o) => match o.get("models") {
            Some(Value::Array(a)) => a.iter().collect(),
            _ => o.values().collect(),
        },
        _ => return Err(format!("Invalid model catalog for provider \"{provider}\"")),
    };
    Ok(entries
        .into_iter()
        .filter_map(Value::as_object)
        .filter(|m| m.contains_key("id"))
        .filter(|m| match m.get("type") {
            None => true,
            Some(Value::String(t)) => TYPES.contains(&t.as_str()),
            Some(_) => false,
        })
        .map(|m| {
            let mut m = m.clone();
            m.insert("provider".into(), provider.into());
            Value::Object(m)
        })
        .collect())
}

/// JavaScript's `Date.parse` of an HTTP date (`Tue, 01 Dec 2026 10:00:00 GMT`), in ms.
pub(crate) fn http_date_ms(s: &str) -> Option<f64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, _] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').filter_map(|x| x.parse().ok()).collect();
    let [h, mi, se] = hms.as_slice() else {
        return None;
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + se) * 1000) as f64)
}

pub(crate) async fn fetch(
    url: &str,
    validator: Option<&str>,
) -> Result<(u16, Vec<(String, String)>, String), String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(4))
        .build()
        .map_err(|e| e.to_string())?;
    let mut last = String::new();
    // Pi's management requests try twice more on transient statuses and failures.
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
        }
        let mut req = client
            .get(url)
            .header("accept", "application/json")
            .header("User-Agent", user_agent());
        if let Some(v) = validator {
            req = req.header("if-none-match", v);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                if [408, 429, 500, 502, 503, 504].contains(&status) && attempt < 2 {
                    continue;
                }
                let headers = resp
                    .headers()
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                let body = resp.text().await.map_err(|_| "fetch failed".to_string())?;
                return Ok((status, headers, body));
            }
            Err(_) => last = "fetch failed".into(),
        }
    }
    Err(last)
}

/// How long a fetched catalog counts as current for the startup refresh (Pi's interval).
const REFRESH_INTERVAL_MS: f64 = 4.0 * 60.0 * 60.0 * 1000.0;

/// The startup refresh of `provider`'s catalog: asks only when the stored one was checked more
/// than four hours ago (or has no date). `None` when nothing was asked.
pub async fn refresh_provider_when_due(
    store_path: &Path,
    provider: &str,
) -> Option<Result<Outcome, String>> {
    let stored = store::read(store_path)
        .ok()
        .and_then(|d| d.get(provider).and_then(Value::as_object).cloned());
    if let Some(entry) = &stored
        && let Some(checked) = entry.get("checkedAt").and_then(Value::as_f64)
        && entry.get("lastModified").is_some_and(|v| !v.is_null())
        && (pi_js::now_ms() as f64) - checked < REFRESH_INTERVAL_MS
    {
        return None;
    }
    Some(refresh_provider(store_path, provider).await)
}

/// Refreshes `provider`'s cached catalog (always asking, as `pi update --models` forces).
pub async fn refresh_provider(store_path: &Path, provider: &str) -> Result<Outcome, String> {
    let stored = store::read(store_path)
        .ok()
        .and_then(|d| d.get(provider).and_then(Value::as_object).cloned());
    let validator = stored
        .as_ref()
        .filter(|s| {
            s.get("models")
                .and_then(Value::as_array)
                .is_some_and(|m| !m.is_empty())
        })
        .and_then(|s| s.get("etag").and_then(Value::as_str))
        .map(String::from);
    let url = format!(
        "{}/api/models/providers/{}?types={}",
        catalog_base(),
        encode_component(provider),
        TYPES.join("%2C")
    );
    let (status, headers, body) = fetch(&url, validator.as_deref()).await?;
    let checked_at = pi_js::json::js_number_value(pi_js::now_ms() as f64);
    let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let with_checked = |mut entry: Map<String, Value>| {
        entry.insert("checkedAt".into(), checked_at.clone());
        Value::Object(entry)
    };
    let base = || {
        stored.clone().unwrap_or_else(|| {
            let mut m = Map::new();
            m.insert("models".into(), json!([]));
            m
        })
    };
    let (entry, outcome, error) = if status == 304 && stored.is_some() {
        (with_checked(base()), Outcome::Unchanged, None)
    } else if status == 404 || status == 501 {
        let mut e = base();
        e.insert("checkedAt".into(), checked_at.clone());
        e.insert("lastModified".into(), 0.into());
        e.remove("etag");
        (Value::Object(e), Outcome::NotServed, None)
    } else if !(200..300).contains(&status) {
        (
            with_checked(base()),
            Outcome::Unchanged,
            Some(format!(
                "Model catalog request failed for {provider}: {status}"
            )),
        )
    } else {
        let value = pi_js::parse::parse_js_json(&body)?;
        let models = parse_catalog(provider, &value)?;
        let mut e = Map::new();
        e.insert("models".into(), Value::Array(models));
        let modified = header("last-modified")
            .and_then(|d| http_date_ms(&d))
            .unwrap_or(0.0);
        e.insert(
            "lastModified".into(),
            pi_js::json::js_number_value(modified),
        );
        if let Some(tag) = header("etag") {
            e.insert("etag".into(), tag.into());
        }
        (with_checked(e), Outcome::Updated, None)
    };
    let provider_id = provider.to_string();
    store::modify(store_path, &provider_id, |_| async move { Ok(Some(entry)) }).await?;
    match error {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse_like_javascript() {
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:01 GMT"), Some(1000.0));
        assert_eq!(
            http_date_ms("Tue, 01 Dec 2026 10:00:00 GMT"),
            Some(1_796_119_200_000.0)
        );
        assert_eq!(http_date_ms("nonsense"), None);
    }

    #[test]
    fn catalogs_in_every_shape_keep_models_with_an_id_and_a_known_type() {
        let v = json!({"models": [{"id": "a"}, {"id": "b", "type": "embedding"}, {"name": "x"}]});
        assert_eq!(
            parse_catalog("p", &v).unwrap(),
            vec![json!({"id": "a", "provider": "p"})]
        );
        assert_eq!(
            parse_catalog("p", &json!([{"id": "c", "type": "image"}]))
                .unwrap()
                .len(),
            1
        );
        assert!(parse_catalog("p", &json!(3)).is_err());
    }
}
