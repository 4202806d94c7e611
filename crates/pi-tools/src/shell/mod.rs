//! Running shell commands: shell and environment resolution, the child process with its process
//! group, the bash tool's output accumulator and the RPC `bash` command's executor.

pub mod accumulator;
pub mod env;
pub mod executor;
pub mod process;
pub mod reaper;
pub mod sanitize;

pub use executor::{BashRequest, execute_bash};
pub use process::{
    ShellCommand, ShellEvent, ShellExit, ShellOutcome, ShellProcess, kill_running_shells,
};
