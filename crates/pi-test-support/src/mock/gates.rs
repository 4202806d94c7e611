//! Named gates: a scripted stream pauses at a gate until the test opens it, and the test can wait
//! until a stream has reached a gate. This makes abort and steering tests deterministic.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Debug, Default)]
struct GateState {
    open: bool,
    /// Set the first time a stream arrives at the gate (and stays set).
    reached: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Gates {
    inner: Arc<(Mutex<HashMap<String, GateState>>, Notify)>,
}

impl Gates {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut GateState) -> T) -> T {
        let mut map = match self.inner.0.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(map.entry(name.to_string()).or_default())
    }

    /// Opens the gate; streams waiting on it continue, later ones pass straight through.
    pub fn open(&self, name: &str) {
        self.with(name, |g| g.open = true);
        self.inner.1.notify_waiters();
    }

    pub fn is_open(&self, name: &str) -> bool {
        self.with(name, |g| g.open)
    }

    pub fn was_reached(&self, name: &str) -> bool {
        self.with(name, |g| g.reached)
    }

    /// Called by a stream arriving at the gate: marks it reached and waits until it is open.
    pub async fn pass(&self, name: &str) {
        self.with(name, |g| g.reached = true);
        self.inner.1.notify_waiters();
        self.wait_for(|gates| gates.is_open(name)).await;
    }

    /// Waits until some stream has arrived at the gate.
    pub async fn reached(&self, name: &str) {
        self.wait_for(|gates| gates.was_reached(name)).await;
    }

    async fn wait_for(&self, cond: impl Fn(&Gates) -> bool) {
        loop {
            let notified = self.inner.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if cond(self) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_stream_waits_at_a_gate_until_it_opens() {
        let gates = Gates::new();
        let g2 = gates.clone();
        let task = tokio::spawn(async move { g2.pass("g").await });
        gates.reached("g").await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!task.is_finished());
        gates.open("g");
        tokio::time::timeout(Duration::from_secs(1), task)
            .await
            .unwrap()
            .unwrap();
        // Once open, later streams pass at once.
        tokio::time::timeout(Duration::from_secs(1), gates.pass("g"))
            .await
            .unwrap();
    }
}
