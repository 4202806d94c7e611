//! `pi install`, `pi remove` (`uninstall`), `pi update` and `pi list`: Pi 1.6.0's arguments,
//! messages, exit codes and settings edits. npm and git print to the terminal as they run.
//!
//! `pi update` (or `update self`/`pi`/`--self`) does not update Pi: this program is built from
//! source, so it says how to update it instead; `--models` refreshes the model catalogs
//! (`commands::update`).

use super::{ChildOutput, PackageManager, Progress, add_to_settings, remove_from_settings};
use crate::cli::Subcommand;
use crate::resources::trust::{TrustStore, resolve_project_trust};
use crate::settings::SettingsManager;
use crate::settings::paths::{PI_CODING_AGENT_DIR, agent_dir, home_dir};
use pi_protocol::results::SourceScope;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

/// chalk's styles, used when stdout is a terminal (or `FORCE_COLOR` asks for them).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn detect() -> Style {
        use std::io::IsTerminal;
        let forced = std::env::var("FORCE_COLOR").ok();
        let color = match forced.as_deref() {
            Some("0") | Some("false") => false,
            Some(_) => true,
            None => {
                std::io::stdout().is_terminal()
                    && std::env::var("TERM").map(|t| t != "dumb").unwrap_or(true)
            }
        };
        Style { color }
    }

    fn wrap(self, open: &str, close: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{open}m{text}\x1b[{close}m")
        } else {
            text.to_string()
        }
    }

    pub fn red(self, t: &str) -> String {
        self.wrap("31", "39", t)
    }
    pub fn green(self, t: &str) -> String {
        self.wrap("32", "39", t)
    }
    pub fn yellow(self, t: &str) -> String {
        self.wrap("33", "39", t)
    }
    pub fn dim(self, t: &str) -> String {
        self.wrap("2", "22", t)
    }
    pub fn bold(self, t: &str) -> String {
        self.wrap("1", "22", t)
    }
}

/// What `pi update` is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UpdateTarget {
    SelfOnly,
    Extensions(Option<String>),
    All,
    Models,
}

/// Parsed arguments (Pi's `parsePackageCommand`): the first problem of each kind is kept.
#[derive(Debug, Default)]
struct Options {
    source: Option<String>,
    target: Option<UpdateTarget>,
    skipped_note: bool,
    local: bool,
    trust_override: Option<bool>,
    help: bool,
    invalid_option: Option<String>,
    invalid_argument: Option<String>,
    missing_value: Option<String>,
    conflict: Option<String>,
}

fn usage(command: Subcommand) -> &'static str {
    match command {
        Subcommand::Install => "pi install <source> [-l] [--approve|--no-approve]",
        Subcommand::Remove => "pi remove <source> [-l] [--approve|--no-approve]",
        Subcommand::Update => {
            "pi update [source|self|pi] [--self|--extensions|--models|--all] [--extension <source>] [--approve|--no-approve] [--force]"
        }
        _ => "pi list [--approve|--no-approve]",
    }
}

