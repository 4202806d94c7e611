//! The conformance suite: scenarios recorded from Pi 1.6.0 and replayed against our binary with
//! the same runner, mock LLM and normalization. See `conformance/README.md`.

pub mod golden;
pub mod normalize;
pub mod process;
pub mod runner;
pub mod sandbox;
pub mod scenario;
pub mod suite;
pub mod transcript;

pub use process::Target;
pub use runner::{RunOptions, RunResult};
pub use scenario::Scenario;
pub use suite::{Layout, Report, SuiteOptions};
