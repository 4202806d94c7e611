//! `pi auth`: `print-api-key`, `print-bearer-token`, `check` and `logout` as Pi 1.6.0 words and
//! exits them; `login` is in [`super::auth_login`]. Credentials are read from and written to
//! `<agent-dir>/auth.json` under Pi's lock, OAuth tokens refreshed as a request would.

use super::auth_login::{match_provider, printable};
use pi_registry::oauth;
use pi_registry::{ModelRegistry, RequestAuth};
use serde_json::{Map, Value};

const HELP: &str = "Usage:
  pi auth login <provider> [--api-key] [--no-browser]
  pi auth logout <provider>
  pi auth print-api-key [--provider <provider>] [--model <model>]
  pi auth print-bearer-token [--provider <provider>] [--model <model>] [--min-expiry <duration>]
  pi auth check [--provider <provider>] [--model <model>] [--json] [--credentials] [--no-refresh]

Log in to and out of model providers, print their credentials for external clients, or check that they are ready.
Credentials are stored in ~/.pi/agent/auth.json.

Commands:
  login <provider>        Sign in with an account in the browser, or save an API key, then exit
  logout <provider>       Remove the stored credentials; environment variables and models.json stay
  print-api-key           Print the resolved API key
  print-bearer-token      Print a resolved OAuth bearer token (refreshes if expired)
  check                   Print ready, not_ready, or invalid; exit with 0, 1, or 2

Options for print-api-key, print-bearer-token, and check (at least one is required):
  --provider <provider>   Resolve credentials for a provider
  --model <model>         Resolve credentials from a model

Options for login:
  --api-key               Save an API key instead of signing in with an account
  --no-browser            Do not open a browser; use another sign-in method, e.g. device code

Other options:
  --min-expiry <duration> Minimum remaining token lifetime for print-bearer-token, e.g. 30m or 1h
  --json                  Print the check result as JSON
  --credentials           Emit the credential from check, or include it in JSON output
  --no-refresh            Do not refresh expired OAuth credentials during check
";

/// `print-bearer-token`'s default minimum remaining lifetime.
const DEFAULT_MIN_EXPIRY_MS: u64 = 30 * 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Check,
    ApiKey,
    BearerToken,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Check => "auth check",
            Kind::ApiKey => "auth print-api-key",
            Kind::BearerToken => "auth print-bearer-token",
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Kind::Check => {
                "pi auth check --provider <provider> [--json] [--credentials] [--no-refresh]"
            }
            Kind::ApiKey => "pi auth print-api-key --provider <provider> [--model <model>]",
            Kind::BearerToken => {
                "pi auth print-bearer-token --provider <provider> [--model <model>] [--min-expiry <duration>]"
            }
        }
    }
}

/// A failure worded for the user (Pi's `AuthCommandError`); other failures print a generic text.
struct UserError(String);

struct Command {
    kind: Kind,
    args: Vec<String>,
    json: bool,
    credentials: bool,
    no_refresh: bool,
    min_expiry_ms: Option<u64>,
}