fn parse(command: Subcommand, args: &[String]) -> Options {
    let mut o = Options::default();
    let (mut self_flag, mut ext_flag, mut models_flag, mut all_flag) = (false, false, false, false);
    let mut extension_source: Option<String> = None;
    let is_update = command == Subcommand::Update;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        let only_update = |o: &mut Options, flag: &mut bool| {
            if is_update {
                *flag = true;
            } else {
                o.invalid_option.get_or_insert(arg.to_string());
            }
        };
        match arg {
            "-h" | "--help" => o.help = true,
            "-l" | "--local" => {
                if matches!(command, Subcommand::Install | Subcommand::Remove) {
                    o.local = true;
                } else {
                    o.invalid_option.get_or_insert(arg.to_string());
                }
            }
            "--self" => only_update(&mut o, &mut self_flag),
            "--extensions" => only_update(&mut o, &mut ext_flag),
            "--models" => only_update(&mut o, &mut models_flag),
            "--all" => only_update(&mut o, &mut all_flag),
            "--force" => {
                let mut force = false;
                only_update(&mut o, &mut force);
            }
            "-a" | "--approve" => o.trust_override = Some(true),
            "-na" | "--no-approve" => o.trust_override = Some(false),
            "--extension" => {
                if !is_update {
                    o.invalid_option.get_or_insert(arg.to_string());
                    continue;
                }
                match args.get(i) {
                    Some(v) if !v.is_empty() && !v.starts_with('-') => {
                        if extension_source.is_some() {
                            o.conflict
                                .get_or_insert("--extension can only be provided once".into());
                        } else {
                            extension_source = Some(v.clone());
                        }
                        i += 1;
                    }
                    _ => {
                        o.missing_value.get_or_insert(arg.to_string());
                    }
                }
            }
            _ if arg.starts_with('-') => {
                o.invalid_option.get_or_insert(arg.to_string());
            }
            _ => {
                if o.source.is_none() {
                    o.source = Some(arg.to_string());
                } else {
                    o.invalid_argument.get_or_insert(arg.to_string());
                }
            }
        }
    }
    if !is_update {
        return o;
    }
    let conflict = |o: &mut Options, text: &str| {
        o.conflict.get_or_insert(text.to_string());
    };
    if all_flag && (self_flag || ext_flag || models_flag || extension_source.is_some()) {
        conflict(
            &mut o,
            "--all cannot be combined with --self, --extensions, --models, or --extension",
        );
    }
    if all_flag && o.source.is_some() {
        conflict(&mut o, "--all cannot be combined with a positional source");
    }
    o.target = Some(if models_flag {
        if self_flag || ext_flag || all_flag || extension_source.is_some() {
            conflict(
                &mut o,
                "--models cannot be combined with --self, --extensions, --all, or --extension",
            );
        }
        if o.source.is_some() {
            conflict(
                &mut o,
                "--models cannot be combined with a positional source",
            );
        }
        UpdateTarget::Models
    } else if let Some(source) = extension_source {
        if self_flag || ext_flag || all_flag {
            conflict(
                &mut o,
                "--extension cannot be combined with --self, --extensions, or --all",
            );
        }
        if o.source.is_some() {
            conflict(
                &mut o,
                "--extension cannot be combined with a positional source",
            );
        }
        UpdateTarget::Extensions(Some(source))
    } else if let Some(source) = o.source.clone() {
        if source == "self" || source == "pi" {
            if ext_flag {
                UpdateTarget::All
            } else {
                UpdateTarget::SelfOnly
            }
        } else {
            if ext_flag || self_flag || all_flag {
                conflict(
                    &mut o,
                    "positional update targets cannot be combined with --self, --extensions, or --all",
                );
            }
            UpdateTarget::Extensions(Some(source))
        }
    } else if all_flag || (self_flag && ext_flag) {
        UpdateTarget::All
    } else if self_flag {
        UpdateTarget::SelfOnly
    } else if ext_flag {
        UpdateTarget::Extensions(None)
    } else {
        o.skipped_note = true;
        UpdateTarget::SelfOnly
    });
    o
}

