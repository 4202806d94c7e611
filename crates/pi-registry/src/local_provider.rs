//! The in-process provider's description, apart from its registry methods in `local.rs` so that
//! [`crate::LoadOptions`] holds it without naming them.

use pi_protocol::Model;

/// What the registry needs to know about the in-process provider (given by `pi-local`).
#[derive(Debug, Clone)]
pub struct LocalProvider {
    pub id: String,
    pub name: String,
    /// The `api` of its models; `models.json` entries of this provider default to it.
    pub api: String,
    /// Built-in models, before `models.json` is layered over them.
    pub models: Vec<Model>,
    /// Whether a model can run now (its weights are on disk).
    pub runnable: fn(&Model) -> bool,
    /// How to get a runnable model; appended to the "no models" messages.
    pub setup_hint: String,
}
