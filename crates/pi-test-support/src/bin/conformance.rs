//! `conformance record|replay|list`: drives Pi 1.6.0 or our binary through the scenarios.
//! Normally started by `conformance/record`; see `conformance/README.md`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use pi_test_support::conformance::suite::{self, Layout, SuiteOptions};
use pi_test_support::conformance::{Scenario, Target};

const USAGE: &str = "usage: conformance <record|replay|list> [options] [scenario...]
  --pi <program>          agent to run (required for record/replay)
  --arg <a>               extra argument before --mode rpc (repeatable)
  --path <PATH>           PATH of the agent (default /usr/local/bin:/usr/bin:/bin)
  --package-dir <dir>     install dir of the agent's package (normalized to <pi-package>)
  --root <dir>            the conformance directory (default ./conformance)
  -j <n>                  parallel scenarios
  --reference             replay: the agent is Pi itself (deviations and additions compare
                          with *.pi.golden)
  --ours                  record: write the goldens of addition scenarios (addition_*) from
                          the given binary, ours
  --keep                  keep sandboxes in the temp dir
  --step-timeout <ms>     per wait step
  --cache-dir <dir>       XDG_CACHE_HOME shared by every run (our extension host installs
                          itself there once instead of in each sandbox's cold ~/.cache)";

struct Cli {
    command: String,
    target: Option<Target>,
    layout: Layout,
    opts: SuiteOptions,
    reference: bool,
}

fn parse(args: Vec<String>) -> Result<Cli, String> {
    let mut it = args.into_iter();
    let command = it.next().ok_or(USAGE)?;
    let mut opts = match command.as_str() {
        "record" => SuiteOptions::record(),
        "replay" | "list" => SuiteOptions::replay(),
        _ => return Err(USAGE.into()),
    };
    let mut program = None;
    let mut extra = Vec::new();
    let mut path_env = "/usr/local/bin:/usr/bin:/bin".to_string();
    let mut package_dir = None;
    let mut root = PathBuf::from("conformance");
    let mut reference = false;
    let mut cache_dir = None;
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--pi" => {
                // The agent runs in its sandbox's work dir, so a relative path must be resolved now.
                let p = PathBuf::from(value("--pi")?);
                program = Some(std::path::absolute(&p).unwrap_or(p));
            }
            "--arg" => extra.push(value("--arg")?),
            "--path" => path_env = value("--path")?,
            "--package-dir" => package_dir = Some(value("--package-dir")?),
            "--root" => root = PathBuf::from(value("--root")?),
            "-j" => {
                opts.jobs = value("-j")?
                    .parse()
                    .map_err(|_| "-j needs a number".to_string())?
            }
            "--step-timeout" => {
                let ms: u64 = value("--step-timeout")?
                    .parse()
                    .map_err(|_| "--step-timeout needs ms".to_string())?;
                opts.run.step_timeout = Duration::from_millis(ms);
            }
            "--reference" => reference = true,
            "--ours" => opts.ours = true,
            "--keep" => opts.run.keep = true,
            "--cache-dir" => {
                let p = PathBuf::from(value("--cache-dir")?);
                cache_dir = Some(std::path::absolute(&p).unwrap_or(p).display().to_string());
            }
            "-h" | "--help" => return Err(USAGE.into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            name => opts.names.push(name.trim_end_matches(".json").to_string()),
        }
    }
    let target = program.map(|p| Target {
        label: p.display().to_string(),
        program: p,
        args: extra,
        path_env,
        package_dir,
        cache_dir,
    });
    Ok(Cli {
        command,
        target,
        layout: Layout::new(root),
        opts,
        reference,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = match parse(std::env::args().skip(1).collect()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if cli.command == "list" {
        return match Scenario::load_dir(&cli.layout.scenarios()) {
            Ok(all) => {
                for s in all {
                    let dev = if s.deviation.is_some() {
                        " [deviation]"
                    } else if s.addition.is_some() {
                        " [addition]"
                    } else {
                        ""
                    };
                    println!("{}{dev}: {}", s.name, s.description);
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(target) = cli.target else {
        eprintln!("--pi is required\n{USAGE}");
        return ExitCode::from(2);
    };
    if cli.command == "record" {
        return match suite::record(&cli.layout, &target, &cli.opts).await {
            Ok(lines) => {
                for l in lines {
                    println!("{l}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("recording failed:\n{e}");
                ExitCode::FAILURE
            }
        };
    }
    let report = suite::replay(&cli.layout, &target, &cli.opts, cli.reference).await;
    for o in &report.outcomes {
        let status = match (o.passed, &o.expected_failure) {
            (true, None) => "ok",
            (true, Some(_)) => "UNEXPECTED PASS",
            (false, Some(_)) => "expected failure",
            (false, None) => "FAIL",
        };
        println!("{status:>16}  {}", o.name);
        // The difference of an expected failure is what one works on next.
        if !o.passed
            && o.expected_failure.is_some()
            && std::env::var_os("CONFORMANCE_SHOW").is_some()
        {
            println!("{}\n", o.detail);
        }
    }
    for p in report.problems() {
        println!("\n{p}");
    }
    println!("{}", report.summary_line());
    if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
