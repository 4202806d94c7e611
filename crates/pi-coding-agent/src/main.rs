//! `pi`: the coding agent binary.
//!
//! On Linux with glibc the C `main` is ours (`no_main`): Rust's own start-up finds the main
//! thread's stack guard with `pthread_getattr_np`, which makes glibc open and parse
//! `/proc/self/maps` at every start, and maps an alternate signal stack for its
//! stack-overflow message (~2% of a short-lived agent's CPU; bench/README, ninth session).
//! What that start-up does that `pi` relies on is done in `entry::prepare`.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

mod modes;

use pi_coding_agent::cli::{self, Action, AppMode, DiagnosticKind, Subcommand, render_diagnostics};
use pi_coding_agent::{PI_VERSION, runtime};
use std::io::IsTerminal;

#[cfg(all(not(test), target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // the C entry point and two libc calls before anything else runs
mod entry {
    use std::ffi::{c_char, c_int};

    /// Blocks this large or larger are still mapped on their own.
    const MMAP_THRESHOLD: c_int = 8 << 20;
    /// Free memory at the heap's top beyond this goes back to the system.
    const TRIM_THRESHOLD: c_int = 16 << 20;

    /// The process entry glibc calls. A panic escaping `pi_main` ends the process with
    /// Rust's usual code for it (101); its message was already printed by the panic hook.
    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
        prepare();
        // `std::env::args` needs no set-up here: glibc hands the arguments to std's own
        // initializer in `.init_array` before this runs.
        let code = std::panic::catch_unwind(super::pi_main).unwrap_or(101);
        // `exit` (not a return) flushes Rust's stdout buffer as std's start-up would.
        std::process::exit(code)
    }

    /// What Rust's start-up does that pi needs: writes to a closed pipe fail with `EPIPE`
    /// instead of killing the process (children still start with the default action: std's
    /// `Command` resets it), and file descriptors 0–2 are open, so that no file pi opens
    /// becomes its stdout. Left out: the main thread's stack guard lookup and the handler
    /// that prints "has overflowed its stack" (an overflow still ends the process, by
    /// `SIGSEGV` instead of `SIGABRT`), and naming the main thread "main" in panic messages.
    ///
    /// Also one thing it does not do: glibc's allocator is told to serve blocks below
    /// [`MMAP_THRESHOLD`] from its heap and to keep up to [`TRIM_THRESHOLD`] free at the heap's
    /// top. By default a block of 128 KiB or more (a tool's output, a record or request body
    /// that carries it) was a fresh mapping, page-faulted in page by page and unmapped when
    /// freed: writing the ~260 KB request after the bench's tool turn took 70–115 faults and
    /// ~0.2 ms, 5–14 faults and ~0.06 ms from the heap. Idle, fleet and session-open RSS
    /// measured the same (bench/README, thirteenth session).
    fn prepare() {
        // SAFETY: plain libc calls on the process's own signal disposition, allocator
        // settings and descriptors 0–2, made before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
                fd,
                events: 0,
                revents: 0,
            });
            let polled = loop {
                let r = libc::poll(fds.as_mut_ptr(), 3, 0);
                if r != -1
                    || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    break r != -1;
                }
            };
            for (fd, p) in fds.iter().enumerate() {
                let closed = if polled {
                    p.revents & libc::POLLNVAL != 0
                } else {
                    libc::fcntl(fd as c_int, libc::F_GETFD) == -1
                        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
                };
                if closed && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) == -1 {
                    libc::abort();
                }
            }
        }
    }
}

#[cfg(any(test, not(all(target_os = "linux", target_env = "gnu"))))]
fn main() {
    pi_main();
}

fn pi_main() -> i32 {
    // The copy of this binary that stops pi's children once pi is gone (see the module).
    if std::env::var_os(pi_tools::shell::reaper::ENV).is_some() {
        std::process::exit(pi_tools::shell::reaper::run());
    }
    pi_tools::shell::reaper::enable();
    mark_agent_environment();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(run(&argv));
}

