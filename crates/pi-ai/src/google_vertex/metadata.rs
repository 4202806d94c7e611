//! The last source of Application Default Credentials: the metadata server of Google's own
//! machines (Compute Engine, Cloud Run, Cloud Functions, GKE). Pi reaches it through
//! google-auth-library and gcp-metadata when a Vertex request has no API key, no credential
//! file named and no gcloud file on disk; the rules here are theirs:
//!
//! - The server is `GCE_METADATA_IP`, else `GCE_METADATA_HOST`, else 169.254.169.254 (plain
//!   HTTP unless a scheme is given), always under `/computeMetadata/v1`.
//! - Whether to use it at all: a machine that looks like Google's (Cloud Run/Functions
//!   variables, a Google BIOS, a `42:01` MAC address) uses it without asking. Otherwise
//!   `METADATA_SERVER_DETECTION` decides: `assume-present`, `none`, `bios-only` (the BIOS
//!   answer, here false), `ping-only` or unset (ask `/instance`, 3 s timeout, no retries
//!   unless `DETECT_GCP_RETRIES`; without an override host, 169.254.169.254 and
//!   `metadata.google.internal.` race). The answer is kept for the life of the process.
//! - Off Google's machines the only traffic this can cause is that one `/instance` probe, and
//!   only on the path where Pi makes it too; tests set `GCE_METADATA_HOST` to 127.0.0.1.
//!
//! google-auth-library also asks the server for `project/project-id` and drops the answer
//! (the Vertex URL takes its project from `GOOGLE_CLOUD_PROJECT`); that request is not made.

use crate::http::{self, GetError};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const DEFAULT_HOST: &str = "http://169.254.169.254";
const SECONDARY_HOST: &str = "http://metadata.google.internal.";
const BASE_PATH: &str = "/computeMetadata/v1";
const TOKEN_PATH: &str = "instance/service-accounts/default/token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform";
/// gcp-metadata's timeout off Google's machines (none on them).
const OFF_GCP_TIMEOUT: Duration = Duration::from_millis(3000);
/// gaxios's retries of a 408/429/5xx answer, and of a token request that got no answer.
const RETRIES: u32 = 3;
const MODES: [&str; 4] = ["assume-present", "none", "bios-only", "ping-only"];

/// The environment gcp-metadata reads.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `GCE_METADATA_IP` or `GCE_METADATA_HOST`.
    pub host: Option<String>,
    /// `METADATA_SERVER_DETECTION`.
    pub detection: Option<String>,
    /// `DETECT_GCP_RETRIES`.
    pub detect_retries: Option<String>,
    /// Whether this looks like one of Google's machines.
    pub resident: bool,
}

impl Settings {
    /// The settings from `get` (the provider's environment, then the process's).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        let host = get("GCE_METADATA_IP").or_else(|| get("GCE_METADATA_HOST"));
        let serverless = ["CLOUD_RUN_JOB", "FUNCTION_NAME", "K_SERVICE"]
            .iter()
            .any(|v| get(v).is_some());
        Settings {
            host,
            detection: get("METADATA_SERVER_DETECTION"),
            detect_retries: get("DETECT_GCP_RETRIES"),
            resident: serverless || on_compute_engine(),
        }
    }

    fn base_url(&self, host: Option<&str>) -> String {
        let host = host.or(self.host.as_deref()).unwrap_or(DEFAULT_HOST);
        let with_scheme = if host.starts_with("http://") || host.starts_with("https://") {
            host.to_string()
        } else {
            format!("http://{host}")
        };
        // `new URL("/computeMetadata/v1", base)`: the path replaces any path the host had.
        let rest = with_scheme.split_once("://").map_or("", |(_, r)| r);
        let scheme_len = with_scheme.len() - rest.len();
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        format!("{}{authority}{BASE_PATH}", &with_scheme[..scheme_len])
    }

    fn timeout(&self) -> Option<Duration> {
        (!self.resident).then_some(OFF_GCP_TIMEOUT)
    }
}

/// A Linux Compute Engine BIOS, or a network interface with Google's `42:01` MAC prefix
/// (looked at once per process, as gcp-metadata caches it).
fn on_compute_engine() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(probe_compute_engine)
}

