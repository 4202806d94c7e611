//! `pi`: the coding agent binary.

mod cli;
mod modes;

use cli::{CliAction, Mode};

/// The Pi release whose CLI and protocol this binary reproduces.
const PI_VERSION: &str = "1.6.0";

fn main() {
    mark_agent_environment();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse_args(&argv) {
        Err(message) => {
            eprintln!("Error: {message}");
            1
        }
        Ok(CliAction::Help) => {
            print!("{}", cli::help_text());
            0
        }
        Ok(CliAction::Version) => {
            println!("{PI_VERSION}");
            0
        }
        Ok(CliAction::Run(args)) => {
            for warning in &args.warnings {
                eprintln!("Warning: {warning}");
            }
            match args.mode {
                Mode::Rpc => modes::rpc::run(),
                Mode::Json | Mode::Text => {
                    eprintln!(
                        "Error: only --mode rpc is available in this build; interactive, json and print modes are not implemented yet"
                    );
                    1
                }
            }
        }
    };
    std::process::exit(code);
}

/// Pi marks its environment so tools and scripts run by the agent can tell (`AI_AGENT=pi`,
/// `PI_CODING_AGENT=true`); every child we spawn inherits it.
#[allow(unsafe_code)]
fn mark_agent_environment() {
    // SAFETY: called first thing in main, before any other thread exists.
    unsafe {
        std::env::set_var("AI_AGENT", "pi");
        std::env::set_var("PI_CODING_AGENT", "true");
    }
}