fn help(command: Subcommand) -> String {
    match command {
        Subcommand::Install => format!(
            "Usage:\n  {}\n\nInstall a package and add it to settings.\n\nOptions:\n  -l, --local       Install project-locally (.pi/settings.json)\n  -a, --approve     Trust project-local files for this command\n  -na, --no-approve Ignore project-local files for this command\n\nExamples:\n  pi install npm:@foo/bar\n  pi install git:github.com/user/repo\n  pi install git:git@github.com:user/repo\n  pi install https://github.com/user/repo\n  pi install ssh://git@github.com/user/repo\n  pi install ./local/path\n",
            usage(command)
        ),
        Subcommand::Remove => format!(
            "Usage:\n  {}\n\nRemove a package and its source from settings.\nAlias: pi uninstall <source> [-l]\n\nOptions:\n  -l, --local       Remove from project settings (.pi/settings.json)\n  -a, --approve     Trust project-local files for this command\n  -na, --no-approve Ignore project-local files for this command\n\nExamples:\n  pi remove npm:@foo/bar\n  pi uninstall npm:@foo/bar\n",
            usage(command)
        ),
        Subcommand::Update => format!(
            "Usage:\n  {}\n\nUpdate installed packages. pi in Rust does not update itself: `pi update` without\na package target says how to update this program.\n\nOptions:\n  --self                  Say how to update this program (default when no target is given)\n  --extensions            Update installed packages only\n  --models                Refresh model catalogs only \n  --all                   Update installed packages, then say how to update this program\n  --extension <source>    Update one package only\n  -a, --approve           Trust project-local files for this command\n  -na, --no-approve       Ignore project-local files for this command\n  --force                 Accepted for compatibility\n\nShort forms:\n  pi update                Say how to update this program\n  pi update --all          Update all extensions, then say how to update this program\n  pi update --models       Refresh model catalogs only\n  pi update <source>       Update one package\n  pi update pi             Say how to update this program (self works as alias to pi)\n",
            usage(command)
        ),
        _ => format!(
            "Usage:\n  {}\n\nList installed packages from user and project settings.\n\nOptions:\n  -a, --approve      Trust project-local files for this command\n  -na, --no-approve  Ignore project-local files for this command\n",
            usage(command)
        ),
    }
}

/// Where the command runs.
pub struct Place {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub home: PathBuf,
}

impl Place {
    pub fn from_env() -> Place {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let home = home_dir();
        let agent_dir = agent_dir(
            std::env::var(PI_CODING_AGENT_DIR).ok().as_deref(),
            &home,
            &cwd,
        );
        Place {
            cwd,
            agent_dir,
            home,
        }
    }
}

/// The settings of a package command, with Pi's trust rules: `update` uses the saved decision
/// only; the others decide as a session would (extensions that handle `project_trust` first).
pub fn command_settings(
    place: &Place,
    trust_override: Option<bool>,
    saved_only: bool,
    style: Style,
) -> SettingsManager {
    let trusted = if saved_only {
        trust_override.unwrap_or_else(|| {
            TrustStore::new(&place.agent_dir)
                .get(&place.cwd)
                .ok()
                .flatten()
                == Some(true)
        })
    } else {
        let needs_trust = std::cell::OnceCell::new();
        let at = crate::resources::Locations {
            cwd: &place.cwd,
            agent_dir: &place.agent_dir,
            home: &place.home,
            process_cwd: &place.cwd,
            needs_trust: &needs_trust,
        };
        let mut decided = trust_override;
        if decided.is_none() && at.needs_trust() {
            decided = pre_trust_decision(at, style);
        }
        let startup = SettingsManager::load(&place.cwd, &place.agent_dir, false);
        let decision = resolve_project_trust(
            &place.cwd,
            &place.agent_dir,
            || at.needs_trust(),
            decided,
            startup.settings().default_project_trust,
        );
        for d in &decision.diagnostics {
            eprintln!("{}", style.yellow(&format!("Warning: {}", d.message)));
        }
        decision.trusted
    };
    SettingsManager::load(&place.cwd, &place.agent_dir, trusted)
}

