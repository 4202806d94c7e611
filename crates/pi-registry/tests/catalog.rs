//! The embedded catalog yields Pi's model objects byte for byte, in Pi's order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_registry::{Env, LoadOptions, ModelRegistry};
use std::path::Path;

fn empty_registry() -> ModelRegistry {
    let dir = std::env::temp_dir().join(format!("pi-registry-catalog-{}", std::process::id()));
    let (registry, errors) = ModelRegistry::load(LoadOptions {
        agent_dir: dir,
        env: Env::default(),
        docs_dir: Some("/docs".into()),
        local: None,
        llama: false,
    });
    assert_eq!(errors, vec![]);
    registry
}

#[test]
fn catalog_models_serialize_exactly_as_generated() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/catalog.jsonl"))
            .unwrap();
    let expected: Vec<String> = text
        .lines()
        .skip(2)
        .flat_map(|line| {
            let models = parse_js_json(line).unwrap();
            models
                .as_array()
                .unwrap()
                .iter()
                .map(|m| to_js_string(m).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let ours: Vec<String> = empty_registry()
        .all_models()
        .iter()
        .map(|m| to_js_string(&**m).unwrap())
        .collect();
    assert_eq!(ours.len(), 1698);
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        assert_eq!(a, b, "model {i}");
    }
    assert_eq!(ours.len(), expected.len());
}

#[test]
fn providers_are_in_pi_order_and_nothing_is_available_without_credentials() {
    let registry = empty_registry();
    let ids = registry.provider_ids();
    assert_eq!(ids.len(), 43);
    assert_eq!(&ids[..3], &["amazon-bedrock", "ant-ling", "anthropic"]);
    assert_eq!(ids.last(), Some(&"zai-coding-cn"));
    assert_eq!(registry.provider_name("openai"), Some("OpenAI"));
    assert!(registry.available_models().is_empty());
}

#[test]
fn catalog_index_lists_every_model() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/catalog.jsonl"))
            .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let index = parse_js_json(lines[1]).unwrap();
    for (i, entries) in index.as_array().unwrap().iter().enumerate() {
        let models = parse_js_json(lines[2 + i]).unwrap();
        let expected: Vec<serde_json::Value> = models
            .as_array()
            .unwrap()
            .iter()
            .map(|m| serde_json::json!([m["id"], m["name"]]))
            .collect();
        assert_eq!(entries.as_array().unwrap(), &expected, "provider {i}");
    }
}

#[test]
fn registry_can_be_shared_across_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ModelRegistry>();
}