fn probe_compute_engine() -> bool {
    if cfg!(target_os = "linux")
        && std::path::Path::new("/sys/class/dmi/id/bios_date").exists()
        && std::fs::read_to_string("/sys/class/dmi/id/bios_vendor")
            .is_ok_and(|v| v.contains("Google"))
    {
        return true;
    }
    std::fs::read_dir("/sys/class/net").is_ok_and(|dir| {
        dir.flatten().any(|e| {
            std::fs::read_to_string(e.path().join("address"))
                .is_ok_and(|mac| mac.trim().starts_with("42:01"))
        })
    })
}

/// Whether the metadata server is to be used (google-auth-library's `_checkIsGCE`).
pub async fn available(s: &Settings, cancel: &CancellationToken) -> Result<bool, String> {
    if s.resident {
        return Ok(true);
    }
    if let Some(mode) = &s.detection {
        let mode = mode.trim().to_lowercase();
        match mode.as_str() {
            "assume-present" => return Ok(true),
            "none" | "bios-only" => return Ok(false),
            "ping-only" => {}
            _ => {
                return Err(format!(
                    "Unknown `METADATA_SERVER_DETECTION` env variable. Got `{mode}`, but it should be `{}`, or unset",
                    MODES.join("`, `")
                ));
            }
        }
    }
    static PINGS: OnceLock<Mutex<HashMap<String, bool>>> = OnceLock::new();
    let key = s.base_url(None);
    let pings = PINGS.get_or_init(Mutex::default);
    if let Some(known) = pings
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Ok(*known);
    }
    let retries = s
        .detect_retries
        .as_deref()
        .and_then(|r| r.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let primary = format!("{key}/instance");
    let found = if s.host.is_some() {
        metadata_get(s, &primary, retries, cancel).await.is_ok()
    } else {
        // gcp-metadata races the IP (tarpitted off Google's network) against the DNS name.
        let secondary = format!("{}/instance", s.base_url(Some(SECONDARY_HOST)));
        let a = metadata_get(s, &primary, retries, cancel);
        let b = metadata_get(s, &secondary, retries, cancel);
        tokio::pin!(a, b);
        let (mut a_done, mut b_done) = (false, false);
        // The first success wins; a failure waits for the other (`Promise.any`).
        loop {
            tokio::select! {
                r = &mut a, if !a_done => {
                    if r.is_ok() { break true; }
                    a_done = true;
                }
                r = &mut b, if !b_done => {
                    if r.is_ok() { break true; }
                    b_done = true;
                }
                else => break false,
            }
        }
    };
    if cancel.is_cancelled() {
        return Ok(found);
    }
    pings
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, found);
    Ok(found)
}

/// Why a metadata request failed, in gaxios's words.
enum Failure {
    Status(u16, String),
    NoAnswer(String),
    Flavor(String),
}

