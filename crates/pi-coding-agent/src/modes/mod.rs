//! The ways the binary talks to its caller.

pub mod rpc;
