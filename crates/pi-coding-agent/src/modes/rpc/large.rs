//! Responses about the size of a session file (`get_messages`, `get_entries`, `get_tree`, and
//! the addition `read_session`):
//! written straight to stdout in chunks, so a 100 MB session never needs a 100 MB string (or
//! three, as building the data, wrapping it and framing it would take).

use pi_coding_agent::output::Output;
use pi_coding_agent::runtime::Runtime;
use pi_js::json::write_js;
use pi_protocol::SharedMessage;
use pi_protocol::additions::{SessionMessagesRead, SessionView};
use pi_protocol::response::data_prefix;
use pi_protocol::results::EntriesData;
use pi_protocol::session_entry::SessionHeader;
use pi_protocol::{Outcome, RpcResponse};
use pi_session::SessionReader;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, IoSlice, Write};

fn js(w: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    write_js(w, value).map_err(io::Error::other)
}

/// Writes a whole response record and its newline, serialized straight into `w`.
fn record<T: Serialize>(w: &mut dyn Write, response: &RpcResponse<T>) -> io::Result<()> {
    js(w, response)?;
    w.write_all(b"\n")
}

/// `{"messages":[…]}` from a snapshot of the transcript (shared messages: nothing is copied,
/// and no lock is held while the client reads). The shape of `MessagesData`, written by hand:
/// the texts of messages read from the session file go out as they are, many per `writev`,
/// instead of through the serializer and the output buffer (a 100 MB session's answer is
/// nearly all such texts).
pub async fn get_messages(out: &Output, rt: &Runtime, id: Option<Value>) {
    let messages = rt.messages();
    out.send_streamed(move |w| {
        w.write_all(data_prefix(id.as_ref(), "get_messages").as_bytes())?;
        w.write_all(b"{\"messages\":[")?;
        write_messages(w, &messages)?;
        w.write_all(b"]}}\n")
    })
    .await;
}

/// Messages per `writev`: with the commas between them, within the kernel's 1024 pieces.
const MESSAGES_PER_WRITE: usize = 500;

/// The messages, comma-separated: kept texts as they are, typed ones serialized.
fn write_messages(w: &mut dyn Write, messages: &[SharedMessage]) -> io::Result<()> {
    for (n, batch) in messages.chunks(MESSAGES_PER_WRITE).enumerate() {
        let typed = batch
            .iter()
            .map(|m| match m.canonical_text() {
                Some(_) => Ok(Vec::new()),
                None => pi_js::json::to_js_string(m)
                    .map(String::into_bytes)
                    .map_err(io::Error::other),
            })
            .collect::<io::Result<Vec<Vec<u8>>>>()?;
        let mut pieces = Vec::with_capacity(2 * batch.len());
        for (i, (m, json)) in batch.iter().zip(&typed).enumerate() {
            if n > 0 || i > 0 {
                pieces.push(IoSlice::new(b","));
            }
            let bytes = m.canonical_text().map_or(json.as_slice(), str::as_bytes);
            pieces.push(IoSlice::new(bytes));
        }
        write_all_vectored(w, &mut pieces)?;
    }
    Ok(())
}

/// `Write::write_all_vectored`, which is not stable yet.
fn write_all_vectored(w: &mut dyn Write, mut pieces: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut pieces, 0);
    while !pieces.is_empty() {
        match w.write_vectored(pieces) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut pieces, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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

/// `read_session` (an addition): another session's entries or messages. The file is checked
/// first (a missing file, a non-session or an unknown `since` is an error response); the
/// entries then stream from the file into the record, at most `limit` of them.
pub async fn read_session(
    out: &Output,
    id: Option<Value>,
    path: std::path::PathBuf,
    view: SessionView,
    since: Option<String>,
    limit: Option<u64>,
) {
    let opened = tokio::task::spawn_blocking(move || match view {
        SessionView::Entries => SessionReader::open(&path, since.as_deref()).map(Opened::Entries),
        SessionView::Messages => {
            let store = pi_session::SessionStore::open_read_only(&path)?;
            let header = SessionHeader::from_map(store.header().clone())
                .map_err(|_| pi_session::SessionError::InvalidSessionFile(path.clone()))?;
            Ok(Opened::Messages(SessionMessagesRead {
                header,
                messages: store.context_messages(),
            }))
        }
    })
    .await;
    let opened = match opened {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return error(out, id, "read_session", e.to_string()).await,
        Err(e) => return error(out, id, "read_session", e.to_string()).await,
    };
    out.send_streamed(move |w| match opened {
        Opened::Messages(data) => record(
            w,
            &RpcResponse::new(id, "read_session", Outcome::Data(data)),
        ),
        Opened::Entries(reader) => {
            w.write_all(data_prefix(id.as_ref(), "read_session").as_bytes())?;
            w.write_all(b"{\"header\":")?;
            js(w, reader.header())?;
            w.write_all(b",\"entries\":[")?;
            let leaf = reader.leaf_id().map(str::to_owned);
            let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
            let mut has_more = false;
            for (written, entry) in reader.entries().enumerate() {
                if written == limit {
                    has_more = true;
                    break;
                }
                if written > 0 {
                    w.write_all(b",")?;
                }
                js(w, &entry)?;
            }
            w.write_all(b"],\"leafId\":")?;
            js(w, &leaf)?;
            w.write_all(format!(",\"hasMore\":{has_more}}}}}\n").as_bytes())
        }
    })
    .await;
}

enum Opened {
    Entries(SessionReader),
    Messages(SessionMessagesRead),
}

async fn error(out: &Output, id: Option<Value>, command: &str, message: String) {
    let response: RpcResponse<Value> = RpcResponse::new(id, command, Outcome::Error(message));
    if let Ok(line) = pi_js::json::to_js_line(&response) {
        out.send(line).await;
    }
}
