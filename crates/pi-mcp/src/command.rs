//! `/mcp` outside the TUI (Pi's RPC and print forms): the status of every server, and
//! `login`, `logout` and `reconnect` of one, asking which when the name is left out and
//! several qualify.

use crate::connection::{Connection, State};
use crate::manager::{McpManager, Notice, describe_state, lock};
use crate::oauth::FlowError;
use crate::oauth::signin::{self, BoxFuture, SignIn, SignInPrompt};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const USAGE: &str =
    "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]";
const NO_OAUTH: &str =
    "No enabled MCP server uses OAuth. Only HTTP servers without an Authorization header do.";

/// What `/mcp` needs from the client: notices, a choice, a line of text, a browser.
pub trait CommandUi: Send + Sync {
    fn notify(&self, message: String, kind: Notice) -> BoxFuture<'_, ()>;
    /// One of `options`, or `None` when dismissed.
    fn select(&self, title: String, options: Vec<String>) -> BoxFuture<'_, Option<String>>;
    /// A line of text; `None` when dismissed or when `cancel` fired first.
    fn input(
        &self,
        title: String,
        placeholder: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Option<String>>;
    fn open_url(&self, url: &str);
    /// Servers connected or signed in: the discovery tools may need to become active.
    fn servers_changed(&self);
}

/// Opens a URL with the desktop's handler (`xdg-open`); a missing launcher is no error, the
/// URL is shown anyway. The launcher gets its own process group (Pi's `detached`) and is
/// reaped in the background so it leaves no zombie.
pub fn open_browser(url: &str) {
    use std::os::unix::process::CommandExt as _;
    let child = std::process::Command::new("xdg-open")
        .arg(url)
        .current_dir("/")
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = child {
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }
}

/// How `pickServer` chooses.
struct Pick {
    eligible: fn(&Connection) -> bool,
    preferred: fn(&Connection) -> bool,
    none: &'static str,
}

const OAUTH_PICK: Pick = Pick {
    eligible: |c| c.oauth_url().is_some(),
    preferred: |c| c.state() == Some(State::NeedsAuth),
    none: NO_OAUTH,
};

const RECONNECT_PICK: Pick = Pick {
    eligible: |_| true,
    preferred: |c| matches!(c.state(), Some(State::Failed | State::Disconnected)),
    none: "No enabled MCP server to reconnect.",
};

/// The RPC side of a sign-in: the URL as a notice, the pasted redirect URL from an input dialog.
struct DialogPrompt<'a> {
    ui: &'a dyn CommandUi,
    name: String,
}

impl SignInPrompt for DialogPrompt<'_> {
    fn show_authorization_url(&self, url: &str) -> BoxFuture<'_, ()> {
        let url = url.to_string();
        Box::pin(async move {
            self.ui
                .notify(
                    format!(
                        "Sign in to MCP server \"{}\" in your browser:\n{url}",
                        self.name
                    ),
                    Notice::Info,
                )
                .await;
            self.ui.open_url(&url);
        })
    }

    fn redirect_url(&self, cancel: CancellationToken) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            self.ui
                .input(
                    format!(
                        "Waiting for sign-in to \"{}\". If the browser cannot reach this machine, paste the URL it was redirected to.",
                        self.name
                    ),
                    "http://127.0.0.1:.../callback?code=...".into(),
                    cancel,
                )
                .await
        })
    }
}

