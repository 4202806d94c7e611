//! The only ways session text reaches the page: escaped HTML, vetted link targets and vetted
//! image data URLs. Everything else the renderer writes is our own markup.

/// Appends `text` with the five HTML-significant characters escaped; safe in element content
/// and in double- or single-quoted attribute values.
pub fn push_escaped(out: &mut String, text: &str) {
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        out.push_str(rep);
        start = i + 1;
    }
    out.push_str(&text[start..]);
}

/// Note lines (`<p class="note-line">`), each escaped.
pub fn push_notes(out: &mut String, notes: &[String]) {
    for note in notes {
        out.push_str("<p class=\"note-line\">");
        push_escaped(out, note);
        out.push_str("</p>\n");
    }
}

/// `text` escaped as by [`push_escaped`].
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped(&mut out, text);
    out
}

/// The link target for a markdown URL, or `None` when it must not become a link. Only
/// absolute `http:`, `https:` and `mailto:` URLs pass: anything else (`javascript:`, `data:`,
/// relative paths that would resolve against the exported file) stays text. URLs with
/// whitespace or control characters are refused outright, because browsers strip those from
/// schemes (`java\tscript:`) before deciding what a link does.
pub fn safe_link(url: &str) -> Option<&str> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && url.len() > scheme.len())
        .then_some(url)
}

/// Image types a page may show inline. SVG is excluded: it is a document, not a picture.
const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A `data:` URL for an image block, or `None` when its MIME type is not an allowed raster
/// type or its data is not plain base64 (which also rules out quotes and markup).
pub fn image_data_url(mime_type: &str, data: &str) -> Option<String> {
    let mime = IMAGE_MIME_TYPES
        .iter()
        .find(|m| m.eq_ignore_ascii_case(mime_type))?;
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    let valid = !body.is_empty()
        && padding <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    valid.then(|| format!("data:{mime};base64,{data}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_markup_character() {
        assert_eq!(
            escape_html(r#"<a href="x" onclick='y'>&amp;</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;"
        );
        assert_eq!(escape_html("plain ✓ text\u{2028}"), "plain ✓ text\u{2028}");
        assert_eq!(escape_html(""), "");
    }

    #[test]
    fn only_absolute_web_and_mail_links_pass() {
        assert_eq!(
            safe_link("https://pi.dev/x?a=1"),
            Some("https://pi.dev/x?a=1")
        );
        assert_eq!(safe_link("HTTP://EXAMPLE.COM"), Some("HTTP://EXAMPLE.COM"));
        assert_eq!(safe_link("mailto:a@b.c"), Some("mailto:a@b.c"));
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "java\tscript:alert(1)",
            " https://x",
            "data:text/html,<script>",
            "vbscript:x",
            "/etc/passwd",
            "../x.html",
            "//evil.example",
            "https://",
            "https://a b",
            "https://a\u{0}b",
        ] {
            assert_eq!(safe_link(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn image_urls_need_a_raster_type_and_clean_base64() {
        assert_eq!(
            image_data_url("image/png", "iVBORw0K+/=="),
            Some("data:image/png;base64,iVBORw0K+/==".to_string())
        );
        assert_eq!(
            image_data_url("IMAGE/JPEG", "QQ=="),
            Some("data:image/jpeg;base64,QQ==".to_string())
        );
        assert_eq!(image_data_url("image/svg+xml", "PHN2Zz4="), None);
        assert_eq!(image_data_url("text/html", "QQ=="), None);
        assert_eq!(image_data_url(r#"image/png" onerror="x"#, "QQ=="), None);
        assert_eq!(image_data_url("image/png", r#"QQ==" onerror="x"#), None);
        assert_eq!(image_data_url("image/png", "QQ==="), None);
        assert_eq!(image_data_url("image/png", ""), None);
        assert_eq!(image_data_url("image/png", "QQ\n=="), None);
    }
}
