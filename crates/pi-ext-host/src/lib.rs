//! Pi's TypeScript extensions run in one Node child process, the *host*, whose JavaScript
//! (`js/`) ships inside the binary. This crate starts it and speaks the channel to it; what the
//! messages mean is in `PROTOCOL.md`, and what pi does for each call is the [`Delegate`] the
//! session runtime implements.
//!
//! The host starts only when an extension is configured: a session without extensions pays
//! nothing for this crate.

mod assets;
mod host;
mod spawn;

pub use assets::{host_dir, prepare};
pub use host::{BoxFuture, CallResult, Delegate, Host, HostError, StartError};
pub use spawn::{NODE_ENV, find_node};
