//! Choosing the wire API for a model and running the request on the Tokio runtime.

use crate::output::Output;
use crate::request::setup_error;
use crate::stream::{AssistantStream, LlmContext, StreamEvent, StreamOptions};
use crate::{
    anthropic, azure_openai_responses, bedrock, faux, google, google_vertex, mistral_conversations,
    openai_codex_responses, openai_completions, openai_responses, pi_messages,
};
use pi_js::now_ms;
use pi_protocol::model::Model;
use std::future::Future;
use std::pin::Pin;
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Instant;

/// Starts a response for a wire API that lives outside this crate.
pub type ApiStreamFn = fn(&Model, LlmContext, StreamOptions) -> AssistantStream;

fn registered() -> &'static RwLock<Vec<(String, ApiStreamFn)>> {
    static APIS: OnceLock<RwLock<Vec<(String, ApiStreamFn)>>> = OnceLock::new();
    APIS.get_or_init(RwLock::default)
}

/// Makes [`stream`] hand models whose `api` is `api` to `f` (Pi's `registerApiProvider`), so
/// every caller of [`stream`] reaches providers built outside pi-ai (the in-process `local`
/// one). A later registration of the same api replaces the earlier one.
pub fn register_api(api: &str, f: ApiStreamFn) {
    let mut apis = registered().write().unwrap_or_else(PoisonError::into_inner);
    apis.retain(|(a, _)| a != api);
    apis.push((api.to_string(), f));
}

fn registered_api(api: &str) -> Option<ApiStreamFn> {
    let apis = registered().read().unwrap_or_else(PoisonError::into_inner);
    apis.iter().find(|(a, _)| a == api).map(|(_, f)| *f)
}

/// The wire APIs this crate implements (Pi's built-in API providers).
pub const BUILT_IN_APIS: &[&str] = &[
    openai_completions::API,
    anthropic::API,
    openai_responses::API,
    google::API,
    pi_messages::API,
    azure_openai_responses::API,
    openai_codex_responses::API,
    mistral_conversations::API,
    google_vertex::API,
    bedrock::API,
    faux::API,
];

/// True when [`stream`] has an implementation for `api` (built in or registered).
pub fn has_api(api: &str) -> bool {
    BUILT_IN_APIS.contains(&api) || registered_api(api).is_some()
}

/// Streams one response from `model`. Every stream ends with exactly one `Done` or `Error`; a
/// model whose `api` has no implementation gets Pi's
/// `No API provider registered for api: <api>` error at once. Must be called inside a Tokio
/// runtime (otherwise the stream is that error too).
pub fn stream(model: &Model, context: LlmContext, options: StreamOptions) -> AssistantStream {
    let started = Instant::now();
    let timestamp = now_ms();
    let known = BUILT_IN_APIS.contains(&model.api.as_str());
    if !known {
        if let Some(f) = registered_api(&model.api) {
            return f(model, context, options);
        }
        return AssistantStream::immediate(setup_error(
            model,
            format!("No API provider registered for api: {}", model.api),
            started,
            timestamp,
        ));
    }
    if options.cancel.is_cancelled() && model.api == openai_completions::API {
        // Aborted before anything was sent (an abort during a tool batch cancels the next
        // request): Pi's failure shape with the fetch layer's abort text (recorded for
        // openai-completions; the other adapters report their own wording from the request).
        let event = match setup_error(
            model,
            "This operation was aborted".into(),
            started,
            timestamp,
        ) {
            StreamEvent::Error { mut message } => {
                message.stop_reason = pi_protocol::usage::StopReason::Aborted;
                StreamEvent::Error { message }
            }
            other => other,
        };
        return AssistantStream::immediate(event);
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return AssistantStream::immediate(setup_error(
            model,
            "No Tokio runtime to run the request on".into(),
            started,
            timestamp,
        ));
    };
    let (tx, rx) = AssistantStream::channel();
    let model = model.clone();
    let out = Output::new(&model, &model.api, tx, started);
    // Each adapter's future boxed on its own: spawning the match would make one future as large
    // as the largest adapter's, built and polled through a stack frame of that size (47 KB,
    // every page of it probed at each poll's entry).
    let run: Pin<Box<dyn Future<Output = ()> + Send>> = match model.api.as_str() {
        openai_completions::API => Box::pin(openai_completions::run(model, context, options, out)),
        anthropic::API => Box::pin(anthropic::run(model, context, options, out)),
        openai_responses::API => Box::pin(openai_responses::run(model, context, options, out)),
        google::API => Box::pin(google::run(model, context, options, out)),
        pi_messages::API => Box::pin(pi_messages::run(model, context, options, out)),
        bedrock::API => Box::pin(bedrock::run(model, context, options, out)),
        google_vertex::API => Box::pin(google_vertex::run(model, context, options, out)),
        mistral_conversations::API => {
            Box::pin(mistral_conversations::run(model, context, options, out))
        }
        azure_openai_responses::API => {
            Box::pin(azure_openai_responses::run(model, context, options, out))
        }
        openai_codex_responses::API => {
            Box::pin(openai_codex_responses::run(model, context, options, out))
        }
        _ => Box::pin(faux::run(model, context, options, out)),
    };
    handle.spawn(run);
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamEvent;

    fn answer(model: &Model, _: LlmContext, _: StreamOptions) -> AssistantStream {
        AssistantStream::immediate(setup_error(
            model,
            "from the registered api".into(),
            Instant::now(),
            0,
        ))
    }

    #[tokio::test]
    async fn a_registered_api_receives_its_models() {
        register_api("test-registered-api", answer);
        let mut model = Model::placeholder();
        model.api = "test-registered-api".into();
        let event = stream(&model, LlmContext::default(), StreamOptions::default())
            .next()
            .await;
        let Some(StreamEvent::Error { message }) = event else {
            panic!("expected an error event, got {event:?}");
        };
        assert_eq!(
            message.error_message.as_deref(),
            Some("from the registered api")
        );
    }
}
