//! `pi update`: its arguments and errors as Pi 1.6.0 parses them, and the `--models` target
//! (refresh the cached model catalogs of configured providers). Updating pi itself and
//! installed packages belongs to the packages work and is not in this build.

use pi_registry::catalog_refresh;

const USAGE: &str = "pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]";

const HELP: &str = "Usage:
  pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]

Update pi, installed packages, or model catalogs.

Options:
  --self                  Update pi only (default when no target is given)
  --extensions            Update installed packages only
  --models                Refresh model catalogs only
  --all                   Update pi and installed packages
  --extension <source>    Update one package only
  -a, --approve           Trust project-local files for this command
  -na, --no-approve       Ignore project-local files for this command
  --force                 Reinstall pi even if the current version is latest

Short forms:
  pi update                Update pi only
  pi update --all          Update pi and all extensions
  pi update --models       Refresh model catalogs only
  pi update <source>       Update one package
  pi update pi             Update pi only (self works as alias to pi)

";

#[derive(Default)]
struct Parsed {
    help: bool,
    invalid_option: Option<String>,
    invalid_argument: Option<String>,
    missing_value: Option<String>,
    conflict: Option<&'static str>,
    source: Option<String>,
    self_flag: bool,
    extensions: bool,
    models: bool,
    all: bool,
    extension: Option<String>,
}

fn parse(args: &[String]) -> Parsed {
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        match arg {
            "-h" | "--help" => p.help = true,
            "--self" => p.self_flag = true,
            "--extensions" => p.extensions = true,
            "--models" => p.models = true,
            "--all" => p.all = true,
            "--approve" | "-a" | "--no-approve" | "-na" | "--force" | "--offline" => {}
            "-l" | "--local" => {
                p.invalid_option.get_or_insert_with(|| arg.to_string());
            }
            "--extension" => match args.get(i + 1) {
                Some(v) if !v.starts_with('-') => {
                    if p.extension.is_some() {
                        p.conflict
                            .get_or_insert("--extension can only be provided once");
                    } else {
                        p.extension = Some(v.clone());
                    }
                    i += 1;
                }
                _ => {
                    p.missing_value.get_or_insert_with(|| arg.to_string());
                }
            },
            a if a.starts_with('-') => {
                p.invalid_option.get_or_insert_with(|| a.to_string());
            }
            a if p.source.is_none() => p.source = Some(a.to_string()),
            a => {
                p.invalid_argument.get_or_insert_with(|| a.to_string());
            }
        }
        i += 1;
    }
    if p.all && (p.self_flag || p.extensions || p.models || p.extension.is_some()) {
        p.conflict.get_or_insert(
            "--all cannot be combined with --self, --extensions, --models, or --extension",
        );
    }
    if p.all && p.source.is_some() {
        p.conflict
            .get_or_insert("--all cannot be combined with a positional source");
    }
    if p.models {
        if p.self_flag || p.extensions || p.all || p.extension.is_some() {
            p.conflict.get_or_insert(
                "--models cannot be combined with --self, --extensions, --all, or --extension",
            );
        }
        if p.source.is_some() {
            p.conflict
                .get_or_insert("--models cannot be combined with a positional source");
        }
    } else if p.extension.is_some() {
        if p.self_flag || p.extensions || p.all {
            p.conflict.get_or_insert(
                "--extension cannot be combined with --self, --extensions, or --all",
            );
        }
        if p.source.is_some() {
            p.conflict
                .get_or_insert("--extension cannot be combined with a positional source");
        }
    } else if let Some(s) = &p.source
        && s != "self"
        && s != "pi"
        && (p.extensions || p.self_flag || p.all)
    {
        p.conflict.get_or_insert(
            "positional update targets cannot be combined with --self, --extensions, or --all",
        );
    }
    p
}

/// Runs `pi update <args>`; the process exit code.
pub fn run(args: &[String]) -> i32 {
    let p = parse(args);
    if p.help {
        print!("{HELP}");
        return 0;
    }
    if let Some(o) = &p.invalid_option {
        eprintln!("Unknown option {o} for \"update\".");
        eprintln!("Use \"pi --help\" or \"{USAGE}\".");
        return 1;
    }
    let usage_error = |m: String| {
        eprintln!("{m}");
        eprintln!("Usage: {USAGE}");
        1
    };
    if let Some(o) = &p.missing_value {
        return usage_error(format!("Missing value for {o}."));
    }
    if let Some(a) = &p.invalid_argument {
        return usage_error(format!("Unexpected argument {a}."));
    }
    if let Some(c) = p.conflict {
        return usage_error(c.to_string());
    }
    if !p.models {
        eprintln!(
            "Error: `pi update` for pi itself and installed packages is not available in this build of pi in Rust; `pi update --models` refreshes model catalogs"
        );
        return 1;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    let registry = crate::runtime::cli_registry();
    let store = registry.models_store_path();
    let providers = registry.remote_catalog_providers();
    let failures: Vec<String> = runtime.block_on(async {
        let mut failures = Vec::new();
        for p in &providers {
            if let Err(e) = catalog_refresh::refresh_provider(&store, p).await {
                failures.push(format!("{p}: {e}"));
            }
        }
        failures
    });
    if failures.is_empty() {
        println!("Model catalogs refreshed");
        0
    } else {
        eprintln!(
            "Error: Could not refresh model catalogs: {}",
            failures.join("; ")
        );
        1
    }
}
