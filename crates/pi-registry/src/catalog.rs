//! The built-in model catalog, generated from Pi 1.6.0's pi-ai by `scripts/gen-catalog.mjs`.
//!
//! `data/catalog.jsonl` holds a small header (providers, default model per provider) on its first
//! line, an index of every model's id and name on the second, and one provider's chat models per
//! following line. Only the header is parsed up front; the index when a `--model` pattern must be
//! matched against every model; a provider's line the first time its models are needed. Startup
//! with one configured provider never touches the other ~1 MB.

use pi_protocol::Model;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

static CATALOG_TEXT: &str = include_str!("../data/catalog.jsonl");
include!(concat!(env!("OUT_DIR"), "/catalog_lines.rs"));

/// A built-in provider's metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogProvider {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Deserialize)]
struct Header {
    #[serde(rename = "generatedAtMs")]
    generated_at_ms: Option<f64>,
    providers: Vec<CatalogProvider>,
    #[serde(rename = "defaultModels")]
    default_models: serde_json::Map<String, Value>,
}

pub(crate) struct Catalog {
    header: Header,
    index_line: &'static str,
    index: OnceLock<Vec<Vec<(String, String)>>>,
    /// The providers' lines, sliced out of the text only when needed: slicing checks both
    /// ends for a character boundary, which reads (and so pages in) the text around them.
    lines: &'static [(usize, usize)],
    models: Vec<OnceLock<Arc<[Arc<Model>]>>>,
}

/// The catalog, with its header parsed on first use. The embedded file is produced by our own
/// script and checked by tests, so a malformed header only yields an empty catalog.
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let line = |i: usize| {
            CATALOG_LINES
                .get(i)
                .and_then(|&(a, b)| CATALOG_TEXT.get(a..b))
        };
        let header = line(0)
            .and_then(|l| serde_json::from_str::<Header>(l).ok())
            .unwrap_or(Header {
                generated_at_ms: None,
                providers: Vec::new(),
                default_models: Map::new(),
            });
        let index_line = line(1).unwrap_or("[]");
        let lines = CATALOG_LINES.get(2..).unwrap_or_default();
        let models = (0..lines.len()).map(|_| OnceLock::new()).collect();
        Catalog {
            header,
            index_line,
            index: OnceLock::new(),
            lines,
            models,
        }
    })
}

impl Catalog {
    /// The provider line at `index` (`[]` when there is none).
    fn line(&self, index: usize) -> &'static str {
        self.lines
            .get(index)
            .and_then(|&(a, b)| CATALOG_TEXT.get(a..b))
            .unwrap_or("[]")
    }

    pub(crate) fn providers(&self) -> &[CatalogProvider] {
        &self.header.providers
    }

    pub(crate) fn index_of(&self, provider: &str) -> Option<usize> {
        self.header.providers.iter().position(|p| p.id == provider)
    }

    /// When the bundled data was generated (ms since the epoch): remote catalogs cached in
    /// `models-store.json` only apply when newer.
    pub(crate) fn generated_at_ms(&self) -> Option<f64> {
        self.header.generated_at_ms
    }

    /// `defaultModelPerProvider` of the coding agent, in its declaration order.
    pub(crate) fn default_models(&self) -> impl Iterator<Item = (&str, &str)> {
        self.header
            .default_models
            .iter()
            .filter_map(|(p, m)| Some((p.as_str(), m.as_str()?)))
    }

    pub(crate) fn default_model(&self, provider: &str) -> Option<&str> {
        self.header.default_models.get(provider)?.as_str()
    }

    /// `(id, name)` of the provider's models, in order (parsed once per process).
    pub(crate) fn ids_and_names(&self, index: usize) -> &[(String, String)] {
        let all = self
            .index
            .get_or_init(|| serde_json::from_str(self.index_line).unwrap_or_default());
        all.get(index).map(Vec::as_slice).unwrap_or_default()
    }

    /// The provider's chat models, parsed once per process.
    pub(crate) fn models(&self, index: usize) -> Arc<[Arc<Model>]> {
        let Some(slot) = self.models.get(index) else {
            return Arc::from(Vec::new());
        };
        slot.get_or_init(|| {
            serde_json::from_str::<Vec<Model>>(self.line(index))
                .map(|v| v.into_iter().map(Arc::new).collect())
                .unwrap_or_default()
        })
        .clone()
    }

    /// The provider's chat models as JavaScript objects, for layering `models.json` over them.
    pub(crate) fn model_objects(&self, index: usize) -> Vec<Map<String, Value>> {
        serde_json::from_str(self.line(index)).unwrap_or_default()
    }
}
