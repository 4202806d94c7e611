//! What marks a virtual model, apart from the registry methods in `virtual_models.rs` so that the
//! registry tells virtual models apart without naming them.

use pi_protocol::Model;

/// The `api` of every virtual model.
pub const VIRTUAL_MODEL_API: &str = "pi-virtual";

/// Whether `model` is a virtual model.
pub fn is_virtual(model: &Model) -> bool {
    model.api == VIRTUAL_MODEL_API
}
