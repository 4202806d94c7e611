//! Every model of the built-in catalog reaches an adapter: none falls through to
//! `No API provider registered for api: …`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, UserMessage};
use pi_registry::{Env, LoadOptions, ModelRegistry};
use std::collections::BTreeMap;
use std::time::Duration;

fn catalog() -> Vec<pi_protocol::model::Model> {
    let dir = tempfile::tempdir().unwrap();
    let (registry, errors) = ModelRegistry::load(LoadOptions {
        agent_dir: dir.path().into(),
        env: Env::default(),
        docs_dir: None,
        local: None,
        llama: false,
    });
    assert!(errors.is_empty(), "{errors:?}");
    registry
        .all_models()
        .iter()
        .map(|m| (**m).clone())
        .collect()
}

#[test]
fn every_catalog_model_has_an_adapter() {
    let models = catalog();
    assert!(models.len() > 1500, "catalog has {} models", models.len());
    let missing: Vec<String> = models
        .iter()
        .filter(|m| !pi_ai::has_api(&m.api))
        .map(|m| format!("{}/{} ({})", m.provider, m.id, m.api))
        .collect();
    assert!(missing.is_empty(), "no adapter for: {missing:?}");
}

#[tokio::test]
async fn one_model_of_every_catalog_api_streams_through_its_adapter() {
    let mut by_api: BTreeMap<String, pi_protocol::model::Model> = BTreeMap::new();
    for m in catalog() {
        by_api.entry(m.api.clone()).or_insert(m);
    }
    assert!(by_api.len() >= 10, "{:?}", by_api.keys());
    for (api, mut model) in by_api {
        // Nothing listens on port 1: every adapter must get as far as its own failure.
        model.base_url = "http://127.0.0.1:1".into();
        let options = StreamOptions {
            api_key: Some("test-key".into()),
            idle_timeout: Some(Duration::from_secs(5)),
            ..StreamOptions::default()
        };
        let ctx = LlmContext::from_messages(vec![AgentMessage::User(UserMessage::new(
            StringOrBlocks::Text("hi".into()),
            1,
        ))]);
        let mut s = pi_ai::stream(&model, ctx, options);
        let mut last = None;
        while let Some(ev) = s.next().await {
            if let StreamEvent::Done { message } | StreamEvent::Error { message } = ev {
                last = Some(message);
            }
        }
        let msg = last.unwrap_or_else(|| panic!("{api}: no final message"));
        let text = msg.error_message.unwrap_or_default();
        assert!(
            !text.starts_with("No API provider registered"),
            "{api}: {text}"
        );
        assert_eq!(msg.api, api);
    }
}
