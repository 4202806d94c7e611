use super::*;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

fn fast() -> MockConfig {
    MockConfig {
        header_delay: Duration::ZERO,
        chunk_delay: Duration::ZERO,
        ..MockConfig::default()
    }
}

async fn post(port: u16, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nx-api-key: dummy\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn serves_scripted_replies_in_order_and_logs_requests() {
    let mock = MockLlm::start_with(vec![Reply::text("pong"), Reply::http_error(529)], fast())
        .await
        .unwrap();
    let first = post(mock.port(), "/v1/messages?beta=true", r#"{"model":"m"}"#).await;
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(first.contains("transfer-encoding: chunked"));
    assert!(first.contains(r#""text":"pong""#));
    assert!(first.ends_with("0\r\n\r\n"));

    let second = post(mock.port(), "/v1/chat/completions", r#"{"model":"m"}"#).await;
    assert!(second.starts_with("HTTP/1.1 529 "));
    assert!(
        second.contains(r#""message":"The server had an error while processing your request.""#)
    );

    let third = post(mock.port(), "/v1/chat/completions", "not json").await;
    assert!(third.starts_with("HTTP/1.1 500 "));
    assert!(third.contains("mock: no scripted reply left for request 3"));

    let log = mock.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].path, "/v1/messages?beta=true");
    assert_eq!(log[0].header("x-api-key"), Some("dummy"));
    assert_eq!(log[0].body, json!({"model": "m"}));
    assert_eq!(log[2].body, json!("not json"));
}

#[tokio::test]
async fn a_gated_stream_waits_until_the_gate_opens() {
    let mock = MockLlm::start_with(
        vec![Reply::stream(vec![
            script::text("a"),
            script::gate("g"),
            script::text("b"),
        ])],
        fast(),
    )
    .await
    .unwrap();
    let port = mock.port();
    let client = tokio::spawn(async move { post(port, "/v1/chat/completions", "{}").await });
    tokio::time::timeout(Duration::from_secs(5), mock.gates().reached("g"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!client.is_finished());
    mock.open_gate("g");
    let body = tokio::time::timeout(Duration::from_secs(5), client)
        .await
        .unwrap()
        .unwrap();
    assert!(body.contains(r#""content":"b""#));
    assert!(body.contains("data: [DONE]"));
}

#[tokio::test]
async fn a_dropped_stream_ends_without_the_final_chunk() {
    let mock = MockLlm::start_with(
        vec![Reply::stream(vec![script::text("a"), Step::Drop(true)])],
        fast(),
    )
    .await
    .unwrap();
    let body = post(mock.port(), "/v1/chat/completions", "{}").await;
    assert!(body.contains(r#""content":"a""#));
    assert!(!body.ends_with("0\r\n\r\n"));
}

#[tokio::test]
async fn unknown_paths_get_404_and_are_logged() {
    let mock = MockLlm::start_with(vec![], fast()).await.unwrap();
    let body = post(mock.port(), "/nope", "{}").await;
    assert!(body.starts_with("HTTP/1.1 404 "));
    assert_eq!(mock.requests().len(), 1);
}
