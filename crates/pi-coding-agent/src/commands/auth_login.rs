//! `pi auth login <provider> [--api-key] [--no-browser]`: saves an API key typed at the
//! terminal, or signs in with the provider's account flow, and stores the credential in
//! `auth.json` under Pi's lock. Like Pi it needs an interactive terminal.

use pi_registry::ModelRegistry;
use pi_registry::oauth;
use pi_registry::oauth::login::{Answer, Choice, Interaction, Notice};
use serde_json::{Value, json};
use std::io::{BufRead, IsTerminal, Write};

const USAGE: &str = "pi auth login <provider> [--api-key] [--no-browser]";

struct Request {
    provider_ref: String,
    api_key: bool,
    browser: bool,
}

fn parse(args: &[String]) -> Result<Request, String> {
    let usage = || format!("Usage: {USAGE}");
    let mut r = Request {
        provider_ref: String::new(),
        api_key: false,
        browser: true,
    };
    for arg in args {
        match arg.as_str() {
            "--api-key" => r.api_key = true,
            "--no-browser" => r.browser = false,
            a if a.starts_with('-') || !r.provider_ref.is_empty() => return Err(usage()),
            a => r.provider_ref = a.to_string(),
        }
    }
    if r.provider_ref.is_empty() {
        return Err(usage());
    }
    if r.api_key && !r.browser {
        return Err("--no-browser only applies to account sign-in; omit it with --api-key.".into());
    }
    Ok(r)
}

/// Runs the login; the process exit code.
pub fn run(args: &[String]) -> i32 {
    let req = match parse(args) {
        Ok(r) => r,
        Err(m) => {
            eprintln!("{m}");
            return 1;
        }
    };
    let registry = crate::runtime::cli_registry();
    let Some(provider) = match_provider(&registry, &req.provider_ref) else {
        let mut ids: Vec<&str> = registry
            .provider_ids()
            .into_iter()
            .filter(|p| registry.offers_oauth(p) || registry.offers_api_key_login(p))
            .collect();
        ids.sort_unstable();
        eprintln!("Unknown provider \"{}\".", printable(&req.provider_ref));
        eprintln!("Providers: {}", ids.join(", "));
        return 1;
    };
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        eprintln!("\"{USAGE}\" requires an interactive terminal");
        return 1;
    }
    let name = registry
        .provider_name(&provider)
        .unwrap_or(&provider)
        .to_string();
    let oauth_flow = registry.oauth_login(&provider);
    let api_key_login = registry.offers_api_key_login(&provider);
    let use_oauth = !req.api_key && oauth_flow.is_some();
    if !use_oauth && !api_key_login {
        if req.api_key && oauth_flow.is_some() {
            eprintln!("{name} has no API key login. Omit --api-key to sign in.");
        } else {
            eprintln!("{name} is configured outside pi (ambient credentials).");
        }
        return 1;
    }
    let path = registry.auth_path().to_path_buf();
    let outcome = match (use_oauth, oauth_flow) {
        (true, Some((flow, _))) => account(&provider, &flow, req.browser, &path),
        _ => api_key(&provider, &name, &path),
    };
    match outcome {
        Ok(()) => {
            let what = if use_oauth {
                format!("Logged in to {name}")
            } else {
                format!("Saved API key for {name}")
            };
            println!("{what}. Credentials saved to {}", path.display());
            0
        }
        Err(m) if m == "Login cancelled" => {
            eprintln!("Login cancelled.");
            1
        }
        Err(m) => {
            eprintln!("Failed to log in to {name}: {m}");
            1
        }
    }
}

