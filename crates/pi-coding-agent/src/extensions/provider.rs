//! Extensions' provider events on our own requests: `before_provider_headers`,
//! `before_provider_request` (the body may be replaced), `after_provider_response` and
//! `provider_stream_event` (each raw event of the response stream).

use crate::runtime::Core;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

type Fut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub(crate) struct ExtProviderHooks {
    core: Weak<Core>,
}

impl Core {
    /// Hooks for the next request, or `None` when no extension listens (no cost at all).
    pub(crate) fn ext_provider_hooks(self: &Arc<Self>) -> Option<Arc<dyn pi_ai::ProviderHooks>> {
        let listens = [
            "before_provider_headers",
            "before_provider_request",
            "after_provider_response",
            "provider_stream_event",
        ]
        .iter()
        .any(|e| self.ext.handles(e));
        listens.then(|| {
            Arc::new(ExtProviderHooks {
                core: Arc::downgrade(self),
            }) as Arc<dyn pi_ai::ProviderHooks>
        })
    }
}

impl pi_ai::ProviderHooks for ExtProviderHooks {
    fn wants_stream_events(&self) -> bool {
        self.core
            .upgrade()
            .is_some_and(|core| core.ext.handles("provider_stream_event"))
    }

    fn stream_event<'a>(
        &'a self,
        model: &'a pi_protocol::model::Model,
        event: &'a Value,
    ) -> Fut<'a, ()> {
        Box::pin(async move {
            let Some(core) = self.core.upgrade() else {
                return;
            };
            // Asked again per event: a handler may have unsubscribed meanwhile.
            if !core.ext.handles("provider_stream_event") {
                return;
            }
            let payload = json!({
                "data": event,
                "provider": model.provider,
                "api": model.api,
                "model": model.id,
            });
            core.ext_emit("provider_stream_event", payload).await;
        })
    }

    fn payload<'a>(&'a self, payload: Value) -> Fut<'a, Value> {
        Box::pin(async move {
            let Some(core) = self.core.upgrade() else {
                return payload;
            };
            match core
                .ext_emit("before_provider_request", json!({ "payload": payload }))
                .await
            {
                Some(result) => match result.get("payload") {
                    Some(changed) if !changed.is_null() => changed.clone(),
                    _ => payload,
                },
                None => payload,
            }
        })
    }

    fn headers<'a>(&'a self, headers: Vec<(String, String)>) -> Fut<'a, Vec<(String, String)>> {
        Box::pin(async move {
            let Some(core) = self.core.upgrade() else {
                return headers;
            };
            let map: Map<String, Value> =
                headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            let Some(result) = core
                .ext_emit("before_provider_headers", json!({ "headers": map }))
                .await
            else {
                return headers;
            };
            match result.get("headers").and_then(Value::as_object) {
                // `null` deletes a header; every other value is the header's text.
                Some(changed) => changed
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let text = v
                            .as_str()
                            .map_or_else(|| pi_js::value::to_string(v), str::to_string);
                        (k.clone(), text)
                    })
                    .collect(),
                None => headers,
            }
        })
    }

    fn response<'a>(&'a self, status: u16, headers: Vec<(String, String)>) -> Fut<'a, ()> {
        Box::pin(async move {
            let Some(core) = self.core.upgrade() else {
                return;
            };
            // Pi hands over a fetch `Headers` object as a record: names lowercased and sorted,
            // repeated headers joined by ", ".
            let mut sorted: std::collections::BTreeMap<String, String> = Default::default();
            for (name, value) in headers {
                sorted
                    .entry(name.to_ascii_lowercase())
                    .and_modify(|v| {
                        v.push_str(", ");
                        v.push_str(&value);
                    })
                    .or_insert(value);
            }
            let map: Map<String, Value> = sorted.into_iter().map(|(k, v)| (k, json!(v))).collect();
            core.ext_emit(
                "after_provider_response",
                json!({ "status": status, "headers": map }),
            )
            .await;
        })
    }
}
