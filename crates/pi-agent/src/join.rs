//! Runs futures concurrently on the current task and returns their outputs in input order
//! (the `Promise.all` the parallel tool batch needs, without spawning or `'static` bounds).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// A future and, once it finished, its output.
type Slot<F> = (Pin<Box<F>>, Option<<F as Future>::Output>);

pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut slots: Vec<Slot<F>> = futures.into_iter().map(|f| (Box::pin(f), None)).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (fut, out) in slots.iter_mut() {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    slots.into_iter().filter_map(|(_, out)| out).collect()
}
