//! Environment variables that touch the command line, and JavaScript string helpers the parser
//! needs to behave like Pi.
//!
//! None of Pi's environment variables changes how argv is parsed. The ones that act on what the
//! flags mean (all read by the caller, not by [`super::parse_cli`]):
//! * `PI_OFFLINE` (`1`/`true`/`yes`, any case): same as `--offline` ([`super::Args::offline_mode`]).
//!   Pi then sets `PI_OFFLINE=1` and `PI_SKIP_VERSION_CHECK=1` for the rest of the process.
//! * `PI_CODING_AGENT_SESSION_DIR`: session directory when `--session-dir` is not given (Pi
//!   expands a leading `~`); the `sessionDir` setting comes after it.
//! * `PI_CODING_AGENT_DIR`: the agent (config) directory, default `~/.pi/agent`.
//! * `PI_STARTUP_BENCHMARK` (truthy): in any mode but interactive, startup ends with
//!   `Error: PI_STARTUP_BENCHMARK only supports interactive mode` and exit 1 (late in startup,
//!   after the runtime and its diagnostics, so not a parse error).

/// Name of the offline switch.
pub const PI_OFFLINE: &str = "PI_OFFLINE";
/// Name of the session directory override.
pub const PI_CODING_AGENT_SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";
/// Name of the agent directory override.
pub const PI_CODING_AGENT_DIR: &str = "PI_CODING_AGENT_DIR";
/// Name of the startup benchmark switch.
pub const PI_STARTUP_BENCHMARK: &str = "PI_STARTUP_BENCHMARK";
/// Error message when `PI_STARTUP_BENCHMARK` is set outside interactive mode.
pub const STARTUP_BENCHMARK_INTERACTIVE_ONLY: &str =
    "PI_STARTUP_BENCHMARK only supports interactive mode";

/// Pi's `isTruthyEnvFlag`: `1`, or `true`/`yes` in any case.
pub fn is_truthy_env_flag(value: Option<&str>) -> bool {
    match value {
        None | Some("") => false,
        Some(v) => v == "1" || v.to_lowercase() == "true" || v.to_lowercase() == "yes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthy() {
        for v in ["1", "true", "True", "YES", "yes"] {
            assert!(is_truthy_env_flag(Some(v)), "{v}");
        }
        for v in ["", "0", "false", "y", "on", "2", " true"] {
            assert!(!is_truthy_env_flag(Some(v)), "{v}");
        }
        assert!(!is_truthy_env_flag(None));
    }
}