/// Runs `pi auth <args>`; the process exit code.
pub fn run(args: &[String]) -> i32 {
    let help =
        args.first().is_none_or(|a| a == "help") || args.iter().any(|a| a == "--help" || a == "-h");
    if help {
        print!("{HELP}");
        return 0;
    }
    let without_offline = || -> Vec<String> {
        args[1..]
            .iter()
            .filter(|a| *a != "--offline")
            .cloned()
            .collect()
    };
    match args[0].as_str() {
        "login" => return super::auth_login::run(&without_offline()),
        "logout" => return block_on(logout(&without_offline())),
        _ => {}
    }
    let command = match parse(args) {
        Ok(c) => c,
        Err(UserError(m)) => {
            eprintln!("Error: {m}");
            return 1;
        }
    };
    let (parsed, diagnostics) = crate::cli::args::parse_flags(&command.args);
    if let Some(flag) = parsed.unknown_flags.first() {
        eprintln!(
            "Unknown option --{} for \"{}\".",
            flag.name,
            command.kind.name()
        );
        eprintln!("Use \"pi --help\" or \"{}\".", command.kind.usage());
        return 1;
    }
    let result = if !diagnostics.is_empty() {
        Err(Some(
            diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("\n"),
        ))
    } else if command.kind == Kind::Check {
        match validate(&parsed, Kind::Check) {
            Ok(req) => return block_on(check(&command, req)),
            Err(UserError(m)) => Err(Some(m)),
        }
    } else {
        block_on(print_credential(&parsed, &command))
    };
    match result {
        Ok(value) => {
            println!("{value}");
            0
        }
        Err(message) => {
            eprintln!(
                "Error: {}",
                message.unwrap_or_else(|| "Failed to resolve credential".into())
            );
            if command.kind == Kind::Check { 2 } else { 1 }
        }
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(f),
        Err(e) => panic!("cannot start the async runtime: {e}"),
    }
}

fn parse(args: &[String]) -> Result<Command, UserError> {
    let kind = match args[0].as_str() {
        "check" => Kind::Check,
        "print-api-key" => Kind::ApiKey,
        "print-bearer-token" => Kind::BearerToken,
        other => {
            return Err(UserError(format!(
                "Unknown auth command \"{other}\". Use \"pi auth login\", \"pi auth logout\", \"pi auth print-api-key\", \"pi auth print-bearer-token\", or \"pi auth check\"."
            )));
        }
    };
    let mut c = Command {
        kind,
        args: Vec::new(),
        json: false,
        credentials: false,
        no_refresh: false,
        min_expiry_ms: None,
    };
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        match arg.as_str() {
            "--min-expiry" => {
                if kind != Kind::BearerToken {
                    return Err(UserError(
                        "--min-expiry is only supported by print-bearer-token".into(),
                    ));
                }
                i += 1;
                c.min_expiry_ms =
                    Some(args.get(i).and_then(|v| duration_ms(v)).ok_or_else(|| {
                        UserError("--min-expiry must use a duration such as 30m or 1h".into())
                    })?);
            }
            "--json" | "--credentials" | "--no-refresh" => {
                if kind != Kind::Check {
                    return Err(UserError(format!("{arg} is only supported by auth check")));
                }
                match arg.as_str() {
                    "--json" => c.json = true,
                    "--credentials" => c.credentials = true,
                    _ => c.no_refresh = true,
                }
            }
            _ => c.args.push(arg.clone()),
        }
        i += 1;
    }
    Ok(c)
}

/// `30m`, `1h`, `45s`, `500ms` (case-insensitive units) in milliseconds.
fn duration_ms(v: &str) -> Option<u64> {
    let digits = v.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let amount: u64 = v[..digits].parse().ok()?;
    let unit = match v[digits..].to_ascii_lowercase().as_str() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    Some(amount * unit)
}

struct Requested {
    provider: Option<String>,
    model: Option<String>,
}

fn validate(args: &crate::cli::Args, kind: Kind) -> Result<Requested, UserError> {
    let clean = |v: &Option<String>| {
        v.as_deref()
            .map(pi_js::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let (provider, model) = (clean(&args.provider), clean(&args.model));
    if args.api_key.is_some() || !args.messages.is_empty() || !args.file_args.is_empty() {
        return Err(UserError(
            "Auth commands only accept --provider and --model".into(),
        ));
    }
    if provider.is_none() && model.is_none() {
        return Err(UserError(if kind == Kind::Check {
            "Auth checks require --provider <provider> or --model <model>".into()
        } else {
            "Credential printing requires --provider <provider> or --model <model>".into()
        }));
    }
    Ok(Requested { provider, model })
}

/// What an external client would use: the API key, else a bearer `Authorization` header's token.
fn credential_of(auth: &RequestAuth) -> Option<String> {
    if let Some(k) = auth.api_key.as_ref().filter(|k| !k.is_empty()) {
        return Some(k.clone());
    }
    let header = auth
        .headers
        .iter()
        .flatten()
        .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))?
        .1
        .as_deref()?;
    let (scheme, token) = header.split_once(char::is_whitespace)?;
    let token = token.trim_start();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_string())
}

