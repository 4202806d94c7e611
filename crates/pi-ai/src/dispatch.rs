//! Choosing the wire API for a model and running the request on the Tokio runtime.

use crate::output::{Output, now_ms};
use crate::request::setup_error;
use crate::stream::{AssistantStream, LlmContext, StreamEvent, StreamOptions};
use crate::{anthropic, faux, google, openai_completions, openai_responses};
use pi_protocol::model::Model;
use std::time::Instant;

/// Streams one response from `model`. Every stream ends with exactly one `Done` or `Error`; a
/// model whose `api` has no implementation gets Pi's
/// `No API provider registered for api: <api>` error at once. Must be called inside a Tokio
/// runtime (otherwise the stream is that error too).
pub fn stream(model: &Model, context: LlmContext, options: StreamOptions) -> AssistantStream {
    let started = Instant::now();
    let timestamp = now_ms();
    let known = matches!(
        model.api.as_str(),
        openai_completions::API | anthropic::API | openai_responses::API | google::API | faux::API
    );
    if !known {
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
    handle.spawn(async move {
        match model.api.as_str() {
            openai_completions::API => openai_completions::run(model, context, options, out).await,
            anthropic::API => anthropic::run(model, context, options, out).await,
            openai_responses::API => openai_responses::run(model, context, options, out).await,
            google::API => google::run(model, context, options, out).await,
            _ => faux::run(model, context, options, out).await,
        }
    });
    rx
}