/// User-level extensions may decide the project's trust (`project_trust`), as at startup.
fn pre_trust_decision(at: crate::resources::Locations<'_>, style: Style) -> Option<bool> {
    let args = crate::cli::Args::default();
    let (sources, _) = crate::resources::SessionResources::pre_trust_extensions(&args, at)?;
    if sources.is_empty() {
        return None;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let mut pass = runtime.block_on(crate::extensions::project_trust_pass(
        &sources,
        &args,
        at.cwd,
        at.agent_dir,
    ));
    if let Some(host) = pass.host.take() {
        host.kill();
    }
    for w in &pass.warnings {
        eprintln!("{}", style.yellow(&format!("Warning: {w}")));
    }
    let trusted = pass.trusted?;
    if pass.remember
        && let Err(e) = TrustStore::new(at.agent_dir).set(at.cwd, Some(trusted))
    {
        eprintln!("{}", style.yellow(&format!("Warning: {e}")));
    }
    Some(trusted)
}

/// Pi's `reportSettingsErrors`: unreadable settings files, before the command acts.
pub fn report_settings_errors(settings: &SettingsManager, context: &str, style: Style) {
    for (project, message) in settings.load_errors() {
        if *project && !settings.is_project_trusted() {
            continue;
        }
        let scope = if *project { "project" } else { "global" };
        eprintln!(
            "{}",
            style.yellow(&format!("Warning ({context}, {scope} settings): {message}"))
        );
    }
}

/// Runs a package command; returns the exit code.
pub fn run(command: Subcommand, args: &[String]) -> i32 {
    let style = Style::detect();
    let o = parse(command, args);
    let fail = |first: String, second: String| {
        eprintln!("{}", style.red(&first));
        eprintln!("{}", style.dim(&second));
        1
    };
    if o.help {
        print!("{}", help_text(command, style));
        return 0;
    }
    let name = command.name();
    if let Some(opt) = &o.invalid_option {
        return fail(
            format!("Unknown option {opt} for \"{name}\"."),
            format!("Use \"pi --help\" or \"{}\".", usage(command)),
        );
    }
    if let Some(opt) = &o.missing_value {
        return fail(
            format!("Missing value for {opt}."),
            format!("Usage: {}", usage(command)),
        );
    }
    if let Some(arg) = &o.invalid_argument {
        return fail(
            format!("Unexpected argument {arg}."),
            format!("Usage: {}", usage(command)),
        );
    }
    if let Some(c) = &o.conflict {
        return fail(c.clone(), format!("Usage: {}", usage(command)));
    }
    let needs_source = matches!(command, Subcommand::Install | Subcommand::Remove);
    if needs_source && o.source.is_none() {
        return fail(
            format!("Missing {name} source."),
            format!("Usage: {}", usage(command)),
        );
    }
    if o.target == Some(UpdateTarget::Models) {
        return crate::commands::update::refresh_models();
    }
    let place = Place::from_env();
    let mut settings = command_settings(
        &place,
        o.trust_override,
        command == Subcommand::Update,
        style,
    );
    if needs_source && o.local && !settings.is_project_trusted() {
        eprintln!(
            "{}",
            style.red("Project is not trusted. Use --approve to modify local package config.")
        );
        return 1;
    }
    report_settings_errors(&settings, "package command", style);
    let mut pm = PackageManager::new(
        &place.cwd,
        &place.agent_dir,
        &place.home,
        &settings,
        ChildOutput::Inherit,
    );
    pm.on_progress(move |p| match p {
        Progress::Start(m) => println!("{}", style.dim(&m)),
        Progress::Warning(m) => println!("{}", style.yellow(&m)),
        Progress::Updated(_) => {}
    });
    let scope = if o.local {
        SourceScope::Project
    } else {
        SourceScope::User
    };
    let result = match command {
        Subcommand::Install => install(&mut pm, &mut settings, &o, scope, style),
        Subcommand::Remove => remove(&mut pm, &mut settings, &o, scope, style),
        Subcommand::List => {
            list(&mut pm, style);
            Ok(0)
        }
        _ => update(&mut pm, &o, style),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{}", style.red(&format!("Error: {message}")));
            1
        }
    }
}

fn help_text(command: Subcommand, style: Style) -> String {
    let text = help(command);
    match text.strip_prefix("Usage:") {
        Some(rest) => format!("{}{rest}\n", style.bold("Usage:")),
        None => text,
    }
}

fn install(
    pm: &mut PackageManager,
    settings: &mut SettingsManager,
    o: &Options,
    scope: SourceScope,
    style: Style,
) -> Result<i32, String> {
    let source = o.source.as_deref().unwrap_or_default();
    pm.install(source, scope)?;
    add_to_settings(pm, settings, source, scope)?;
    println!("{}", style.green(&format!("Installed {source}")));
    Ok(0)
}

fn remove(
    pm: &mut PackageManager,
    settings: &mut SettingsManager,
    o: &Options,
    scope: SourceScope,
    style: Style,
) -> Result<i32, String> {
    let source = o.source.as_deref().unwrap_or_default();
    pm.remove(source, scope)?;
    if !remove_from_settings(pm, settings, source, scope)? {
        eprintln!(
            "{}",
            style.red(&format!("No matching package found for {source}"))
        );
        return Ok(1);
    }
    println!("{}", style.green(&format!("Removed {source}")));
    Ok(0)
}

