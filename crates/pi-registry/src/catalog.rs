//! The built-in model catalog, generated from Pi 1.6.0's pi-ai by `scripts/gen-catalog.mjs`.
//!
//! `data/catalog.jsonl` holds a small header (providers, default model per provider) on its first
//! line, an index of every model's id and name on the second, and one provider's chat models per
//! following line. The header is read at build time (build.rs makes it statics); the index when
//! a `--model` pattern must be matched against every model; a provider's line the first time
//! its models are needed. Startup with one configured provider never touches the other ~1 MB.

use pi_protocol::Model;
use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};

static CATALOG_TEXT: &str = include_str!("../data/catalog.jsonl");
include!(concat!(env!("OUT_DIR"), "/catalog_lines.rs"));

/// A built-in provider's metadata (from the header's statics).
#[derive(Debug, Clone, Copy)]
pub struct CatalogProvider {
    pub id: &'static str,
    pub name: &'static str,
}

pub(crate) struct Catalog {
    providers: Vec<CatalogProvider>,
    index_line: &'static str,
    index: OnceLock<Vec<Vec<(String, String)>>>,
    /// The providers' lines, sliced out of the text only when needed: slicing checks both
    /// ends for a character boundary, which reads (and so pages in) the text around them.
    lines: &'static [(usize, usize)],
    models: Vec<OnceLock<Arc<[Arc<Model>]>>>,
}

/// Two strings of the header, by their ranges in `HEADER_TEXT` (made at build time from the
/// catalog's first line, see build.rs).
fn header_pair(&(a, b, c, d): &(usize, usize, usize, usize)) -> (&'static str, &'static str) {
    (
        HEADER_TEXT.get(a..b).unwrap_or_default(),
        HEADER_TEXT.get(c..d).unwrap_or_default(),
    )
}

/// The catalog, set up on first use. Its header was read at build time; the embedded file is
/// produced by our own script and checked by tests.
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let line = |i: usize| {
            CATALOG_LINES
                .get(i)
                .and_then(|&(a, b)| CATALOG_TEXT.get(a..b))
        };
        let providers = HEADER_PROVIDERS
            .iter()
            .map(|p| {
                let (id, name) = header_pair(p);
                CatalogProvider { id, name }
            })
            .collect();
        let index_line = line(1).unwrap_or("[]");
        let lines = CATALOG_LINES.get(2..).unwrap_or_default();
        let models = (0..lines.len()).map(|_| OnceLock::new()).collect();
        Catalog {
            providers,
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
        &self.providers
    }

    pub(crate) fn index_of(&self, provider: &str) -> Option<usize> {
        self.providers.iter().position(|p| p.id == provider)
    }

    /// When the bundled data was generated (ms since the epoch): remote catalogs cached in
    /// `models-store.json` only apply when newer.
    pub(crate) fn generated_at_ms(&self) -> Option<f64> {
        HEADER_GENERATED_AT_MS
    }

    /// `defaultModelPerProvider` of the coding agent, in its declaration order.
    pub(crate) fn default_models(
        &self,
    ) -> impl Iterator<Item = (&'static str, &'static str)> + use<> {
        HEADER_DEFAULT_MODELS.iter().map(header_pair)
    }

    pub(crate) fn default_model(&self, provider: &str) -> Option<&str> {
        self.default_models()
            .find(|&(p, _)| p == provider)
            .map(|(_, m)| m)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The header statics made at build time say what the catalog's first line says.
    #[test]
    fn the_header_statics_match_the_first_line() {
        let first = CATALOG_TEXT.lines().next().unwrap_or_default();
        let header: Value = serde_json::from_str(first).unwrap_or_default();
        let cat = catalog();
        let providers: Vec<(&str, &str)> = header["providers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["id"].as_str().unwrap_or("?"),
                    p["name"].as_str().unwrap_or("?"),
                )
            })
            .collect();
        let ours: Vec<(&str, &str)> = cat.providers().iter().map(|p| (p.id, p.name)).collect();
        assert!(providers.len() > 40, "{providers:?}");
        assert_eq!(ours, providers);
        let defaults: Vec<(&str, &str)> = header["defaultModels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(p, m)| (p.as_str(), m.as_str().unwrap_or("?")))
            .collect();
        assert_eq!(cat.default_models().collect::<Vec<_>>(), defaults);
        assert_eq!(
            cat.default_model("anthropic"),
            header["defaultModels"]["anthropic"].as_str()
        );
        assert_eq!(cat.default_model("no-such-provider"), None);
        assert_eq!(cat.generated_at_ms(), header["generatedAtMs"].as_f64());
    }
}
