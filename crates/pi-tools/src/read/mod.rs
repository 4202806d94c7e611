//! The `read` tool: text files by line window with head truncation and continuation notices;
//! images (detected from content) as image blocks, resized to the inline limits.

pub mod lines;

use crate::config::ToolsConfig;
use crate::fs_error;
use crate::image::{Processed, SNIFF_BYTES, detect_mime, process_image};
use crate::operations::{OpError, ToolOperations, block_on};
use crate::paths::resolve_read_path;
use crate::tool_util::{aborted, declaration, num_arg, prop, str_arg, text_block};
use crate::truncate::{
    DEFAULT_MAX_BYTES, Limits, TruncatedBy, Truncation, format_size, truncate_head,
};
use lines::{Selection, select_lines};
use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_js::number_to_string as js_number;
use pi_protocol::content::{ImageContent, UserBlock};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub struct ReadTool {
    config: Arc<ToolsConfig>,
    declaration: Tool,
}

impl ReadTool {
    pub fn new(config: Arc<ToolsConfig>) -> ReadTool {
        let description = "Read a file. Text files and images (jpg, png, gif, webp, bmp) are supported; \
             images come back as attachments. Text is cut after 2000 lines or 50KB, whichever \
             comes first: read big files in parts with offset and limit, and keep going with \
             offset until you have what you need.";
        let parameters = json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": prop("string", "File to read, as a relative or absolute path"),
                "offset": prop("number", "First line to read, counting from 1"),
                "limit": prop("number", "Most lines to read"),
            }
        });
        ReadTool {
            config,
            declaration: declaration("read", description, parameters, true),
        }
    }
}

impl AgentTool for ReadTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, invocation: ToolInvocation) -> ToolFuture {
        if self.config.operations.is_none() && is_small_text_file(&self.config, &invocation.args) {
            // Already sniffed as text: the body does not open the file a third time.
            return crate::tool_util::run_inline(self.config.clone(), invocation, |c, a, t| {
                read_file(c, a, t, true)
            });
        }
        crate::tool_util::run_blocking(self.config.clone(), invocation, read)
    }
}

/// Regular text files up to this size are read on the calling thread: that takes a few
/// microseconds, less than starting the blocking pool's thread (which an agent that lives for
/// one prompt pays on its first read).
const INLINE_READ_MAX: u64 = 64 * 1024;

/// Whether the read is a regular, non-empty file of at most [`INLINE_READ_MAX`] bytes that is
/// not an image (images are decoded and resized, which can take long). Empty files go to the
/// pool too: special files such as `/proc/kmsg` report no size and can block.
fn is_small_text_file(config: &ToolsConfig, args: &Map<String, Value>) -> bool {
    let Some(path) = str_arg(args, "path") else {
        return false;
    };
    let absolute = resolve_read_path(path, &config.cwd);
    std::fs::metadata(&absolute)
        .is_ok_and(|m| m.is_file() && (1..=INLINE_READ_MAX).contains(&m.len()))
        && matches!(sniff(&absolute), Ok(None))
}

fn open_error(err: &std::io::Error, path: &Path) -> ToolError {
    ToolError::new(fs_error::with_path(err, "open", path))
}

fn read_error(err: &std::io::Error) -> ToolError {
    ToolError::new(fs_error::without_path(err, "read"))
}

fn sniff(path: &Path) -> Result<Option<&'static str>, ToolError> {
    let mut file = std::fs::File::open(path).map_err(|e| open_error(&e, path))?;
    let mut buf = vec![0u8; SNIFF_BYTES];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(&e)),
        }
    }
    Ok(detect_mime(&buf[..filled]))
}

fn read(
    config: &ToolsConfig,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    read_file(config, args, cancel, false)
}

/// The read; `known_text` when the file was already found to be no image.
fn read_file(
    config: &ToolsConfig,
    args: &Map<String, Value>,
    cancel: &CancellationToken,
    known_text: bool,
) -> Result<AgentToolResult, ToolError> {
    let path = str_arg(args, "path").unwrap_or_default();
    let offset = num_arg(args, "offset");
    let limit = num_arg(args, "limit");
    let absolute = resolve_read_path(path, &config.cwd);
    let (content, details) = match &config.operations {
        Some(ops) => read_through(ops.as_ref(), config, &absolute, path, offset, limit)?,
        None => {
            fs_error::access(&absolute, libc::R_OK)
                .map_err(|e| ToolError::new(fs_error::with_path(&e, "access", &absolute)))?;
            let mime = if known_text { None } else { sniff(&absolute)? };
            match mime {
                Some(mime) => read_image(config, &absolute, mime)?,
                None => {
                    let (block, details) = read_text(&absolute, path, offset, limit, cancel)?;
                    (vec![block], details)
                }
            }
        }
    };
    if cancel.is_cancelled() {
        return Err(aborted());
    }
    let structured = structured_output(&content);
    let mut result = AgentToolResult::new(content);
    result.details = details;
    result.structured_content = Some(structured);
    Ok(result)
}

