//! HTML export of a Pi session (RPC `export_html`, `pi --export <in> [out]`).
//!
//! The page is one self-contained file with no script at all: session content reaches it
//! only as escaped HTML (markdown is parsed by `pulldown-cmark` and written by us, so raw HTML
//! in it stays text and only our own elements and attributes appear), links are limited to
//! `http(s):`/`mailto:`, images to inline raster `data:` URLs, and a Content-Security-Policy
//! forbids scripts and every network load should anything slip through. Collapsing (thinking,
//! long outputs, other branches) uses `<details>`, which needs no script.
//!
//! The output path rule and error texts are Pi's; the page itself is our own design (the
//! conformance suite compares an export's path, not its content), so nothing recorded from Pi
//! pins how markdown is rendered.

mod entry;
pub mod escape;
mod load;
mod markdown;
mod output;
mod page;
mod parts;
mod system;
mod theme;
mod tool;
mod tree;

pub use escape::escape_html;
pub use load::{LoadedSession, parse_session_text};
pub use output::{
    ExportError, IN_MEMORY_ERROR, NOTHING_TO_EXPORT_ERROR, default_output_path,
    export_session_file, export_session_file_with, output_path, write_export,
};
pub use page::CONTENT_SECURITY_POLICY;
pub use theme::{PageTheme, ThemeColors};

use pi_protocol::session_entry::{SessionEntry, SessionHeader};
use pi_protocol::tool::Tool;

/// What the exporting agent knows beyond the session file (RPC `export_html` passes its
/// current prompt and tools; `--export` has neither). Shown only for sessions that do not
/// record their system prompt themselves.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    pub system_prompt: Option<String>,
    pub tools: Vec<Tool>,
    /// The palette (the `theme` setting); the page's own by default.
    pub theme: PageTheme,
}

/// Renders the session as a complete HTML document: the header, then the branch ending at
/// `leaf` (Pi's current leaf; `None` shows every branch folded), with the other branches
/// folded at the entries they fork from.
pub fn render_session_html(
    header: &SessionHeader,
    entries: &[SessionEntry],
    leaf: Option<&str>,
    options: &ExportOptions,
) -> String {
    page::render_page(header, entries, leaf, options)
}