/// The request auth of a provider (or one of its models), refreshing an OAuth login that has
/// less than `min_validity_ms` (at least five minutes) left.
async fn provider_auth(
    registry: &std::sync::Mutex<ModelRegistry>,
    provider: &str,
    model: Option<&pi_protocol::model::Model>,
    min_validity_ms: Option<u64>,
    refresh: bool,
) -> Result<Option<RequestAuth>, Option<String>> {
    let lock = || {
        registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let model = match model {
        Some(m) => m.clone(),
        None => match lock().first_model(provider) {
            Some(m) => (*m).clone(),
            None => return Ok(None),
        },
    };
    let first = lock().request_auth(&model);
    match first {
        Ok(a) => Ok(Some(a)),
        Err(pi_registry::AuthError::NeedsOAuth { .. }) => {
            let Some((flow, path)) = lock().oauth_login(provider) else {
                return Ok(None);
            };
            if !refresh {
                let stored = oauth::store::read(&path).map_err(|_| None)?;
                let access = stored
                    .get(provider)
                    .and_then(|c| c.get("access"))
                    .and_then(Value::as_str)
                    .map(String::from);
                return Ok(access.map(|a| RequestAuth {
                    api_key: Some(a),
                    ..RequestAuth::default()
                }));
            }
            match oauth::resolve(&path, provider, &flow, min_validity_ms).await {
                Ok(Some(auth)) => lock()
                    .request_auth_with(&model, auth)
                    .map(Some)
                    .map_err(|_| None),
                Ok(None) => Ok(None),
                Err(_) => Err(None),
            }
        }
        Err(
            pi_registry::AuthError::NoApiKey { .. } | pi_registry::AuthError::OAuthFailed { .. },
        ) => Ok(None),
        Err(_) => Err(None),
    }
}

async fn print_credential(args: &crate::cli::Args, c: &Command) -> Result<String, Option<String>> {
    let req = validate(args, c.kind).map_err(|UserError(m)| Some(m))?;
    let registry = crate::runtime::cli_registry();
    let types: Vec<(String, String)> = registry.stored_credentials().map_err(|_| None)?;
    let type_of = |p: &str| types.iter().find(|(id, _)| id == p).map(|(_, t)| t.clone());
    let mut targets: Vec<(String, Option<std::sync::Arc<pi_protocol::model::Model>>)> = Vec::new();
    if let Some(p) = &req.provider {
        if !registry.provider_ids().contains(&p.as_str()) {
            return Err(Some(format!(
                "Unknown provider \"{p}\". Use --list-models to see available providers."
            )));
        }
        match &req.model {
            Some(m) => {
                let resolved = registry.resolve_cli_model(Some(p), m, None, false);
                match (resolved.error, resolved.model) {
                    (None, Some(model)) => targets.push((p.clone(), Some(model))),
                    (e, _) => {
                        return Err(Some(e.unwrap_or_else(|| {
                            "Unable to resolve the requested provider/model".into()
                        })));
                    }
                }
            }
            None => targets.push((p.clone(), None)),
        }
    } else if let Some(m) = &req.model {
        for id in registry.provider_ids() {
            if type_of(id).is_none() {
                continue;
            }
            let resolved = registry.resolve_cli_model(Some(id), m, None, false);
            if resolved.error.is_none()
                && let Some(model) = resolved.model
                && resolved.warning.is_none()
            {
                targets.push((id.to_string(), Some(model)));
            }
        }
        if targets.is_empty() {
            return Err(Some(format!(
                "Model \"{m}\" not found. Use --list-models to see available models."
            )));
        }
    }
    let registry = std::sync::Mutex::new(registry);
    let mut found: Vec<(String, String)> = Vec::new();
    for (provider, model) in &targets {
        let t = type_of(provider);
        if c.kind == Kind::ApiKey && t.as_deref() == Some("oauth") {
            continue;
        }
        if c.kind == Kind::BearerToken && t.as_deref() != Some("oauth") {
            continue;
        }
        let min =
            (c.kind == Kind::BearerToken).then(|| c.min_expiry_ms.unwrap_or(DEFAULT_MIN_EXPIRY_MS));
        let auth = provider_auth(&registry, provider, model.as_deref(), min, true).await?;
        if let Some(v) = auth.as_ref().and_then(credential_of) {
            found.push((provider.clone(), v));
        }
    }
    match found.len() {
        1 => Ok(found.remove(0).1),
        0 => {
            let first = targets.first().map(|(p, _)| p.clone());
            let t = first.as_deref().and_then(type_of);
            if let (Some(p), true) = (&first, req.provider.is_some()) {
                if c.kind == Kind::ApiKey && t.as_deref() == Some("oauth") {
                    return Err(Some(format!(
                        "Provider \"{p}\" is configured with OAuth, not an API key"
                    )));
                }
                if c.kind == Kind::BearerToken && t.as_deref() != Some("oauth") {
                    return Err(Some(format!(
                        "Provider \"{p}\" is not configured with an OAuth bearer token"
                    )));
                }
            }
            Err(Some(format!(
                "No usable {} is configured",
                if c.kind == Kind::ApiKey {
                    "API key"
                } else {
                    "OAuth bearer token"
                }
            )))
        }
        _ => Err(Some(format!(
            "Multiple configured providers matched ({}). Specify --provider.",
            found
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn status(status: &str, provider: &str, extra: (&str, &str)) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("status".into(), status.into());
    m.insert("provider".into(), provider.into());
    m.insert(extra.0.into(), extra.1.into());
    m
}

async fn check(c: &Command, req: Requested) -> i32 {
    // Any failure past the argument check, a model that does not resolve included, reads
    // as an invalid state for what was asked.
    let (result, credential) = match check_inner(c, &req).await {
        Ok(v) => v,
        Err(UserError(_)) => {
            let asked = req
                .provider
                .clone()
                .or(req.model.clone())
                .unwrap_or_default();
            (status("invalid", &asked, ("reason", "invalid_state")), None)
        }
    };
    let output = if c.json {
        let mut v = result.clone();
        if let Some(cred) = &credential {
            v.insert("credentials".into(), cred.clone().into());
        }
        pi_js::json::to_js_string(&Value::Object(v)).unwrap_or_default()
    } else {
        credential.unwrap_or_else(|| result["status"].as_str().unwrap_or("").to_string())
    };
    println!("{output}");
    match result["status"].as_str() {
        Some("ready") => 0,
        Some("not_ready") => 1,
        _ => 2,
    }
}

async fn check_inner(
    c: &Command,
    req: &Requested,
) -> Result<(Map<String, Value>, Option<String>), UserError> {
    let registry = crate::runtime::cli_registry();
    let mut provider = req.provider.clone();
    if let Some(m) = &req.model {
        // Pi's check builds its model runtime without an availability snapshot, so no provider
        // counts as authenticated while the reference is resolved.
        let resolved = registry.resolve_cli_model(req.provider.as_deref(), m, None, true);
        match (resolved.error, resolved.model) {
            (None, Some(model)) => provider = Some(model.provider.clone()),
            (e, _) => {
                return Err(UserError(
                    e.unwrap_or_else(|| format!("Unable to resolve model \"{m}\"")),
                ));
            }
        }
    }
    let Some(provider) = provider else {
        return Err(UserError("Unable to resolve an auth provider".into()));
    };
    let invalid = || {
        (
            status("invalid", &provider, ("reason", "invalid_state")),
            None,
        )
    };
    if registry.error_text().is_some() || registry.stored_credentials().is_err() {
        return Ok(invalid());
    }
    if !registry.provider_ids().contains(&provider.as_str()) {
        return Ok((
            status("not_ready", &provider, ("reason", "provider_not_found")),
            None,
        ));
    }
    if !registry.has_configured_auth(&provider) {
        return Ok((
            status(
                "not_ready",
                &provider,
                ("reason", "credentials_not_configured"),
            ),
            None,
        ));
    }
    let oauth = registry.is_using_oauth(&provider);
    let registry = std::sync::Mutex::new(registry);
    let refresh = !c.no_refresh;
    let auth = if refresh || c.credentials {
        match provider_auth(&registry, &provider, None, None, refresh).await {
            Ok(a) => a,
            Err(_) => return Ok(invalid()),
        }
    } else {
        None
    };
    if refresh && auth.is_none() {
        return Ok((
            status(
                "not_ready",
                &provider,
                ("reason", "credentials_not_configured"),
            ),
            None,
        ));
    }
    let ready = status(
        "ready",
        &provider,
        ("authType", if oauth { "oauth" } else { "api_key" }),
    );
    if !c.credentials {
        return Ok((ready, None));
    }
    match auth.as_ref().and_then(credential_of) {
        Some(cred) => Ok((ready, Some(cred))),
        None => Ok((
            status(
                "not_ready",
                &provider,
                ("reason", "credential_not_available"),
            ),
            None,
        )),
    }
}

/// `pi auth logout <provider>`.
async fn logout(args: &[String]) -> i32 {
    let usage = || {
        eprintln!("Usage: pi auth logout <provider>");
        1
    };
    let [provider_ref] = args else {
        return usage();
    };
    if provider_ref.starts_with('-') {
        return usage();
    }
    let registry = crate::runtime::cli_registry();
    let stored = match registry.stored_credentials() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("Could not read stored credentials: {e}");
            return 1;
        }
    };
    let provider = match_provider(&registry, provider_ref);
    let id = provider.clone().unwrap_or_else(|| provider_ref.clone());
    let credential = stored.iter().find(|(p, _)| *p == id);
    if provider.is_none() && credential.is_none() {
        eprintln!("Unknown provider \"{}\".", printable(provider_ref));
        let mut ids: Vec<&str> = stored.iter().map(|(p, _)| p.as_str()).collect();
        ids.sort_unstable();
        eprintln!(
            "Stored credentials: {}",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        );
        return 1;
    }
    let name = provider
        .as_deref()
        .and_then(|p| registry.provider_name(p))
        .unwrap_or(provider_ref)
        .to_string();
    let Some((_, kind)) = credential else {
        println!(
            "No stored credentials for {name}. Environment variables and models.json config are unchanged."
        );
        return 0;
    };
    if let Err(e) = oauth::store::remove(registry.auth_path(), &id).await {
        eprintln!("Logout failed: {e}");
        return 1;
    }
    if kind == "oauth" {
        println!("Logged out of {name}.");
    } else {
        println!(
            "Removed stored API key for {name}. Environment variables and models.json config are unchanged."
        );
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations() {
        assert_eq!(duration_ms("30m"), Some(1_800_000));
        assert_eq!(duration_ms("1H"), Some(3_600_000));
        assert_eq!(duration_ms("250ms"), Some(250));
        assert_eq!(duration_ms("m"), None);
        assert_eq!(duration_ms("10d"), None);
    }

    #[test]
    fn bearer_headers_give_their_token() {
        let auth = RequestAuth {
            headers: Some(vec![("Authorization".into(), Some("Bearer t0k".into()))]),
            ..RequestAuth::default()
        };
        assert_eq!(credential_of(&auth).as_deref(), Some("t0k"));
    }

    #[test]
    fn json_results_keep_pis_key_order() {
        let v = status("not_ready", "p", ("reason", "provider_not_found"));
        assert_eq!(
            Value::Object(v),
            json!({"status": "not_ready", "provider": "p", "reason": "provider_not_found"})
        );
    }
}