/// The text, or the image with its note (what programmatic callers receive).
fn structured_output(content: &[UserBlock]) -> Value {
    let text = content
        .iter()
        .find_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    match content.iter().find_map(|b| match b {
        UserBlock::Image(i) => Some(i),
        _ => None,
    }) {
        Some(image) => {
            json!({"type": "image", "data": image.data, "mimeType": image.mime_type, "note": text})
        }
        None => Value::String(text),
    }
}

/// Through an extension's operations: access, the image type if they can tell, then the whole
/// file (Pi's read with custom `ReadOperations`); their errors are the tool's.
fn read_through(
    ops: &dyn ToolOperations,
    config: &ToolsConfig,
    absolute: &Path,
    given: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<(Vec<UserBlock>, Option<Value>), ToolError> {
    let failed = |e: OpError| ToolError::new(e.message);
    block_on(ops.access(absolute)).map_err(failed)?;
    match block_on(ops.detect_image_mime(absolute)).map_err(failed)? {
        Some(mime) => {
            let bytes = block_on(ops.read_file(absolute)).map_err(failed)?;
            image_blocks(config, &bytes, &mime)
        }
        None => {
            let bytes = block_on(ops.read_file(absolute)).map_err(failed)?;
            let start = start_line(offset);
            let selection = select_bytes(&bytes, start, limit);
            let (block, details) = text_from(selection, given, offset, start, limit)?;
            Ok((vec![block], details))
        }
    }
}

fn read_image(
    config: &ToolsConfig,
    path: &Path,
    mime: &str,
) -> Result<(Vec<UserBlock>, Option<Value>), ToolError> {
    let bytes = std::fs::read(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EISDIR) => read_error(&e),
        _ => open_error(&e, path),
    })?;
    image_blocks(config, &bytes, mime)
}

fn image_blocks(
    config: &ToolsConfig,
    bytes: &[u8],
    mime: &str,
) -> Result<(Vec<UserBlock>, Option<Value>), ToolError> {
    let session = config.session.get();
    let limits = session.image_limits.unwrap_or_default();
    match process_image(bytes, mime, config.auto_resize_images, &limits) {
        Processed::Omitted(message) => Ok((
            vec![text_block(format!("Read image file [{mime}]\n{message}"))],
            None,
        )),
        Processed::Image {
            data,
            mime_type,
            hints,
        } => {
            let mut note = format!("Read image file [{mime_type}]");
            if !hints.is_empty() {
                note.push('\n');
                note.push_str(&hints.join("\n"));
            }
            let details = match (session.model_accepts_images, session.model_id) {
                (Some(false), Some(id)) => Some(json!({ "imageUnsupportedByModel": id })),
                _ => None,
            };
            Ok((
                vec![
                    text_block(note),
                    UserBlock::Image(ImageContent { data, mime_type }),
                ],
                details,
            ))
        }
    }
}

/// Whether the range can be streamed; other values (fractional, negative limit) use the
/// whole-file path whose array slicing defines what they select.
fn streamable(offset: Option<f64>, limit: Option<f64>) -> bool {
    offset.is_none_or(|o| o.fract() == 0.0) && limit.is_none_or(|l| l.fract() == 0.0 && l >= 0.0)
}

/// JavaScript's `Array.prototype.slice` index for a possibly fractional or negative value.
fn slice_index(value: f64, len: usize) -> usize {
    let v = value.trunc();
    if v < 0.0 {
        (len as f64 + v).max(0.0) as usize
    } else {
        v.min(len as f64) as usize
    }
}

/// Reads the whole file and selects lines with JavaScript slice semantics.
fn select_whole(path: &Path, start: f64, limit: Option<f64>) -> Result<Selection, ToolError> {
    let bytes = std::fs::read(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EISDIR) => read_error(&e),
        _ => open_error(&e, path),
    })?;
    Ok(select_bytes(&bytes, start, limit))
}