impl McpManager {
    /// `/mcp` outside the TUI: the status of every server.
    pub fn status_text(&self) -> String {
        let inner = lock(&self.inner);
        if inner.servers.is_empty() && self.config_errors.is_empty() && inner.overridden.is_empty()
        {
            let path = self.agent_dir.join("mcp.json");
            return format!(
                "No MCP servers configured. Add them to {} or .pi/mcp.json.",
                path.display()
            );
        }
        let mut lines: Vec<String> = inner
            .servers
            .iter()
            .map(|s| {
                let name = &s.entry.name;
                let exposure = s.entry.exposure().as_str();
                let state = s.conn.as_ref().and_then(|c| c.state());
                if state == Some(State::NeedsAuth) {
                    return format!("{name}: needs sign-in, run /mcp login {name} ({exposure})");
                }
                let tools = match (state, &s.conn) {
                    (Some(State::Connected), Some(c)) => format!(", {} tools", c.tools().len()),
                    _ => String::new(),
                };
                let shown = if !s.entry.enabled() {
                    "disabled".to_string()
                } else {
                    match state {
                        Some(State::Disconnected) => "disconnected, reconnects on next call".into(),
                        Some(st) => st.as_str().to_string(),
                        None => "starting".into(),
                    }
                };
                let error = match (&s.conn, state) {
                    (Some(c), st) if st != Some(State::Connected) => c
                        .error()
                        .map(|e| {
                            format!("\n    {}", e.split('\n').collect::<Vec<_>>().join("\n    "))
                        })
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                format!("{name}: {shown}{tools} ({exposure}){error}")
            })
            .collect();
        for e in &self.config_errors {
            lines.push(format!("config error: {e}"));
        }
        for o in &inner.overridden {
            lines.push(format!("overridden: {o}"));
        }
        lines.join("\n")
    }

    /// `/mcp [login|logout|reconnect] [server]`.
    pub async fn command(&self, args: &str, ui: &dyn CommandUi) {
        let words: Vec<&str> = args.split_whitespace().collect();
        if words.len() > 2 {
            return ui.notify(USAGE.into(), Notice::Warning).await;
        }
        let mut startup = self.startup.subscribe();
        let _ = startup.wait_for(|done| *done).await;
        let name = words.get(1).copied();
        match words.first().copied() {
            None => ui.notify(self.status_text(), Notice::Info).await,
            Some("login") => {
                if let Some(conn) = self.pick_server(name, ui, &OAUTH_PICK).await {
                    self.login(&conn, ui).await;
                }
            }
            Some("logout") => {
                if let Some(conn) = self.pick_server(name, ui, &OAUTH_PICK).await {
                    let removed = self.sign_out(&conn).await;
                    let text = if removed {
                        format!("Signed out of MCP server \"{}\".", conn.name())
                    } else {
                        format!("No stored credentials for MCP server \"{}\".", conn.name())
                    };
                    ui.notify(text, Notice::Info).await;
                }
            }
            Some("reconnect") => {
                if let Some(conn) = self.pick_server(name, ui, &RECONNECT_PICK).await {
                    match conn.reconnect().await {
                        Err(e) => ui.notify(e, Notice::Error).await,
                        Ok(()) => {
                            ui.servers_changed();
                            let state = lock(&self.inner)
                                .servers
                                .iter()
                                .find(|s| s.entry.name == conn.name())
                                .map(|s| describe_state(s, true))
                                .unwrap_or_default();
                            ui.notify(
                                format!("Reconnected to MCP server \"{}\" ({state}).", conn.name()),
                                Notice::Info,
                            )
                            .await;
                        }
                    }
                }
            }
            Some(_) => ui.notify(USAGE.into(), Notice::Warning).await,
        }
    }

    /// The server a subcommand is for: the named one, else the only (or only preferred)
    /// candidate, else the user's choice.
    async fn pick_server(
        &self,
        name: Option<&str>,
        ui: &dyn CommandUi,
        pick: &Pick,
    ) -> Option<Arc<Connection>> {
        let candidates: Vec<(String, Option<Arc<Connection>>)> = lock(&self.inner)
            .servers
            .iter()
            .map(|s| (s.entry.name.clone(), s.conn.clone()))
            .collect();
        let eligible = |c: &Option<Arc<Connection>>| c.as_ref().is_some_and(|c| (pick.eligible)(c));
        if let Some(n) = name {
            match candidates.iter().find(|(c, _)| c == n) {
                None => {
                    ui.notify(format!("No MCP server named \"{n}\"."), Notice::Error)
                        .await
                }
                Some((_, conn)) if eligible(conn) => return conn.clone(),
                Some(_) => ui.notify(pick.none.into(), Notice::Error).await,
            }
            return None;
        }
        let eligible: Vec<Arc<Connection>> = candidates
            .into_iter()
            .filter(|(_, c)| eligible(c))
            .filter_map(|(_, c)| c)
            .collect();
        if eligible.is_empty() {
            ui.notify(pick.none.into(), Notice::Info).await;
            return None;
        }
        let preferred: Vec<&Arc<Connection>> =
            eligible.iter().filter(|c| (pick.preferred)(c)).collect();
        if eligible.len() == 1 {
            return eligible.into_iter().next();
        }
        if preferred.len() == 1 {
            return Some(Arc::clone(preferred[0]));
        }
        let names = eligible.iter().map(|c| c.name().to_string()).collect();
        let choice = ui.select("MCP server".into(), names).await?;
        eligible.into_iter().find(|c| c.name() == choice)
    }

    /// Removes the stored credentials and disconnects; whether any were stored.
    async fn sign_out(&self, conn: &Connection) -> bool {
        let (Some(url), Some(store)) = (conn.oauth_url(), self.credentials()) else {
            return false;
        };
        let removed = store.remove(conn.name(), url).await.unwrap_or(false);
        conn.sign_out().await;
        removed
    }

    /// Signs in, then reconnects (Pi's `loginCommand` outside the TUI).
    async fn login(&self, conn: &Arc<Connection>, ui: &dyn CommandUi) {
        let name = conn.name().to_string();
        let failure = match self.sign_in(conn, ui).await {
            Err(FlowError::Cancelled) => Some("Sign-in cancelled.".to_string()),
            Err(e) => Some(format!("Sign-in failed: {e}")),
            Ok(()) => {
                // The challenge that asked for this sign-in (for more scope, say) is answered.
                conn.clear_challenge();
                conn.reconnect()
                    .await
                    .err()
                    .map(|e| format!("Signed in, but {e}"))
            }
        };
        if self.closing.is_cancelled() {
            return;
        }
        match failure {
            Some(f) => {
                let kind = if f == "Sign-in cancelled." {
                    Notice::Info
                } else {
                    Notice::Error
                };
                ui.notify(f, kind).await;
            }
            None => {
                ui.servers_changed();
                ui.notify(
                    format!(
                        "Signed in to MCP server \"{name}\" ({} tools).",
                        conn.tools().len()
                    ),
                    Notice::Info,
                )
                .await;
            }
        }
    }

    async fn sign_in(&self, conn: &Arc<Connection>, ui: &dyn CommandUi) -> Result<(), FlowError> {
        let Some(url) = conn.oauth_url().map(str::to_string) else {
            return Err(FlowError::Other(format!(
                "MCP server \"{}\" does not use OAuth.",
                conn.name()
            )));
        };
        let store = self
            .credentials()
            .ok_or_else(|| FlowError::Other("no credential store".into()))?
            .for_server(conn.name(), &url);
        let s = SignIn {
            server_url: url,
            store,
            settings: conn.oauth_settings().map_err(FlowError::Other)?,
            challenge: conn.challenge(),
            cancel: self.closing.child_token(),
        };
        let prompt = DialogPrompt {
            ui,
            name: conn.name().to_string(),
        };
        signin::sign_in(&s, &prompt).await
    }
}