fn run(argv: &[String]) -> i32 {
    let invocation = match cli::parse_cli(argv) {
        Ok(inv) => inv,
        Err(e) => {
            eprint!("{}", e.render());
            return 1;
        }
    };
    eprint!("{}", render_diagnostics(&invocation.diagnostics));
    // A run checks its arguments once extensions registered their flags (in the runtime).
    let startup = match invocation.action {
        Action::Run => Vec::new(),
        _ => invocation.startup_diagnostics(&[]),
    };
    eprint!("{}", render_diagnostics(&startup));
    let startup_failed = startup.iter().any(|d| d.kind == DiagnosticKind::Error);
    let args = &invocation.args;
    match &invocation.action {
        Action::Version => {
            println!("{PI_VERSION}");
            0
        }
        Action::Help => {
            let app_mode = args.app_mode(stdin_is_tty(), stdout_is_tty());
            // Like Pi: in a non-interactive mode stdout belongs to the protocol, so help goes to
            // stderr unless it was asked for plainly.
            if args.takes_over_stdout(app_mode) {
                eprint!("{}", cli::help_text());
            } else {
                print!("{}", cli::help_text());
            }
            0
        }
        Action::Run if startup_failed => 1,
        Action::Run => match args.app_mode(stdin_is_tty(), stdout_is_tty()) {
            AppMode::Rpc => modes::rpc::run(args),
            AppMode::Json => modes::print::run(args, true),
            AppMode::Print => modes::print::run(args, false),
            AppMode::Interactive => {
                eprint!("{NO_TERMINAL_UI}");
                1
            }
        },
        Action::ListModels { search } => {
            let out = runtime::list_models(search.as_deref());
            eprint!("{}", out.stderr);
            print!("{}", out.stdout);
            0
        }
        Action::Export { input, output } => {
            let cwd = std::env::current_dir().unwrap_or_default();
            match pi_export::export_session_file(
                std::path::Path::new(input),
                output.as_deref().map(std::path::Path::new),
                &cwd,
            ) {
                Ok(path) => {
                    println!("Exported to: {}", path.display());
                    0
                }
                Err(e) => {
                    eprintln!("Error: {e}");
                    1
                }
            }
        }
        Action::Command {
            command: cli::Subcommand::Mcp,
            args,
        } => mcp_command(args),
        Action::Command {
            command: cli::Subcommand::Auth,
            args,
        } => pi_coding_agent::commands::auth::run(args),
        Action::Command {
            command: cli::Subcommand::Schema,
            args,
        } => schema_command(args),
        Action::Command { command, args } => match command {
            Subcommand::Install | Subcommand::Remove | Subcommand::Update | Subcommand::List => {
                pi_coding_agent::packages::cli::run(*command, args)
            }
            Subcommand::Config => pi_coding_agent::packages::config::run(args),
            _ => {
                eprintln!(
                    "Error: `pi {}` is not available in this build of pi in Rust; see pi --help",
                    command.name()
                );
                1
            }
        },
    }
}

/// `pi schema [--typescript]`: the JSON Schema of the whole protocol (or TypeScript
/// declarations of it) on stdout.
fn schema_command(args: &[String]) -> i32 {
    let schema = pi_protocol::schema::protocol_schema();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => match serde_json::to_string_pretty(&schema) {
            Ok(text) => print_out(&(text + "\n")),
            Err(e) => {
                eprintln!("Error: {e}");
                1
            }
        },
        ["--typescript"] => print_out(&pi_protocol::schema_ts::typescript(&schema)),
        ["-h" | "--help"] => {
            print!("{SCHEMA_HELP}");
            0
        }
        _ => {
            eprint!("Error: unknown arguments\n\n{SCHEMA_HELP}");
            1
        }
    }
}

/// Writes `text` to stdout; a reader that stopped early (`pi schema | head`) is no error.
fn print_out(text: &str) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("Error: {e}");
            1
        }
    }
}

const SCHEMA_HELP: &str = "\
Usage:
  pi schema                 Print the JSON Schema (draft 2020-12) of the RPC protocol: commands,
                            responses, events, extension UI records and session file lines
  pi schema --typescript    Print TypeScript declarations of the same types
";

/// `pi mcp ...`: shell commands on `mcp.json`, run without a session.
fn mcp_command(args: &[String]) -> i32 {
    use pi_coding_agent::settings::paths::{agent_dir, home_dir};
    let cwd = std::env::current_dir().unwrap_or_default();
    let home = home_dir();
    let agent_dir = agent_dir(
        std::env::var("PI_CODING_AGENT_DIR").ok().as_deref(),
        &home,
        &cwd,
    );
    let project_trusted = pi_coding_agent::resources::trust::TrustStore::new(&agent_dir)
        .get(&cwd)
        .ok()
        .flatten()
        == Some(true);
    let registry = std::sync::Arc::new(std::sync::Mutex::new(
        pi_coding_agent::runtime::cli_registry(),
    ));
    let provider_token: pi_mcp::oauth::auth::ProviderToken =
        std::sync::Arc::new(move |provider: String| {
            let registry = std::sync::Arc::clone(&registry);
            Box::pin(async move {
                let model = registry
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .all_models()
                    .into_iter()
                    .find(|m| m.provider == provider)?;
                pi_registry::request_auth_shared(&registry, &model)
                    .await
                    .ok()?
                    .api_key
            })
        });
    let ctx = pi_mcp::cli::CliContext {
        agent_dir,
        cwd,
        project_trusted,
        provider_token: Some(provider_token),
        live: true,
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    let out = rt.block_on(pi_mcp::cli::run(args, &ctx));
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    out.code
}

/// What `pi` without a mode says on a terminal, where Pi would start its terminal UI.
const NO_TERMINAL_UI: &str = "\
pi in Rust has no interactive terminal UI; Pi's TUI is not part of this program. Use it as:
  pi --mode rpc          JSON commands on stdin, responses and events on stdout (IDEs, web UIs,
                         orchestrators)
  pi -p \"your prompt\"    answer the prompt, print the result, exit
Run pi --help for every option.
";

fn stdin_is_tty() -> bool {
    std::io::stdin().is_terminal()
}

fn stdout_is_tty() -> bool {
    std::io::stdout().is_terminal()
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
