//! Tracks spawned command tasks so shutdown can wait for every response to be written.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Notify;

#[derive(Clone, Default)]
pub struct InFlight {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    /// Runs `fut` as its own task, counted until it completes.
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, fut: F) {
        self.inner.count.fetch_add(1, Ordering::SeqCst);
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            fut.await;
            if inner.count.fetch_sub(1, Ordering::SeqCst) == 1 {
                inner.idle.notify_waiters();
            }
        });
    }

    /// Resolves once no tracked task is running.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            tokio::pin!(notified);
            // Register before checking, so a task finishing in between still wakes us.
            notified.as_mut().enable();
            if self.inner.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}