/// Reads a line from the terminal without echoing it.
fn read_secret(prompt: &str) -> Result<String, String> {
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    let echo_off = std::process::Command::new("stty")
        .arg("-echo")
        .stdin(std::process::Stdio::inherit())
        .status()
        .is_ok_and(|s| s.success());
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    if echo_off {
        let _ = std::process::Command::new("stty")
            .arg("echo")
            .stdin(std::process::Stdio::inherit())
            .status();
        println!();
    }
    match read {
        Ok(0) => Err("Login cancelled".into()),
        Ok(_) => Ok(line.trim_end_matches(['\r', '\n']).to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn api_key(provider: &str, name: &str, path: &std::path::Path) -> Result<(), String> {
    let key = read_secret(&format!("Enter {name} API key: "))?;
    let provider = provider.to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(oauth::store::modify(path, &provider, |_| async move {
        Ok(Some(json!({"type": "api_key", "key": key})))
    }))
    .map(|_| ())
}

/// Signs in with the provider's account and stores the credential.
fn account(
    provider: &str,
    flow: &oauth::Flow,
    browser: bool,
    path: &std::path::Path,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let provider = provider.to_string();
    rt.block_on(async move {
        let mut ui = Terminal::new(provider.clone(), browser);
        ui.settings = Some(path.with_file_name("settings.json"));
        let credential = oauth::login::login(flow, &mut ui).await?;
        oauth::store::modify(path, &provider, |_| async move { Ok(Some(credential)) })
            .await
            .map(|_| ())
    })
}

/// The terminal side of a sign-in, as Pi's `createLoginInteraction`: the browser method is
/// taken unless `--no-browser`, the others are named in a hint.
struct Terminal {
    provider: String,
    browser: bool,
    skipped: Vec<&'static str>,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// The global settings file, which holds this installation's `deviceId`.
    settings: Option<std::path::PathBuf>,
}

impl Terminal {
    fn new(provider: String, browser: bool) -> Terminal {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        // Lines are read on their own thread so a browser callback can finish a step while a
        // paste prompt waits.
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Terminal {
            provider,
            browser,
            skipped: Vec::new(),
            lines: rx,
            settings: None,
        }
    }

    async fn line(&mut self, prompt: String) -> Result<String, String> {
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        self.lines
            .recv()
            .await
            .ok_or_else(|| "Login cancelled".to_string())
    }

    fn open(&self, url: &str) {
        if self.browser && (url.starts_with("https://") || url.starts_with("http://")) {
            let _ = std::process::Command::new("xdg-open")
                .arg(url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
    }
}

fn with_placeholder(message: &str, placeholder: Option<&str>) -> String {
    match placeholder {
        Some(p) => format!("{message} ({p}): "),
        None => format!("{message}: "),
    }
}

impl Interaction for Terminal {
    fn notify(&mut self, notice: Notice) {
        match notice {
            Notice::AuthUrl { url, instructions } => {
                println!("Open this URL to sign in:\n  {url}");
                if let Some(i) = instructions {
                    println!("{i}");
                }
                self.open(&url);
                let rerun = format!("\"pi auth login {} --no-browser\"", self.provider);
                match self.skipped.as_slice() {
                    [] => {}
                    [only] => println!("To use \"{only}\" instead, run {rerun}"),
                    many => println!(
                        "Other sign-in methods: {}. Run {rerun} to choose one.",
                        many.iter()
                            .map(|l| format!("\"{l}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            Notice::DeviceCode {
                user_code,
                verification_uri,
            } => {
                println!("Open {verification_uri} and enter code: {user_code}");
                self.open(&verification_uri);
                println!("Waiting for authentication...");
            }
            Notice::Progress(m) => println!("{m}"),
        }
    }

    fn select<'a>(&'a mut self, message: &'a str, options: &'a [Choice]) -> Answer<'a> {
        Box::pin(async move {
            let Some((first, others)) = options.split_first() else {
                return Err("no sign-in method".to_string());
            };
            if self.browser {
                self.skipped = others.iter().map(|(_, l)| *l).collect();
                return Ok(first.0.to_string());
            }
            match others {
                [] => Ok(first.0.to_string()),
                [only] => {
                    println!("{message} {}", only.1);
                    Ok(only.0.to_string())
                }
                many => {
                    println!("{message}");
                    for (i, (_, label)) in many.iter().enumerate() {
                        println!("  {}. {label}", i + 1);
                    }
                    loop {
                        let answer = self.line(format!("Select 1-{}: ", many.len())).await?;
                        let pick = answer
                            .trim()
                            .parse::<usize>()
                            .ok()
                            .and_then(|n| n.checked_sub(1))
                            .and_then(|i| many.get(i));
                        if let Some((id, _)) = pick {
                            return Ok(id.to_string());
                        }
                        println!("Enter a number from 1 to {}.", many.len());
                    }
                }
            }
        })
    }

    fn ask<'a>(&'a mut self, message: &'a str, placeholder: Option<&'a str>) -> Answer<'a> {
        Box::pin(async move { self.line(with_placeholder(message, placeholder)).await })
    }

    fn paste<'a>(&'a mut self, message: &'a str, placeholder: Option<&'a str>) -> Answer<'a> {
        self.ask(message, placeholder)
    }

    /// Pi's `getOrCreateDeviceId`: the global settings' `deviceId`, created (and saved) on
    /// first use.
    fn device_id(&mut self) -> Option<String> {
        let path = self.settings.as_ref()?;
        let layer = crate::settings::file::read_layer(path).ok()?;
        if let Some(id) = layer
            .get("deviceId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            return Some(id.to_string());
        }
        let id = pi_session::ids::uuid_v4();
        let update = crate::settings::file::KeyUpdate::Top {
            key: "deviceId".into(),
            value: Value::String(id.clone()),
        };
        crate::settings::file::persist(path, &[update]).ok()?;
        Some(id)
    }
}

/// A provider by id, else by display name (case-insensitive), as Pi's provider matching.
pub(crate) fn match_provider(registry: &ModelRegistry, reference: &str) -> Option<String> {
    let ids = registry.provider_ids();
    if let Some(id) = ids.iter().find(|id| **id == reference) {
        return Some(id.to_string());
    }
    let lower = reference.to_lowercase();
    ids.iter()
        .find(|id| {
            id.to_lowercase() == lower
                || registry
                    .provider_name(id)
                    .is_some_and(|n| n.to_lowercase() == lower)
        })
        .map(|id| id.to_string())
}

/// Control characters shown as `?`-free escapes would be; Pi replaces them.
pub(crate) fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}
