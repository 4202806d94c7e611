//! The ways the binary talks to its caller.

pub mod host;
pub mod print;
pub mod rpc;