/// One metadata GET with gaxios's retries: a 408/429/1xx/5xx answer up to three times, no
/// answer at all up to `no_answer_retries` times, waiting 0.5, 1.5, 3.5 s between tries.
async fn metadata_get(
    s: &Settings,
    url: &str,
    no_answer_retries: u32,
    cancel: &CancellationToken,
) -> Result<String, Failure> {
    let mut attempt = 0u32;
    loop {
        let failure = match http::get_text(
            url,
            &[("Metadata-Flavor", "Google")],
            s.timeout(),
            cancel,
        )
        .await
        {
            Ok((status, headers, body)) if (200..300).contains(&status) => {
                let flavor = headers
                    .iter()
                    .find(|(k, _)| k == "metadata-flavor")
                    .map(|(_, v)| v.as_str());
                return match flavor {
                    Some("Google") => Ok(body),
                    other => Err(Failure::Flavor(format!(
                        "Invalid response from metadata service: incorrect Metadata-Flavor header. Expected 'Google', got {}",
                        other.map_or("no header".to_string(), |v| format!("'{v}'"))
                    ))),
                };
            }
            Ok((status, _, body)) => Failure::Status(status, body),
            Err(GetError::Aborted) => {
                return Err(Failure::NoAnswer("This operation was aborted".into()));
            }
            Err(GetError::Timeout) => {
                Failure::NoAnswer("The operation was aborted due to timeout".into())
            }
            Err(GetError::Connect(detail)) => {
                Failure::NoAnswer(format!("request to {url} failed, reason: {detail}"))
            }
        };
        let retry = match &failure {
            Failure::Status(st, _) => {
                attempt < RETRIES && matches!(st, 100..=199 | 408 | 429 | 500..=599)
            }
            Failure::NoAnswer(_) => attempt < no_answer_retries.min(RETRIES),
            Failure::Flavor(_) => false,
        };
        if !retry {
            return Err(failure);
        }
        attempt += 1;
        let delay = Duration::from_millis(((2u64.pow(attempt) - 1) * 1000) / 2);
        tokio::select! {
            _ = cancel.cancelled() => return Err(failure),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// An access token for the machine's default service account and its lifetime in seconds.
pub async fn token(s: &Settings, cancel: &CancellationToken) -> Result<(String, u64), String> {
    const PREFIX: &str = "Could not refresh access token: ";
    let url = format!("{}/{TOKEN_PATH}", s.base_url(None));
    let body = match metadata_get(s, &url, RETRIES, cancel).await {
        Ok(body) => body,
        Err(Failure::Flavor(text)) => return Err(text),
        Err(Failure::NoAnswer(text)) => return Err(format!("{PREFIX}{text}")),
        Err(Failure::Status(status, body)) => {
            // google-auth-library explains the two statuses a VM's scopes cause, and names
            // the failure twice on the way up.
            let why = match status {
                403 => {
                    "A Forbidden error was returned while attempting to retrieve an access token for the Compute Engine built-in service account. This may be because the Compute Engine instance does not have the correct permission scopes specified: "
                }
                404 => {
                    "A Not Found error was returned while attempting to retrieve an accesstoken for the Compute Engine built-in service account. This may be because the Compute Engine instance does not have any permission scopes specified: "
                }
                _ => return Err(format!("{PREFIX}{body}")),
            };
            return Err(format!("{PREFIX}{why}{PREFIX}{body}"));
        }
    };
    let json = pi_js::parse::parse_js_json(&body).unwrap_or(serde_json::Value::Null);
    let token = json["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "No access token in the metadata server's answer".to_string())?;
    let expires_in = json["expires_in"]
        .as_f64()
        .map_or(3600, |e| e.max(0.0) as u64);
    Ok((token.to_string(), expires_in))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> Settings {
        Settings {
            host: Some(host.into()),
            ..Settings::default()
        }
    }

    #[test]
    fn the_host_gains_a_scheme_and_loses_its_path() {
        assert_eq!(
            with_host("127.0.0.1:8080").base_url(None),
            "http://127.0.0.1:8080/computeMetadata/v1"
        );
        assert_eq!(
            with_host("https://meta.test/x/y").base_url(None),
            "https://meta.test/computeMetadata/v1"
        );
        assert_eq!(
            Settings::default().base_url(None),
            "http://169.254.169.254/computeMetadata/v1"
        );
        assert_eq!(
            Settings::default().base_url(Some(SECONDARY_HOST)),
            "http://metadata.google.internal./computeMetadata/v1"
        );
    }

    #[tokio::test]
    async fn detection_modes_decide_without_a_request() {
        // An unroutable host: any request would fail, so `true` can only come from the mode.
        let s = |mode: &str| Settings {
            host: Some("127.0.0.1:9".into()),
            detection: Some(mode.into()),
            ..Settings::default()
        };
        let cancel = CancellationToken::new();
        assert_eq!(available(&s(" Assume-Present "), &cancel).await, Ok(true));
        assert_eq!(available(&s("none"), &cancel).await, Ok(false));
        assert_eq!(available(&s("bios-only"), &cancel).await, Ok(false));
        assert_eq!(
            available(&s("Sometimes"), &cancel).await,
            Err("Unknown `METADATA_SERVER_DETECTION` env variable. Got `sometimes`, but it should be `assume-present`, `none`, `bios-only`, `ping-only`, or unset".into())
        );
        let resident = Settings {
            detection: Some("none".into()),
            resident: true,
            ..s("none")
        };
        assert_eq!(available(&resident, &cancel).await, Ok(true));
    }
}
