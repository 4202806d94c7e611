//! Renders a realistic session with every entry and message kind, hostile content included,
//! and checks what reaches the page.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FIXTURE, assert_inert, render_fixture};
use std::path::{Path, PathBuf};

#[test]
fn hostile_fixture_renders_only_inert_markup() {
    let html = render_fixture();
    assert_inert(&html);
    // Payload markers are built by concatenation, so they exist only if a payload ran.
    assert!(!html.to_ascii_lowercase().contains("pwned"));
    assert!(
        html.contains("&lt;script&gt;document.title=&#39;PW&#39;+&#39;NED&#39;&lt;/script&gt;")
    );
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;"));
    assert!(html.contains("&lt;img src=x onerror="));
    assert!(html.contains("line\u{2028}separator\u{2029}paragraph"));
    assert_eq!(html.matches("<script").count(), 0);
}

#[test]
fn page_head_has_the_csp_before_any_content() {
    let html = render_fixture();
    let head = &html[..html.find("<title>").unwrap()];
    assert!(head.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">"
    ));
    assert!(html.contains(
        "<title>Fix parser &lt;/title&gt;&lt;script&gt;document.title=&#39;PW&#39;+&#39;NED&#39;&lt;/script&gt; · pi session</title>"
    ));
}

#[test]
fn every_kind_of_entry_is_shown() {
    let html = render_fixture();
    let missing = [
        // header facts
        "<dd><code>0197a3c2-5e1f-7b2a-9c4d-8e6f1a2b3c4d</code></dd>",
        "<dd>2025-06-01 10:00:00 UTC</dd>",
        "<dd>anthropic/claude-sonnet-4-5</dd>",
        "<dd>3 user, 8 assistant, 5 tool results, 2 custom, 1 compactions, 1 branch summaries</dd>",
        "the active branch is shown; 2 other branches are folded where they fork",
        // events, system prompt, user text and images
        "<span>Model</span> <code>anthropic/claude-sonnet-4-5</code>",
        "<span>Thinking level</span> <code>high</code>",
        "<summary>System prompt · 4 tools</summary>",
        "<code>write</code> Write a file &lt;img src=x",
        "The <code>parse_header</code> test fails since yesterday. Can you fix it?",
        "<img class=\"image\" src=\"data:image/png;base64,iVBORw0KGgo",
        "Image omitted (type &quot;image/svg+xml&quot; is not shown inline)",
        "Image omitted (type &quot;image/png\\&quot; onerror=\\&quot;",
        // assistant: thinking, tools with results, markdown
        "<details class=\"thinking\"><summary>Thinking</summary>",
        "<pre class=\"command\">$ cargo test -p parser parse_header 2&gt;&amp;1 | tail -30</pre>",
        "<summary>10 more lines</summary>",
        "<span class=\"tool-status\">done · 2.4 s</span>",
        "<code class=\"tool-target\">src/header.rs:30-49</code>",
        "<span class=\"add\">+    input.replace(&#39;&lt;&#39;, &quot;&amp;lt;&quot;).replace(",
        "<section class=\"tool failed\" id=\"tool-toolu_04\">",
        "<span class=\"tool-name\">web_fetch&lt;b&gt;x&lt;/b&gt;</span>",
        "<h2>Fixed</h2>",
        "<a href=\"https://doc.rust-lang.org/std/string/struct.String.html#method.replace\" rel=\"noopener noreferrer nofollow\">the docs</a>",
        "<pre class=\"code\" data-lang=\"rust\"><code>fn escape(s: &amp;str) -&gt; String {",
        "<th class=\"left\">Input</th><th class=\"center\">Before</th><th class=\"right\">After</th>",
        "click me <span class=\"dropped-link\">(javascript:document.title=&#39;PW&#39;+&#39;NED&#39;)</span>",
        "<span class=\"label\">fixed &lt;img src=x",
        // user shell, extensions, summaries, compaction, odd messages
        "<pre class=\"command\">$ ls -la target/ &lt;dir&gt;</pre>",
        "<span class=\"detail\">exit 2</span>",
        "<span class=\"who\">Extension · lint&lt;script&gt;</span>",
        "<span class=\"detail\">hidden in the terminal</span>",
        "<span class=\"who\">Extension · reminder</span>",
        "<span class=\"detail\">context of 48,213 tokens summarised</span>",
        "<span class=\"who\">Branch summary</span>",
        "<span class=\"who\">Message (notification)</span>",
        "<span>Context edit (removed from context)</span> <code>a1000006</code>",
        "result of an unrecorded call <code>call_missing</code>",
        "Projected compaction summary.",
        "<p class=\"thinking-redacted\">",
        "<p class=\"error\">Error: Request failed: 529 overloaded &lt;script&gt;",
        "id=\"entry-z&quot;&gt;&lt;script&gt;",
        // the folded branches
        "Other branch from here · 2 entries · <q>Actually, first check the git log &lt;script&gt;",
        "Other branch, forking off the one above · 1 entry · <q>A second, regenerated answer",
    ]
    .iter()
    .filter(|e| !html.contains(**e))
    .collect::<Vec<_>>();
    assert!(missing.is_empty(), "missing {missing:#?}");
    // Bookkeeping entries (extension state, usage records) are not shown.
    assert!(!html.contains("ext-state") && !html.contains("cache_warm"));
    // The torn and malformed lines are skipped.
    assert!(!html.contains("entry-torn") && !html.contains("entry-late"));
}

