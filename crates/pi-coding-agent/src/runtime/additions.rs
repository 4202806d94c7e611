//! The commands pi in Rust adds to Pi's protocol (see `pi_protocol::additions`): the handshake,
//! session listing and reading, and the tool approval policy.

use super::Runtime;
use pi_protocol::additions::{
    ADDITIONS, ApprovalAction, COMPATIBLE_NAME, COMPATIBLE_VERSION, PROTOCOL_VERSION, ProgramInfo,
    ProtocolInfo, SessionList, ToolApprovalPolicy,
};
use pi_protocol::command::{ADDITION_COMMAND_TYPES, COMMAND_TYPES};
use pi_protocol::event::EVENT_TYPES;
use pi_protocol::extension_ui::UI_METHODS;
use pi_protocol::record::OrderedMap;
use pi_session::SessionScope;
use pi_session::listing::{DEFAULT_PAGE, ListRequest};

/// What `list_sessions` asks for, as sent.
pub struct ListSessionsParams {
    pub cwd: Option<String>,
    pub all: bool,
    pub query: Option<String>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
}

impl Runtime {
    /// `get_protocol_info`.
    pub fn protocol_info(&self) -> ProtocolInfo {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        ProtocolInfo {
            protocol_version: PROTOCOL_VERSION,
            program: ProgramInfo {
                name: "pi-rust".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            compatible_with: ProgramInfo {
                name: COMPATIBLE_NAME.into(),
                version: COMPATIBLE_VERSION.into(),
            },
            commands: COMMAND_TYPES
                .iter()
                .chain(ADDITION_COMMAND_TYPES)
                .map(|s| s.to_string())
                .collect(),
            events: strings(EVENT_TYPES),
            extension_ui_methods: strings(UI_METHODS),
            additions: strings(ADDITIONS),
        }
    }

    /// `list_sessions`: read on a blocking thread (it may stat thousands of files).
    pub async fn list_sessions(&self, params: ListSessionsParams) -> Result<SessionList, String> {
        let env = &self.core.env;
        let cwd = match &params.cwd {
            Some(c) => pi_session::paths::resolve_path(c, &env.cwd, &env.home),
            // The session's project (another one's after a switch).
            None => self.core.cwd(),
        };
        let request = ListRequest {
            scope: SessionScope {
                cwd,
                agent_dir: env.agent_dir.clone(),
                session_dir: self.core.session_dir.clone(),
            },
            all: params.all,
            query: params.query,
            limit: params
                .limit
                .map_or(DEFAULT_PAGE, |l| usize::try_from(l).unwrap_or(usize::MAX)),
            cursor: params.cursor,
        };
        tokio::task::spawn_blocking(move || pi_session::listing::list_sessions(&request))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }

    /// A `read_session` path, resolved as `switch_session` resolves its path.
    pub fn session_path(&self, path: &str) -> std::path::PathBuf {
        pi_session::paths::resolve_path(path, &self.core.env.cwd, &self.core.env.home)
    }

    /// `get_tool_approvals`.
    pub fn tool_approvals(&self) -> ToolApprovalPolicy {
        self.core.approvals.policy()
    }

    /// `set_tool_approvals`.
    pub fn set_tool_approvals(
        &self,
        rules: OrderedMap<ApprovalAction>,
        timeout_ms: Option<u64>,
    ) -> Result<ToolApprovalPolicy, String> {
        self.core.approvals.set(rules, timeout_ms)
    }

    /// Routes a client's dialog answer: to the tool approval waiting for it, else to the
    /// extensions.
    pub(crate) fn approval_answer(
        &self,
        response: &pi_protocol::command::ExtensionUiResponse,
    ) -> bool {
        self.core.approvals.answer(response)
    }
}
