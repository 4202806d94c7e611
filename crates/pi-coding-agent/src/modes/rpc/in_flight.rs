//! Tracks spawned command tasks so shutdown can wait for every response to be written.

use std::future::Future;
use std::pin::Pin;
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
    /// Runs started by the current input batch, spawned once the whole batch was handled.
    deferred: std::sync::Mutex<Vec<Pin<Box<dyn Future<Output = ()> + Send>>>>,
}

impl InFlight {
    /// Runs `fut` as its own task, counted until it completes.
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, fut: F) {
        self.inner.count.fetch_add(1, Ordering::SeqCst);
        let inner = Arc::clone(&self.inner);
        // Boxed first: an async block holding `fut` keeps room for it twice (the capture and
        // the awaited copy), and its poll frame on the stack was as large.
        let fut = Box::pin(fut);
        tokio::spawn(async move {
            fut.await;
            if inner.count.fetch_sub(1, Ordering::SeqCst) == 1 {
                inner.idle.notify_waiters();
            }
        });
    }

    /// Like [`Self::spawn`], but the task starts only at [`Self::release`]: every line of one
    /// client write is answered before a run it started emits its first event, so two
    /// prompts written together always get their responses before `agent_start`.
    pub fn spawn_after_batch<F: Future<Output = ()> + Send + 'static>(&self, fut: F) {
        self.inner.count.fetch_add(1, Ordering::SeqCst);
        match self.inner.deferred.lock() {
            Ok(mut d) => d.push(Box::pin(fut)),
            Err(p) => p.into_inner().push(Box::pin(fut)),
        }
    }

    /// Starts the tasks deferred by [`Self::spawn_after_batch`].
    pub fn release(&self) {
        let pending = match self.inner.deferred.lock() {
            Ok(mut d) => std::mem::take(&mut *d),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        };
        for fut in pending {
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move {
                fut.await;
                if inner.count.fetch_sub(1, Ordering::SeqCst) == 1 {
                    inner.idle.notify_waiters();
                }
            });
        }
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
