//! SIGTERM and SIGHUP: the first starts an orderly shutdown, a second one exits at once.
//! Exit codes are Pi's: 143 for SIGTERM, 129 for SIGHUP.

use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Signals {
    term: Signal,
    hup: Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Self> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next signal and returns the exit code it stands for.
    pub async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.term.recv() => 143,
            _ = self.hup.recv() => 129,
        }
    }
}
