//! The event queue is bounded: a writer far ahead of the reader is held back by the pipe
//! instead of filling memory, and every record still arrives, in order, once read.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_protocol::SessionEvent;
use pi_rpc_client::{Client, EVENT_BUFFER, Event};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

/// Records a child writes: far more than the queue, the reader's buffer and a pipe together.
const RECORDS: usize = 50_000;
const _: () = assert!(RECORDS > 10 * EVENT_BUFFER);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undrained_queue_holds_the_writer_back() {
    // A stand-in for pi streaming a long run (alone it writes them all in about 0.1 s).
    let script = format!(
        "i=0; while [ $i -lt {RECORDS} ]; do echo '{{\"type\":\"agent_settled\",\"aborted\":false}}'; i=$((i+1)); done"
    );
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = Client::attach(child).unwrap();
    // Nobody reads events: the writer must be blocked, not finished.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        client.try_wait().unwrap(),
        None,
        "the writer was not held back"
    );
    let mut seen = 0;
    while seen < RECORDS {
        match client.next_event().await.expect("stdout closed early") {
            Event::Session(e) => assert!(matches!(*e, SessionEvent::AgentSettled { .. })),
            other => panic!("{other:?}"),
        }
        seen += 1;
    }
    let status = client.close().await.unwrap();
    assert!(status.success());
}
