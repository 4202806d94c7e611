//! `google-vertex`: Gemini on Vertex AI. The body and the stream are Gemini's (see
//! [`crate::google`]); what differs is where the request goes and how it authenticates: a
//! Vertex API key (`x-goog-api-key`, the express endpoint), or Application Default Credentials
//! (a bearer token, `projects/<project>/locations/<location>/...` on the regional endpoint).
//! A models.json `baseUrl` without `{location}` replaces the endpoint and its project path.

pub mod adc;
pub mod metadata;

use crate::google::{Target, run_target};
use crate::output::Output;
use crate::stream::{LlmContext, StreamOptions};
use pi_protocol::model::Model;

/// The API id.
pub const API: &str = "google-vertex";

/// The key the registry reports for Vertex when ADC (not a key) will authenticate.
const CREDENTIALS_MARKER: &str = "gcp-vertex-credentials";

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let custom = custom_base_url(&model.base_url);
    let path = format!(
        "publishers/google/models/{}:streamGenerateContent?alt=sse",
        model.id
    );
    let target = if let Some(key) = api_key(&options) {
        let base = custom
            .clone()
            .unwrap_or_else(|| "https://aiplatform.googleapis.com/v1".into());
        Target {
            url: format!("{base}/{path}"),
            auth: vec![("x-goog-api-key".into(), key)],
            vertex: true,
        }
    } else {
        let cancelled = options.cancel.is_cancelled();
        let Some(project) = options
            .env_value("GOOGLE_CLOUD_PROJECT")
            .or_else(|| options.env_value("GCLOUD_PROJECT"))
        else {
            return out.fail(cancelled, "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.".into()).await;
        };
        let Some(location) = options.env_value("GOOGLE_CLOUD_LOCATION") else {
            return out
                .fail(
                    cancelled,
                    "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
                        .into(),
                )
                .await;
        };
        let sources = adc::Sources::from_env(|name| options.env_value(name));
        let access = adc::resolve(&sources, &options.cancel).await;
        let access = match access {
            Ok(a) => a,
            Err(e) => return out.fail(options.cancel.is_cancelled(), e).await,
        };
        let url = match custom {
            Some(base) => format!("{base}/{path}"),
            None => format!(
                "{}/v1/projects/{project}/locations/{location}/{path}",
                regional_endpoint(&location)
            ),
        };
        let mut auth = vec![("authorization".into(), format!("Bearer {}", access.token))];
        if let Some(p) = access.quota_project {
            auth.push(("x-goog-user-project".into(), p));
        }
        Target {
            url,
            auth,
            vertex: true,
        }
    };
    run_target(model, context, options, out, target).await;
}

/// A usable Vertex API key: not the ADC marker, not a `<placeholder>`.
fn api_key(options: &StreamOptions) -> Option<String> {
    let key = pi_js::trim(options.api_key.as_deref()?).to_string();
    let placeholder = key.len() > 2 && key.starts_with('<') && key.ends_with('>');
    (!key.is_empty() && key != CREDENTIALS_MARKER && !placeholder).then_some(key)
}

/// The models.json base URL with its API version (`v1` unless the URL names one), or `None`
/// for the catalog's `{location}` template.
fn custom_base_url(base: &str) -> Option<String> {
    let trimmed = pi_js::trim(base);
    if trimmed.is_empty() || trimmed.contains("{location}") {
        return None;
    }
    let trimmed = trimmed.trim_end_matches('/');
    let path = trimmed.split_once("://").map_or(trimmed, |(_, r)| r);
    let has_version = path.split(['/', '?', '#']).skip(1).any(is_version);
    Some(if has_version {
        trimmed.to_string()
    } else {
        format!("{trimmed}/v1")
    })
}

/// `v1`, `v1beta`, `v1beta1`, ...
fn is_version(seg: &str) -> bool {
    let Some(rest) = seg.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let tail = &rest[digits..];
    tail.is_empty()
        || tail
            .strip_prefix("beta")
            .is_some_and(|d| d.chars().all(|c| c.is_ascii_digit()))
}

/// The Vertex endpoint of a location (global and multi-regional ones have their own hosts).
fn regional_endpoint(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".into(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com"),
        l => format!("https://{l}-aiplatform.googleapis.com"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_keep_or_gain_an_api_version() {
        assert_eq!(
            custom_base_url("http://127.0.0.1:9").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            custom_base_url("https://proxy.test/vertex/v1beta1/").as_deref(),
            Some("https://proxy.test/vertex/v1beta1")
        );
        assert_eq!(
            custom_base_url("https://{location}-aiplatform.googleapis.com"),
            None
        );
        assert_eq!(custom_base_url(" "), None);
    }

    #[test]
    fn markers_and_placeholders_are_not_keys() {
        let with = |k: &str| StreamOptions {
            api_key: Some(k.into()),
            ..StreamOptions::default()
        };
        assert_eq!(api_key(&with("<authenticated>")), None);
        assert_eq!(api_key(&with("gcp-vertex-credentials")), None);
        assert_eq!(api_key(&with(" k ")).as_deref(), Some("k"));
    }

    #[test]
    fn locations_pick_their_endpoint() {
        assert_eq!(
            regional_endpoint("us-central1"),
            "https://us-central1-aiplatform.googleapis.com"
        );
        assert_eq!(
            regional_endpoint("global"),
            "https://aiplatform.googleapis.com"
        );
        assert_eq!(
            regional_endpoint("eu"),
            "https://aiplatform.eu.rep.googleapis.com"
        );
    }
}
