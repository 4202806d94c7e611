//! What every non-interactive mode shares: stdout taken over by one writer, an async runtime,
//! and a bounded final flush.

use pi_coding_agent::output::{self, Output};
use std::future::Future;
use std::time::Duration;

/// How long the exit waits for stdout to drain; a client that stopped reading cannot hold us.
const FLUSH_GRACE: Duration = Duration::from_secs(2);

/// Takes over stdout, runs `main` on a single-threaded runtime and returns its exit code after
/// the queued output was written.
pub fn run<F, Fut>(main: F) -> i32
where
    F: FnOnce(Output) -> Fut,
    Fut: Future<Output = i32>,
{
    let (out, writer) = match output::start() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("Error: cannot take over stdout: {e}");
            return 1;
        }
    };
    // One thread runs every task: a streamed delta passes from the socket to stdout without a
    // cross-thread wake-up, and the park hook writes the updates a burst produced in one go.
    let idle = out.idle_flush();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .on_thread_park(move || idle.flush())
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    // Boxed: the mode's future (tens of KB) stays off the main thread's stack, whose every page
    // a frame that held it would touch.
    let code = runtime.block_on(Box::pin(main(out)));
    // Every Output clone is gone now, so the writer ends after draining its queue.
    writer.finish_within(FLUSH_GRACE);
    runtime.shutdown_background();
    code
}