/// [`select_whole`] over bytes already read.
fn select_bytes(bytes: &[u8], start: f64, limit: Option<f64>) -> Selection {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.split('\n').collect();
    let from = slice_index(start, all.len());
    let to = match limit {
        None => all.len(),
        Some(l) => slice_index((start + l).min(all.len() as f64), all.len()),
    };
    let selected = if from < to {
        all[from..to].join("\n")
    } else {
        String::new()
    };
    let truncation = truncate_head(&selected, Limits::default());
    let first_line_bytes = if truncation.first_line_exceeds_limit {
        all.get(from).map_or(0, |l| l.len())
    } else {
        0
    };
    Selection {
        total_file_lines: all.len(),
        truncation,
        first_line_bytes,
    }
}

fn read_text(
    path: &Path,
    given: &str,
    offset: Option<f64>,
    limit: Option<f64>,
    cancel: &CancellationToken,
) -> Result<(UserBlock, Option<Value>), ToolError> {
    let start = start_line(offset);
    let selection = if streamable(offset, limit) {
        let file = std::fs::File::open(path).map_err(|e| open_error(&e, path))?;
        let limit = limit.map(|l| l.min(usize::MAX as f64) as usize);
        match select_lines(file, start.min(usize::MAX as f64) as usize, limit, cancel)
            .map_err(|e| read_error(&e))?
        {
            Some(s) => s,
            None => return Err(aborted()),
        }
    } else {
        select_whole(path, start, limit)?
    };
    text_from(selection, given, offset, start, limit)
}

/// The 0-based first line: `offset` is 1-based; 0 or absent means the start.
fn start_line(offset: Option<f64>) -> f64 {
    match offset {
        Some(o) if o != 0.0 && !o.is_nan() => (o - 1.0).max(0.0),
        _ => 0.0,
    }
}

/// The text block and details of a selection (the offset checked against the file).
fn text_from(
    selection: Selection,
    given: &str,
    offset: Option<f64>,
    start: f64,
    limit: Option<f64>,
) -> Result<(UserBlock, Option<Value>), ToolError> {
    let total = selection.total_file_lines as f64;
    if start >= total {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({} lines total)",
            js_number(offset.unwrap_or_default()),
            selection.total_file_lines
        )));
    }
    let details = (selection.truncation.first_line_exceeds_limit || selection.truncation.truncated)
        .then(|| json!({ "truncation": selection.truncation }));
    Ok((
        text_block(format_text(&selection, given, start, limit)),
        details,
    ))
}

fn format_text(selection: &Selection, given: &str, start: f64, limit: Option<f64>) -> String {
    let t: &Truncation = &selection.truncation;
    let total = selection.total_file_lines as f64;
    let first = js_number(start + 1.0);
    if t.first_line_exceeds_limit {
        return format!(
            "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {given} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(selection.first_line_bytes),
            format_size(DEFAULT_MAX_BYTES)
        );
    }
    if t.truncated {
        let end = start + 1.0 + t.output_lines as f64 - 1.0;
        let next = js_number(end + 1.0);
        let end = js_number(end);
        let notice = if t.truncated_by == Some(TruncatedBy::Lines) {
            format!(
                "[Showing lines {first}-{end} of {}. Use offset={next} to continue.]",
                selection.total_file_lines
            )
        } else {
            format!(
                "[Showing lines {first}-{end} of {} ({} limit). Use offset={next} to continue.]",
                selection.total_file_lines,
                format_size(DEFAULT_MAX_BYTES)
            )
        };
        return format!("{}\n\n{notice}", t.content);
    }
    if let Some(limit) = limit {
        let shown = (start + limit).min(total) - start;
        if start + shown < total {
            let remaining = total - (start + shown);
            return format!(
                "{}\n\n[{} more lines in file. Use offset={} to continue.]",
                t.content,
                js_number(remaining),
                js_number(start + shown + 1.0)
            );
        }
    }
    t.content.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only small regular text files are read without the blocking pool.
    #[test]
    fn small_text_files_are_read_inline() {
        let dir = std::env::temp_dir().join(format!("pi-read-inline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
        write("small.txt", b"one\ntwo\n");
        write("empty.txt", b"");
        write("big.txt", &vec![b'x'; INLINE_READ_MAX as usize + 1]);
        write("edge.txt", &vec![b'x'; INLINE_READ_MAX as usize]);
        write("pic.gif", b"GIF89a\x01\x00\x01\x00");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let config = ToolsConfig::new(&dir, &dir);
        let inline = |path: &str| {
            let mut args = Map::new();
            args.insert("path".into(), path.into());
            is_small_text_file(&config, &args)
        };
        assert!(inline("small.txt"));
        assert!(inline("edge.txt"));
        assert!(!inline("big.txt"));
        assert!(!inline("empty.txt"));
        assert!(!inline("pic.gif"));
        assert!(!inline("sub"));
        assert!(!inline("missing.txt"));
        assert!(!is_small_text_file(&config, &Map::new()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