fn list(pm: &mut PackageManager, style: Style) {
    let all = pm.list_configured();
    if all.is_empty() {
        println!("{}", style.dim("No packages installed."));
        return;
    }
    let show = |p: &super::ListedPackage| {
        let shown = if p.filtered {
            format!("{} (filtered)", p.source)
        } else {
            p.source.clone()
        };
        println!("  {shown}");
        if let Some(path) = &p.installed_path {
            println!("{}", style.dim(&format!("    {}", path.display())));
        }
    };
    let user: Vec<_> = all
        .iter()
        .filter(|p| p.scope == SourceScope::User)
        .collect();
    let project: Vec<_> = all
        .iter()
        .filter(|p| p.scope == SourceScope::Project)
        .collect();
    if !user.is_empty() {
        println!("{}", style.bold("User packages:"));
        user.iter().for_each(|p| show(p));
    }
    if !project.is_empty() {
        if !user.is_empty() {
            println!();
        }
        println!("{}", style.bold("Project packages:"));
        project.iter().for_each(|p| show(p));
    }
}

fn update(pm: &mut PackageManager, o: &Options, style: Style) -> Result<i32, String> {
    let target = o.target.clone().unwrap_or(UpdateTarget::SelfOnly);
    if o.skipped_note {
        println!(
            "{}",
            style.dim("Extensions are skipped. Run pi update --extensions to update extensions.")
        );
    }
    if let UpdateTarget::Extensions(_) | UpdateTarget::All = &target {
        let source = match &target {
            UpdateTarget::Extensions(s) => s.clone(),
            _ => None,
        };
        update_packages(pm, source.as_deref(), style)?;
    }
    if let UpdateTarget::SelfOnly | UpdateTarget::All = target {
        eprintln!("error: pi cannot self-update this installation.");
        eprintln!(
            "This is pi in Rust, built from its source repository. To update it, pull the repository and run `cargo build --release -p pi-coding-agent` (or `cargo install --path crates/pi-coding-agent`)."
        );
        if let Ok(exe) = std::env::current_exe() {
            eprintln!();
            eprintln!("Location of pi executable: {}", exe.display());
        }
        return Ok(1);
    }
    Ok(0)
}

/// Updates packages and reports what changed.
fn update_packages(
    pm: &mut PackageManager,
    source: Option<&str>,
    style: Style,
) -> Result<(), String> {
    let changed = Rc::new(RefCell::new(Vec::<String>::new()));
    let warnings = Rc::new(RefCell::new(0usize));
    {
        let (changed, warnings) = (changed.clone(), warnings.clone());
        pm.on_progress(move |p| match p {
            Progress::Start(m) => println!("{}", style.dim(&m)),
            Progress::Warning(m) => {
                *warnings.borrow_mut() += 1;
                println!("{}", style.yellow(&m));
            }
            Progress::Updated(m) => changed.borrow_mut().push(m),
        });
    }
    pm.update(source)?;
    let changed = changed.borrow();
    let warnings = *warnings.borrow();
    if pm.offline {
        println!("{}", style.yellow("Skipped package updates (offline mode)"));
    } else if changed.is_empty() && warnings > 0 {
        let text = match source {
            Some(s) => format!("{s} was not updated, see the warnings above"),
            None => "No packages were updated, see the warnings above".into(),
        };
        println!("{}", style.yellow(&text));
    } else if changed.is_empty() {
        let text = match source {
            Some(s) => format!("{s} is already up to date"),
            None => "Packages are already up to date".into(),
        };
        println!("{}", style.green(&text));
    } else {
        let n = changed.len();
        println!(
            "{}",
            style.green(&format!(
                "Updated {n} package{}:",
                if n == 1 { "" } else { "s" }
            ))
        );
        for line in changed.iter() {
            println!("  {line}");
        }
    }
    Ok(())
}
