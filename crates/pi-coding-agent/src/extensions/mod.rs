//! Pi's TypeScript extensions, as the session runtime sees them: what they registered (tools,
//! commands, flags), the host they run in (`pi_ext_host`), and the points where the runtime
//! hands events to them and applies what they return.
//!
//! * `load.rs`: starting the host at startup, Pi's load-failure report, CLI flags.
//! * `registry.rs`: the registrations, parsed from the host's answers.
//! * `delegate.rs`: what pi does when extension code calls into it.
//! * `tools.rs`: extension tools as agent tools.
//! * `emit.rs`: handing an event to the host and reading the composed result.

mod delegate;
mod emit;
mod load;
mod registry;
mod tools;

pub use load::{LoadReport, load_extensions};
pub use registry::{ExtCommand, ExtFlag, ExtTool, Registrations};
pub(crate) use tools::ExtensionTool;

use pi_ext_host::Host;
use std::sync::{Mutex, MutexGuard};

/// The loaded extensions of a session; empty (and free) when none are configured.
#[derive(Default)]
pub struct Extensions {
    host: Option<Host>,
    registrations: Mutex<Registrations>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Extensions {
    pub fn new(host: Option<Host>, registrations: Registrations) -> Extensions {
        Extensions {
            host,
            registrations: Mutex::new(registrations),
        }
    }

    /// The running host, if extensions are loaded and it is alive.
    pub fn host(&self) -> Option<&Host> {
        self.host.as_ref().filter(|h| h.is_alive())
    }

    /// Whether an extension handles `event`: events nobody handles are not sent at all.
    pub fn handles(&self, event: &str) -> bool {
        self.host().is_some_and(|h| h.has_handlers(event))
    }

    pub fn registrations(&self) -> MutexGuard<'_, Registrations> {
        lock(&self.registrations)
    }

    /// Ends the host (process group) at shutdown.
    pub fn kill(&self) {
        if let Some(host) = &self.host {
            host.kill();
        }
    }
}
