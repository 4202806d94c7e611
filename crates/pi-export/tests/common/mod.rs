//! Shared by the fixture and browser tests: the hostile fixture, and a small tag scanner that
//! checks a document (our output, or the DOM a browser built from it) holds only inert markup.

#![allow(dead_code)]

use pi_export::{ExportOptions, parse_session_text, render_session_html};

pub const FIXTURE: &str = include_str!("../fixtures/hostile-session.jsonl");

/// The fixture rendered as `export_session_file` would render it.
pub fn render_fixture() -> String {
    let session = parse_session_text(FIXTURE).expect("fixture is a session");
    render_session_html(
        &session.header,
        &session.entries,
        session.leaf.as_deref(),
        &ExportOptions::default(),
    )
}

#[derive(Debug)]
pub struct Tag {
    pub name: String,
    pub attrs: Vec<(String, String)>,
}

/// Start tags of `html` with their attributes; raw-text elements are skipped whole.
pub fn start_tags(html: &str) -> Vec<Tag> {
    let b = html.as_bytes();
    let mut tags = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if html[i..].starts_with("<!--") {
            i = html[i..].find("-->").map_or(b.len(), |e| i + e + 3);
            continue;
        }
        if !b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
            i = html[i..].find('>').map_or(b.len(), |e| i + e + 1);
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
            j += 1;
        }
        let name = html[i + 1..j].to_ascii_lowercase();
        let mut attrs = Vec::new();
        loop {
            while j < b.len() && (b[j].is_ascii_whitespace() || b[j] == b'/') {
                j += 1;
            }
            if j >= b.len() || b[j] == b'>' {
                j += 1;
                break;
            }
            let start = j;
            while j < b.len() && !b[j].is_ascii_whitespace() && !matches!(b[j], b'=' | b'>' | b'/')
            {
                j += 1;
            }
            let attr = html[start..j].to_ascii_lowercase();
            let mut value = String::new();
            if b.get(j) == Some(&b'=') {
                j += 1;
                match b.get(j) {
                    Some(&q @ (b'"' | b'\'')) => {
                        let end = html[j + 1..].find(q as char).map_or(b.len(), |e| j + 1 + e);
                        value = html[j + 1..end].to_string();
                        j = end + 1;
                    }
                    _ => {
                        let s = j;
                        while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'>' {
                            j += 1;
                        }
                        value = html[s..j].to_string();
                    }
                }
            }
            attrs.push((attr, value));
        }
        if matches!(name.as_str(), "style" | "script" | "title" | "textarea") {
            let close = format!("</{name}");
            j = html[j.min(b.len())..]
                .find(&close)
                .map_or(b.len(), |e| j + e);
        }
        tags.push(Tag { name, attrs });
        i = j;
    }
    tags
}

const TAGS: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "div",
    "header",
    "main",
    "footer",
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "dl",
    "dt",
    "dd",
    "code",
    "pre",
    "article",
    "section",
    "span",
    "time",
    "details",
    "summary",
    "ul",
    "ol",
    "li",
    "blockquote",
    "hr",
    "br",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "strong",
    "em",
    "del",
    "img",
    "q",
];
const ATTRS: &[&str] = &[
    "lang",
    "charset",
    "http-equiv",
    "content",
    "name",
    "class",
    "id",
    "title",
    "href",
    "rel",
    "src",
    "alt",
    "data-lang",
    "start",
    "open",
];

/// Panics unless `html` holds only our vocabulary of elements and attributes, every link is
/// `http(s):`/`mailto:`, every image an inline raster `data:` URL, and there is no script.
pub fn assert_inert(html: &str) {
    let tags = start_tags(html);
    assert!(
        tags.iter().any(|t| t.name == "article"),
        "no messages found"
    );
    let mut styles = 0;
    for tag in &tags {
        assert!(
            TAGS.contains(&tag.name.as_str()),
            "unexpected element <{}> {:?}",
            tag.name,
            tag.attrs
        );
        styles += usize::from(tag.name == "style");
        for (attr, value) in &tag.attrs {
            assert!(
                ATTRS.contains(&attr.as_str()),
                "unexpected attribute {attr}={value:?} on <{}>",
                tag.name
            );
            match attr.as_str() {
                "href" => assert!(
                    ["https://", "http://", "mailto:"]
                        .iter()
                        .any(|s| value.to_ascii_lowercase().starts_with(s)),
                    "unsafe link {value:?}"
                ),
                "src" => assert!(
                    ["png", "jpeg", "gif", "webp"]
                        .iter()
                        .any(|t| value.starts_with(&format!("data:image/{t};base64,"))),
                    "unsafe image {value:?}"
                ),
                "http-equiv" => assert_eq!(value, "Content-Security-Policy"),
                _ => {}
            }
        }
    }
    assert_eq!(styles, 1, "exactly our one stylesheet");
}
