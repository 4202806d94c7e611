//! A model's price (`Model.cost`), shared by the model and the compatibility settings that name
//! fallback models with their own price.

use crate::record::record;

record! {
    /// Price per million tokens above an input-size threshold.
    pub struct ModelCostTier {
        req input: f64 = "input";
        req output: f64 = "output";
        req cache_read: f64 = "cacheRead";
        req cache_write: f64 = "cacheWrite";
        req input_tokens_above: u64 = "inputTokensAbove" via crate::num::de_u64;
    }
}

record! {
    /// Price in dollars per million tokens, optionally tiered by input size.
    #[derive(Default)]
    pub struct ModelCost {
        req input: f64 = "input";
        req output: f64 = "output";
        req cache_read: f64 = "cacheRead";
        req cache_write: f64 = "cacheWrite";
        opt tiers: Vec<ModelCostTier> = "tiers";
    }
}
