//! llama.cpp (via `llama-cpp-2`): one worker thread per model file owns the loaded model and a
//! context whose KV cache is kept between requests, so the next turn of a conversation only
//! evaluates what was added since the last one.

use super::sampling::{Sampling, call_openers};
use super::utf8::Utf8Buffer;
use super::{EngineEvent, Finish, Job, Settings, Stats};
use crate::prompt::{Turn, render_chatml};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

/// Prompt tokens evaluated per step: small enough that an abort during a long prefill lands
/// within a fraction of a second, large enough to keep the matrix kernels busy.
const PREFILL_CHUNK: usize = 64;
/// The context grows in steps of this many tokens (a new context drops the KV cache, so not
/// token by token; not the whole window either, whose KV cache may be hundreds of MB).
const CONTEXT_STEP: u32 = 2048;

type Workers = Mutex<HashMap<PathBuf, Sender<Job>>>;

fn workers() -> &'static Workers {
    static WORKERS: OnceLock<Workers> = OnceLock::new();
    WORKERS.get_or_init(Workers::default)
}

/// llama.cpp's global state; initialized once per process, its logging silenced (stderr
/// belongs to the host program).
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| format!("llama.cpp init failed: {e}"))?;
            b.void_logs();
            Ok(b)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Queues `job` on its model's worker, starting the worker (and so loading the model) if there
/// is none or it has stopped.
pub fn submit(job: Job) {
    let mut map = workers().lock().unwrap_or_else(PoisonError::into_inner);
    let job = match map.get(&job.path) {
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(returned) => returned.0,
        },
        None => job,
    };
    let path = job.path.clone();
    let (tx, rx) = channel();
    // Cannot fail: `rx` is alive. If the thread cannot start, the job is dropped with it and
    // the provider sees its event channel close.
    let _ = tx.send(job);
    let thread_path = path.clone();
    let spawned = std::thread::Builder::new()
        .name("pi-local-model".into())
        .spawn(move || worker(&thread_path, rx));
    if spawned.is_ok() {
        map.insert(path, tx);
    }
}

fn worker(path: &Path, rx: Receiver<Job>) {
    let started = Instant::now();
    let loaded = backend().and_then(|b| {
        LlamaModel::load_from_file(b, path, &LlamaModelParams::default())
            .map(|m| (b, m))
            .map_err(|e| format!("Could not load the local model {}: {e}", path.display()))
    });
    let (backend, model) = match loaded {
        Ok(pair) => pair,
        Err(message) => {
            // Fail what is queued; the next request starts a new worker and tries again.
            while let Ok(job) = rx.try_recv() {
                let _ = job.events.send(EngineEvent::Failed(message.clone()));
            }
            return;
        }
    };
    let opens_call = call_openers(&model);
    let mut load_ms = Some(started.elapsed().as_millis() as u64);
    let mut session: Option<Session<'_>> = None;
    for job in rx.iter() {
        let stats = Stats {
            load_ms: load_ms.take(),
            ..Stats::default()
        };
        let event = match generate(backend, &model, &mut session, &opens_call, &job, stats) {
            Ok((reason, stats)) => EngineEvent::Finished { reason, stats },
            Err(message) => {
                // The KV cache may not match `session.tokens` any more.
                session = None;
                EngineEvent::Failed(message)
            }
        };
        let _ = job.events.send(event);
    }
}

/// A context and what its KV cache (sequence 0) holds.
struct Session<'m> {
    ctx: LlamaContext<'m>,
    n_ctx: u32,
    threads: usize,
    tokens: Vec<LlamaToken>,
}

/// The prompt text: the model's own chat template (from its GGUF metadata, as llama.cpp
/// interprets it), else ChatML.
fn render_prompt(model: &LlamaModel, turns: &[Turn]) -> String {
    let templated = model.chat_template(None).ok().and_then(|template| {
        let messages: Vec<LlamaChatMessage> = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.as_str().into(), t.content.clone()))
            .collect::<Result<_, _>>()
            .ok()?;
        model.apply_chat_template(&template, &messages, true).ok()
    });
    templated.unwrap_or_else(|| render_chatml(turns))
}

/// A context able to hold `needed` tokens with `settings`, reusing the current one if it fits.
fn ensure_session<'m, 's>(
    backend: &LlamaBackend,
    model: &'m LlamaModel,
    slot: &'s mut Option<Session<'m>>,
    settings: &Settings,
    needed: u32,
    window: u32,
) -> Result<&'s mut Session<'m>, String> {
    let fits = slot
        .as_ref()
        .is_some_and(|s| s.n_ctx >= needed && s.threads == settings.threads);
    if !fits {
        *slot = None;
        let n_ctx = needed
            .div_ceil(CONTEXT_STEP)
            .saturating_mul(CONTEXT_STEP)
            .min(window);
        let threads = i32::try_from(settings.threads.max(1)).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(PREFILL_CHUNK as u32)
            .with_n_ubatch(PREFILL_CHUNK as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| format!("Could not create a llama.cpp context of {n_ctx} tokens: {e}"))?;
        *slot = Some(Session {
            ctx,
            n_ctx,
            threads: settings.threads,
            tokens: Vec::new(),
        });
    }
    slot.as_mut()
        .ok_or_else(|| "llama.cpp context missing".to_string())
}

