//! Provider behaviour that needs no model weights (runs in every build).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::model::Model;
use pi_protocol::usage::StopReason;

async fn only_event(model: &Model) -> AssistantMessage {
    let messages = vec![AgentMessage::User(UserMessage::new(
        StringOrBlocks::Text("hi".into()),
        1,
    ))];
    let mut stream = pi_local::stream(
        model,
        LlmContext::from_messages(messages),
        StreamOptions::default(),
    );
    let Some(StreamEvent::Error { message }) = stream.next().await else {
        panic!("expected one error event");
    };
    assert!(stream.next().await.is_none());
    message
}

#[tokio::test]
async fn a_missing_model_file_fails_at_once_saying_how_to_install_it() {
    let mut model = pi_local::builtin_model();
    model.base_url = "/nonexistent/SmolLM2-135M-Instruct.Q4_1.gguf".into();
    let msg = only_event(&model).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "Local model file not found: /nonexistent/SmolLM2-135M-Instruct.Q4_1.gguf. Install it with scripts/setup-local-model (from the pi source tree), or set an API key for another provider."
        )
    );
    assert_eq!(
        (msg.api.as_str(), msg.provider.as_str()),
        ("llama-cpp", "local")
    );
}

#[tokio::test]
async fn a_build_without_the_engine_says_how_to_build_it_in() {
    if pi_local::ENGINE_BUILT {
        return;
    }
    let file = std::env::temp_dir().join(format!("pi-local-{}.gguf", std::process::id()));
    std::fs::write(&file, b"not a model").unwrap();
    let model = pi_local::local_model("x", "X", &file.to_string_lossy());
    let msg = only_event(&model).await;
    let _ = std::fs::remove_file(&file);
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "This pi was built without local models: rebuild with `cargo build -p pi-coding-agent --features local-model`"
        )
    );
}

#[test]
fn the_registry_entry_offers_the_builtin_model_with_no_cost() {
    let p = pi_local::registry_provider();
    assert_eq!((p.id.as_str(), p.api.as_str()), ("local", "llama-cpp"));
    let [m] = p.models.as_slice() else { panic!() };
    assert_eq!(m.id, "smollm2-135m-instruct");
    assert!(m.base_url.ends_with("SmolLM2-135M-Instruct.Q4_1.gguf"));
    assert_eq!(
        (m.context_window, m.cost.input, m.cost.output),
        (8192, 0.0, 0.0)
    );
}
