//! The typed client (`pi-rpc-client`) against the real binary and a scripted model on
//! 127.0.0.1: the handshake, a prompt's typed events, a tool approval answered through the
//! extension UI, typed responses of Pi's commands and of the additions.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_protocol::command::ExtensionUiResponse;
use pi_protocol::extension_ui::UiRequest;
use pi_protocol::results::ResponseData;
use pi_protocol::{RpcCommand, SessionEvent};
use pi_rpc_client::{Client, Event};
use pi_test_support::mock::{MockLlm, Reply};
use serde_json::json;
use std::path::PathBuf;

struct Sandbox {
    root: PathBuf,
}

impl Sandbox {
    fn new(port: u16) -> Sandbox {
        let root = std::env::temp_dir().join(format!("pi-client-{}-{port}", std::process::id()));
        std::fs::create_dir_all(root.join("agent")).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        let models = json!({"providers": {"mock": {"baseUrl": format!("http://127.0.0.1:{port}/v1"),
            "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}});
        std::fs::write(root.join("agent/models.json"), models.to_string()).unwrap();
        Sandbox { root }
    }

    fn client(&self, args: &[&str]) -> Client {
        let root = self.root.clone();
        Client::spawn(env!("CARGO_BIN_EXE_pi"), args, move |cmd| {
            cmd.env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &root)
                .env("PI_CODING_AGENT_DIR", root.join("agent"))
                .env("PI_OFFLINE", "1")
                .current_dir(root.join("work"));
        })
        .unwrap()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn reply(v: serde_json::Value) -> Reply {
    serde_json::from_value(v).unwrap()
}

/// Events until `agent_settled`, with the tool approval dialogs answered `confirmed`.
async fn run_to_settled(client: &mut Client, confirmed: bool) -> Vec<SessionEvent> {
    let mut seen = Vec::new();
    loop {
        match client.next_event().await.expect("stdout closed early") {
            Event::Session(e) => {
                let settled = matches!(*e, SessionEvent::AgentSettled { .. });
                seen.push(*e);
                if settled {
                    return seen;
                }
            }
            Event::Ui(request) => {
                assert!(matches!(request.request, UiRequest::Confirm { .. }));
                let approval = request.approval.as_ref().expect("an approval dialog");
                assert_eq!(approval.tool_name, "bash");
                client
                    .answer_ui(&ExtensionUiResponse {
                        id: request.id.clone(),
                        value: None,
                        confirmed: Some(confirmed),
                        cancelled: None,
                    })
                    .await
                    .unwrap();
            }
            Event::Other(v) => panic!("untyped record {v}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_commands_events_and_an_approval() {
    let mock = MockLlm::start(vec![
        reply(json!({"stream": [{"tool_call": {"id": "c1", "name": "bash", "args": {"command": "echo from-client"}}}]})),
        reply(json!({"text": "done"})),
    ])
    .await
    .unwrap();
    let sb = Sandbox::new(mock.port());
    let mut client = sb.client(&["--provider", "mock", "--model", "m", "--tools", "bash"]);

    let info = client
        .request(RpcCommand::GetProtocolInfo {})
        .await
        .unwrap();
    let Some(ResponseData::ProtocolInfo(info)) = info.data().unwrap() else {
        panic!("{info:?}");
    };
    assert_eq!(info.compatible_with.version, "1.6.0");
    assert!(info.commands.iter().any(|c| c == "list_sessions"));

    let rules = [(
        "bash".to_string(),
        pi_protocol::additions::ApprovalAction::Ask,
    )]
    .into_iter()
    .collect();
    let set = client
        .request(RpcCommand::SetToolApprovals {
            rules,
            timeout_ms: Some(10_000),
        })
        .await
        .unwrap();
    assert!(matches!(
        set.data().unwrap(),
        Some(ResponseData::ToolApprovals(_))
    ));

    let prompt = client
        .request(RpcCommand::Prompt {
            message: "run it".into(),
            images: None,
            streaming_behavior: None,
        })
        .await
        .unwrap();
    assert_eq!(prompt.error(), None);
    let events = run_to_settled(&mut client, true).await;
    let result = events
        .iter()
        .find_map(|e| match e {
            SessionEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Some((result, *is_error)),
            _ => None,
        })
        .expect("the tool ran");
    assert!(!result.1, "{:?}", result.0);
    assert!(format!("{:?}", result.0).contains("from-client"));

    let unknown = client.request(RpcCommand::GetCommands {}).await.unwrap();
    assert!(matches!(
        unknown.data().unwrap(),
        Some(ResponseData::Commands(_))
    ));
    let list = client
        .request(RpcCommand::ListSessions {
            cwd: None,
            all: None,
            query: None,
            limit: None,
            cursor: None,
        })
        .await
        .unwrap();
    let Some(ResponseData::SessionList(list)) = list.data().unwrap() else {
        panic!("{list:?}");
    };
    assert_eq!(list.sessions.len(), 1);
    assert_eq!(list.sessions[0].first_message.as_deref(), Some("run it"));

    let status = client.close().await.unwrap();
    assert!(status.success());
}