#[test]
fn rendering_is_deterministic() {
    assert_eq!(render_fixture(), render_fixture());
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pi-export-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn export_session_file_writes_the_default_name_in_cwd_and_leaves_the_input_alone() {
    let dir = scratch("default-name");
    std::fs::create_dir_all(dir.join("sessions")).unwrap();
    let input = dir.join("sessions/2025-06-01T10-00-00-000Z_0197a3c2.jsonl");
    std::fs::write(&input, FIXTURE).unwrap();
    let path = pi_export::export_session_file(
        Path::new("sessions/2025-06-01T10-00-00-000Z_0197a3c2.jsonl"),
        None,
        &dir,
    )
    .unwrap();
    assert_eq!(
        path,
        PathBuf::from("pi-session-2025-06-01T10-00-00-000Z_0197a3c2.html")
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(&path)).unwrap(),
        render_fixture()
    );
    assert_eq!(std::fs::read_to_string(&input).unwrap(), FIXTURE);

    let out = pi_export::export_session_file(&input, Some(Path::new("out/x.html")), &dir);
    assert_eq!(
        out.unwrap_err().to_string(),
        "ENOENT: no such file or directory, open 'out/x.html'"
    );
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let out = pi_export::export_session_file(&input, Some(Path::new("out/x.html")), &dir);
    assert_eq!(out.unwrap(), PathBuf::from("out/x.html"));
}

#[test]
fn export_session_file_reports_pi_errors() {
    let dir = scratch("errors");
    let err = pi_export::export_session_file(Path::new("nope.jsonl"), None, &dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("File not found: {}", dir.join("nope.jsonl").display())
    );
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    let err = pi_export::export_session_file(Path::new("./notes.txt"), None, &dir).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Session file is not a valid pi session: {}",
            dir.join("notes.txt").display()
        )
    );
    // An empty file is an empty session (Pi would also write a header into it; we do not).
    std::fs::write(dir.join("empty.jsonl"), "").unwrap();
    let path = pi_export::export_session_file(Path::new("empty.jsonl"), None, &dir).unwrap();
    assert_eq!(path, PathBuf::from("pi-session-empty.html"));
    let html = std::fs::read_to_string(dir.join(path)).unwrap();
    assert!(html.contains("This session has no entries yet."));
    assert_eq!(std::fs::read(dir.join("empty.jsonl")).unwrap(), b"");
}
