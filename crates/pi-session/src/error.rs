//! The errors of the session layer. Messages that reach the wire are Pi 1.6.0's exact strings.

use std::path::PathBuf;

/// What went wrong in a session operation.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A non-empty file whose first parsed line is not a session header. The file is left as is.
    #[error("Session file is not a valid pi session: {}", .0.display())]
    InvalidSessionFile(PathBuf),

    /// `get_entries` with a `since` id that is not in the session.
    #[error("Entry not found: {0}")]
    SinceNotFound(String),

    /// A label, context edit, branch or fork target that is not in the session.
    #[error("Entry {0} not found")]
    EntryNotFound(String),

    #[error("Entry {0} is not on the active branch")]
    NotOnActiveBranch(String),

    #[error("Entry {0} does not contribute editable model content")]
    NotEditable(String),

    #[error("Context edit replacement must be null or contain string/array content")]
    InvalidReplacement,

    /// `--session-id` / `new_session` ids must look like file-name-safe tokens.
    #[error(
        "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character"
    )]
    InvalidSessionId,

    #[error("Invalid entry ID for forking")]
    InvalidForkEntry,

    #[error("This session has not been saved yet. Send a message before cloning or forking it.")]
    NotSavedYet,

    #[error("Cannot clone session: no current entry selected")]
    NoCurrentEntry,

    #[error("Failed to create forked session")]
    ForkFailed,

    #[error("Cannot fork: source session file is empty or invalid: {}", .0.display())]
    ForkSourceInvalid(PathBuf),

    #[error("Cannot fork: source session has no header: {}", .0.display())]
    ForkSourceNoHeader(PathBuf),

    /// The session's stored cwd is gone (`switch_session`, resume); the caller may offer to
    /// continue in `fallback` instead.
    #[error(
        "Stored session working directory does not exist: {cwd}{file}\nCurrent working directory: {fallback}",
        cwd = .cwd.display(),
        file = .session_file.as_ref().map(|f| format!("\nSession file: {}", f.display())).unwrap_or_default(),
        fallback = .fallback.display()
    )]
    MissingCwd {
        cwd: PathBuf,
        session_file: Option<PathBuf>,
        fallback: PathBuf,
    },

    /// Discovery reads at most 1 MiB looking for a header.
    #[error("Session header exceeds 1048576-byte scan limit: {}", .0.display())]
    HeaderScanLimit(PathBuf),

    /// A file operation failed; `path` names the file.
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An entry could not be serialized (only possible for values built by the caller).
    #[error("cannot serialize session entry: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl SessionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> SessionError {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;
