//! Responses about the size of the session file (`get_messages`, `get_entries`, `get_tree`):
//! written straight to stdout in chunks, so a 100 MB session never needs a 100 MB string (or
//! three, as building the data, wrapping it and framing it would take).

use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::Runtime;
use pi_js::json::write_js;
use pi_protocol::response::data_prefix;
use pi_protocol::results::{EntriesData, MessagesData};
use pi_protocol::{Outcome, RpcResponse};
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};

fn js(w: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    write_js(w, value).map_err(io::Error::other)
}

/// Writes a whole response record and its newline, serialized straight into `w`.
fn record<T: Serialize>(w: &mut dyn Write, response: &RpcResponse<T>) -> io::Result<()> {
    js(w, response)?;
    w.write_all(b"\n")
}

/// `{"messages":[…]}` from a snapshot of the transcript (shared messages: nothing is copied,
/// and no lock is held while the client reads).
pub async fn get_messages(out: &Output, rt: &Runtime, id: Option<Value>) {
    let messages = rt.messages();
    out.send_streamed(move |w| {
        let data = MessagesData { messages };
        record(
            w,
            &RpcResponse::new(id, "get_messages", Outcome::Data(data)),
        )
    })
    .await;
}

/// `{"entries":[…],"leafId":…}`, or the error for an unknown `since` cursor. The session stays
/// locked while the record is written: appends wait for it, as the events reporting them would.
pub async fn get_entries(out: &Output, rt: &Runtime, id: Option<Value>, since: Option<String>) {
    let rt = rt.clone();
    out.send_streamed(move |w| {
        let session = rt.session();
        let outcome = match session.entries_since(since.as_deref()) {
            Ok(entries) => Outcome::Data(EntriesData {
                entries,
                leaf_id: session.leaf_id().map(str::to_owned),
            }),
            Err(e) => Outcome::Error(e.to_string()),
        };
        record(w, &RpcResponse::new(id, "get_entries", outcome))
    })
    .await;
}

/// `{"tree":[…],"leafId":…}` (see [`get_entries`] for the lock). The only record written by
/// hand: the tree nests as deep as the session is long, so it is written iteratively
/// ([`pi_session::SessionTree::write_json`]) rather than through serde; its shape is
/// `pi_protocol::results::TreeData`.
pub async fn get_tree(out: &Output, rt: &Runtime, id: Option<Value>) {
    let rt = rt.clone();
    out.send_streamed(move |w| {
        let session = rt.session();
        w.write_all(data_prefix(id.as_ref(), "get_tree").as_bytes())?;
        w.write_all(b"{\"tree\":")?;
        session.tree().write_json(w).map_err(io::Error::other)?;
        w.write_all(b",\"leafId\":")?;
        js(w, &session.leaf_id())?;
        w.write_all(b"}}\n")
    })
    .await;
}
