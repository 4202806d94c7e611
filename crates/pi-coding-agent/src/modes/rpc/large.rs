//! Responses about the size of the session file (`get_messages`, `get_entries`, `get_tree`):
//! written straight to stdout in chunks, so a 100 MB session never needs a 100 MB string (or
//! three, as building the data, wrapping it and framing it would take).

use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::Runtime;
use pi_js::json::{to_js_line, write_js};
use pi_protocol::response::data_prefix;
use pi_protocol::{Outcome, RpcResponse};
use serde_json::Value;
use std::io::{self, Write};

fn js(w: &mut dyn Write, value: &impl serde::Serialize) -> io::Result<()> {
    write_js(w, value).map_err(io::Error::other)
}

/// `{"messages":[…]}` from a snapshot of the transcript (shared messages: nothing is copied,
/// and no lock is held while the client reads).
pub async fn get_messages(out: &Output, rt: &Runtime, id: Option<Value>) {
    let messages = rt.messages();
    out.send_streamed(move |w| {
        w.write_all(data_prefix(id.as_ref(), "get_messages").as_bytes())?;
        w.write_all(b"{\"messages\":")?;
        js(w, &messages)?;
        w.write_all(b"}}\n")
    })
    .await;
}

/// `{"entries":[…],"leafId":…}`, or the error for an unknown `since` cursor. The session stays
/// locked while the record is written: appends wait for it, as the events reporting them would.
pub async fn get_entries(out: &Output, rt: &Runtime, id: Option<Value>, since: Option<String>) {
    let rt = rt.clone();
    out.send_streamed(move |w| {
        let session = rt.session();
        let entries = match session.entries_since(since.as_deref()) {
            Ok(entries) => entries,
            Err(e) => {
                let error =
                    RpcResponse::<Value>::new(id, "get_entries", Outcome::Error(e.to_string()));
                return w.write_all(to_js_line(&error).map_err(io::Error::other)?.as_bytes());
            }
        };
        w.write_all(data_prefix(id.as_ref(), "get_entries").as_bytes())?;
        w.write_all(b"{\"entries\":[")?;
        for (i, entry) in entries.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            js(w, entry)?;
        }
        w.write_all(b"],\"leafId\":")?;
        js(w, &session.leaf_id())?;
        w.write_all(b"}}\n")
    })
    .await;
}

/// `{"tree":[…],"leafId":…}` (see [`get_entries`] for the lock).
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
