//! Every wire type of Pi 1.6.0's RPC and JSON modes, and JSON output byte-compatible with
//! JavaScript's `JSON.stringify`. No I/O lives here.

pub mod command;
pub mod content;
pub mod js_parse;
pub mod json;
pub mod response;
pub mod thinking;

pub use command::{Incoming, QueueMode, Rejection, RpcCommand, StreamingBehavior, decode_command};
pub use response::{Outcome, RpcResponse};
pub use thinking::ThinkingLevel;