fn generate<'m>(
    backend: &LlamaBackend,
    model: &'m LlamaModel,
    slot: &mut Option<Session<'m>>,
    opens_call: &[bool],
    job: &Job,
    mut stats: Stats,
) -> Result<(Finish, Stats), String> {
    let send = |e: EngineEvent| {
        let _ = job.events.send(e);
    };
    let stopped = || job.cancel.is_cancelled() || job.events.is_closed();
    if stopped() {
        return Ok((Finish::Cancelled, stats));
    }
    let vocab = model.vocab();
    let prompt = vocab.tokenize(render_prompt(model, &job.turns).as_bytes(), true, true);
    stats.prompt_tokens = prompt.len();
    send(EngineEvent::Prompt {
        tokens: prompt.len(),
    });
    let trained = model.n_ctx_train();
    let window = match trained {
        0 => job.settings.context_window,
        t => job.settings.context_window.min(t),
    };
    let prompt_len = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
    if prompt.is_empty() || prompt_len >= window {
        // Worded like llama.cpp's server so Pi's overflow detection sees it (and compacts).
        return Err(format!(
            "prompt has {} tokens, but the configured context size is {window} tokens",
            prompt.len()
        ));
    }
    let needed = prompt_len.saturating_add(job.max_tokens).min(window);
    let session = ensure_session(backend, model, slot, &job.settings, needed, window)?;

    // Keep the KV cache of the common prefix; at least the last prompt token is evaluated
    // again, for its logits.
    let mut keep = session
        .tokens
        .iter()
        .zip(&prompt)
        .take_while(|(a, b)| a == b)
        .count()
        .min(prompt.len() - 1);
    if keep < session.tokens.len() {
        let kept = u32::try_from(keep).ok();
        if !matches!(
            session.ctx.clear_kv_cache_seq(Some(0), kept, None),
            Ok(true)
        ) {
            session.ctx.clear_kv_cache();
            keep = 0;
        }
        session.tokens.truncate(keep);
    }
    stats.reused_tokens = keep;

    let prefill_started = Instant::now();
    let mut batch = LlamaBatch::new(PREFILL_CHUNK, 1);
    let mut last_index = 0;
    for chunk in prompt[keep..].chunks(PREFILL_CHUNK) {
        if stopped() {
            return Ok((Finish::Cancelled, stats));
        }
        batch.clear();
        let end = session.tokens.len() + chunk.len() == prompt.len();
        for (i, token) in chunk.iter().enumerate() {
            let pos = i32::try_from(session.tokens.len() + i).map_err(|e| e.to_string())?;
            let logits = end && i + 1 == chunk.len();
            batch
                .add(*token, pos, &[0], logits)
                .map_err(|e| e.to_string())?;
        }
        session
            .ctx
            .decode(&mut batch)
            .map_err(|e| format!("llama.cpp decode failed: {e}"))?;
        session.tokens.extend_from_slice(chunk);
        last_index = batch.n_tokens() - 1;
    }
    stats.prefill_ms = prefill_started.elapsed().as_millis() as u64;

    let decode_started = Instant::now();
    let mut sampling = Sampling::new(model, job)?;
    let mut text = Utf8Buffer::default();
    let finish = loop {
        if stopped() {
            break Finish::Cancelled;
        }
        let token = sampling.sample(&session.ctx, last_index, &vocab, opens_call);
        if vocab.is_eog(token) {
            break Finish::EndOfTurn;
        }
        let piece = text.push(&vocab.token_to_piece(token, false, None));
        if !piece.is_empty() {
            send(EngineEvent::Text(piece));
        }
        stats.output_tokens += 1;
        let full = session.tokens.len() + 1 >= session.n_ctx as usize;
        if stats.output_tokens >= job.max_tokens as usize || full {
            break Finish::Length;
        }
        batch.clear();
        let pos = i32::try_from(session.tokens.len()).map_err(|e| e.to_string())?;
        batch
            .add(token, pos, &[0], true)
            .map_err(|e| e.to_string())?;
        session
            .ctx
            .decode(&mut batch)
            .map_err(|e| format!("llama.cpp decode failed: {e}"))?;
        session.tokens.push(token);
        last_index = 0;
    };
    stats.decode_ms = decode_started.elapsed().as_millis() as u64;
    stats.call_probability = sampling.call_probability;
    Ok((finish, stats))
}
