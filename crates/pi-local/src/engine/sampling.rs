//! Choosing each token: the sampling chain, the tool grammar, and the first-token decision
//! between an answer and a call.

use super::{Job, Settings};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::vocab::LlamaVocab;

/// How many recent tokens the repetition penalty looks at.
const PENALTY_WINDOW: i32 = 64;

/// For each token id, whether its text starts with `<` (and so would open a tool call).
pub fn call_openers(model: &LlamaModel) -> Vec<bool> {
    let vocab = model.vocab();
    vocab
        .tokens()
        .map(|t| vocab.token_to_piece(t, false, None).first() == Some(&b'<'))
        .collect()
}

/// Token choice: the sampling chain, and the grammar when tools are declared.
///
/// Checking the grammar against the whole vocabulary costs far more than a forward pass of a
/// small model, so (as llama.cpp's own sampler does) the unconstrained choice is tried first
/// and the grammar is applied to every candidate only when it rejects that choice.
///
/// The first token decides between an answer and a call (a call starts with `<`, an answer
/// cannot): the call is taken when the model gives it at least `tool_threshold` of the
/// probability. Small models put too little weight on calls for plain sampling to pick them.
pub struct Sampling {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// Set until the first token under a grammar is chosen.
    decide: bool,
    threshold: f64,
    /// The probability the model gave to starting a call, once decided.
    pub call_probability: Option<f64>,
}

impl Sampling {
    pub fn new(model: &LlamaModel, job: &Job) -> Result<Sampling, String> {
        let decide = job.grammar.is_some() && job.allow_calls;
        let grammar = match &job.grammar {
            Some(g) => Some(
                LlamaSampler::grammar(model, g, "root")
                    .map_err(|e| format!("The tool grammar was rejected by llama.cpp: {e}"))?,
            ),
            None => None,
        };
        Ok(Sampling {
            chain: chain(model, &job.settings),
            grammar,
            decide,
            threshold: f64::from(job.settings.tool_threshold),
            call_probability: None,
        })
    }

    pub fn sample(
        &mut self,
        ctx: &LlamaContext<'_>,
        index: i32,
        vocab: &LlamaVocab<'_>,
        opens_call: &[bool],
    ) -> LlamaToken {
        let Some(grammar) = &mut self.grammar else {
            // Samples and accepts.
            return self.chain.sample(ctx, index);
        };
        let mut candidates = ctx.token_data_array_ith(index);
        let token = if std::mem::take(&mut self.decide) {
            let (p, take_call) = branch(&candidates, opens_call, self.threshold);
            self.call_probability = Some(p);
            // Only the chosen branch's first tokens stay candidates.
            for d in candidates.data.iter_mut() {
                if opens(d, opens_call) != take_call {
                    d.set_logit(f32::NEG_INFINITY);
                }
            }
            constrained(candidates, grammar, &mut self.chain)
        } else {
            candidates.apply_sampler(&mut self.chain);
            let free = candidates.selected_token().filter(|&t| allows(grammar, t));
            match free {
                Some(token) => Some(token),
                None => constrained(ctx.token_data_array_ith(index), grammar, &mut self.chain),
            }
        };
        // Nothing allowed at all (cannot happen with a byte-level vocabulary): end the turn.
        let token = token.unwrap_or_else(|| vocab.eos());
        // The turn ends at an end-of-generation token; the grammar need not see it.
        if !vocab.is_eog(token) {
            grammar.accept(token);
        }
        self.chain.accept(token);
        token
    }
}

fn opens(d: &LlamaTokenData, opens_call: &[bool]) -> bool {
    usize::try_from(d.id().0)
        .ok()
        .and_then(|i| opens_call.get(i))
        .is_some_and(|b| *b)
}

/// The probability of starting a call, and whether it reaches `threshold`.
fn branch(candidates: &LlamaTokenDataArray, opens_call: &[bool], threshold: f64) -> (f64, bool) {
    let max = candidates
        .data
        .iter()
        .map(LlamaTokenData::logit)
        .fold(f32::NEG_INFINITY, f32::max);
    let (mut call, mut all) = (0.0, 0.0);
    for d in &candidates.data {
        let p = f64::from(d.logit() - max).exp();
        all += p;
        if opens(d, opens_call) {
            call += p;
        }
    }
    let p = if all > 0.0 { call / all } else { 0.0 };
    (p, p >= threshold)
}

/// Whether the grammar accepts `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data.first().is_some_and(|d| d.logit().is_finite())
}

/// The chain's choice among the tokens the grammar accepts.
fn constrained(
    mut candidates: LlamaTokenDataArray,
    grammar: &mut LlamaSampler,
    chain: &mut LlamaSampler,
) -> Option<LlamaToken> {
    candidates.apply_sampler(grammar);
    candidates.apply_sampler(chain);
    candidates.selected_token()
}

fn chain(model: &LlamaModel, s: &Settings) -> LlamaSampler {
    let mut chain = Vec::new();
    if s.repeat_penalty != 1.0 {
        chain.push(LlamaSampler::penalties(
            model.n_vocab(),
            PENALTY_WINDOW,
            s.repeat_penalty,
            0.0,
            0.0,
        ));
    }
    if s.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        chain.push(LlamaSampler::top_k(s.top_k));
        chain.push(LlamaSampler::top_p(s.top_p, 1));
        chain.push(LlamaSampler::temp(s.temperature));
        chain.push(LlamaSampler::dist(s.seed));
    }
    LlamaSampler::chain_simple(chain)
}
