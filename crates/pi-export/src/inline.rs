//! Inline markdown: code spans, emphasis, strikethrough, links and autolinks, backslash escapes
//! and line breaks. Every byte of the source is either escaped text or consumed by one of these
//! constructs, whose markup we write ourselves; raw HTML in the source always stays text.
//!
//! Hostile input must not make rendering slow, so a delimiter that found no closer remembers
//! that (a later search from further on cannot succeed either), links are searched within a
//! bounded window, and nesting stops at [`MAX_DEPTH`].

use crate::escape::{push_escaped, safe_link};

/// Nesting of emphasis and link text beyond which the rest is plain text.
const MAX_DEPTH: usize = 8;
/// Longest link text and URL looked at for `[text](url)`.
const LINK_TEXT_WINDOW: usize = 300;
const LINK_URL_WINDOW: usize = 512;

/// Appends the inline rendering of `text`.
pub fn render_inline(out: &mut String, text: &str) {
    render(out, text, 0, true);
}

fn render(out: &mut String, text: &str, depth: usize, links: bool) {
    if depth > MAX_DEPTH {
        push_text(out, text);
        return;
    }
    Inline {
        src: text,
        out,
        depth,
        links,
        misses: Misses::default(),
        last_bracket: text.rfind(']'),
        last_paren: text.rfind(')'),
    }
    .run();
}

/// Escaped text with newlines as line breaks (chat text is line-oriented).
fn push_text(out: &mut String, text: &str) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str("<br>\n");
        }
        push_escaped(out, line);
    }
}

/// Positions from which a search for a closer is known to fail.
#[derive(Default)]
struct Misses {
    /// Indexed by delimiter: `*`, `**`, `***`, `_`, `__`, `___`, `~~`.
    emphasis: [Option<usize>; 7],
    /// Backtick runs by length (runs longer than 15 share the last slot).
    code: [Option<usize>; 16],
}

struct Inline<'a, 'o> {
    src: &'a str,
    out: &'o mut String,
    depth: usize,
    links: bool,
    misses: Misses,
    /// The last `]` and `)`: a link opening after them cannot close.
    last_bracket: Option<usize>,
    last_paren: Option<usize>,
}

impl Inline<'_, '_> {
    fn run(&mut self) {
        let bytes = self.src.as_bytes();
        let mut plain = 0;
        let mut i = 0;
        while i < bytes.len() {
            let consumed = match bytes[i] {
                b'\\' => self.escape(i),
                b'`' => self.code_span(i),
                b'*' | b'_' | b'~' => self.emphasis(i),
                b'[' if self.links => self.link(i, false),
                b'!' if self.links && bytes.get(i + 1) == Some(&b'[') => self.link(i + 1, true),
                b'<' if self.links => self.angle_autolink(i),
                b'h' if self.links => self.bare_autolink(i),
                _ => None,
            };
            match consumed {
                Some((end, html)) => {
                    push_text(self.out, &self.src[plain..i]);
                    self.out.push_str(&html);
                    i = end;
                    plain = end;
                }
                None => i += 1,
            }
        }
        push_text(self.out, &self.src[plain..]);
    }

    /// `\*` and friends: the punctuation character as text.
    fn escape(&self, i: usize) -> Option<(usize, String)> {
        let next = *self.src.as_bytes().get(i + 1)?;
        next.is_ascii_punctuation()
            .then(|| (i + 2, crate::escape::escape_html(&self.src[i + 1..i + 2])))
    }

    fn code_span(&mut self, i: usize) -> Option<(usize, String)> {
        let bytes = self.src.as_bytes();
        let run = count_run(bytes, i, b'`');
        let slot = run.min(16) - 1;
        if self.misses.code[slot].is_some_and(|from| i >= from) {
            return Some((i + run, "`".repeat(run)));
        }
        let mut j = i + run;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let close = count_run(bytes, j, b'`');
                if close == run {
                    let inner = self.src[i + run..j].replace('\n', " ");
                    let inner = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
                        Some(trimmed) if !trimmed.trim().is_empty() => trimmed.to_string(),
                        _ => inner,
                    };
                    let mut html = String::from("<code>");
                    push_escaped(&mut html, &inner);
                    html.push_str("</code>");
                    return Some((j + close, html));
                }
                j += close;
            } else {
                j += 1;
            }
        }
        self.misses.code[slot] = Some(i);
        // An unmatched run is literal text, all of it (a shorter run must not match inside).
        Some((i + run, "`".repeat(run)))
    }

    fn emphasis(&mut self, i: usize) -> Option<(usize, String)> {
        let bytes = self.src.as_bytes();
        let ch = bytes[i];
        let run = count_run(bytes, i, ch);
        let width = match ch {
            b'~' if run == 2 => 2,
            b'~' => return Some((i + run, "~".repeat(run))),
            _ => run.min(3),
        };
        let before = i.checked_sub(1).map(|p| bytes[p]);
        let after = bytes.get(i + run).copied();
        let opens = after.is_some_and(|b| !b.is_ascii_whitespace())
            && !(ch == b'_' && before.is_some_and(|b| b.is_ascii_alphanumeric()));
        if !opens || run > width {
            // Long runs (`****`, `___` rules inside text) are not emphasis.
            return Some((i + run, self.src[i..i + run].to_string()));
        }
        let slot = match ch {
            b'*' => width - 1,
            b'_' => width + 2,
            _ => 6,
        };
        if self.misses.emphasis[slot].is_some_and(|from| i >= from) {
            return Some((i + run, self.src[i..i + run].to_string()));
        }
        let Some(close) = find_closer(bytes, i + width, ch, width) else {
            self.misses.emphasis[slot] = Some(i);
            return Some((i + run, self.src[i..i + run].to_string()));
        };
        let (open_tag, close_tag) = match (ch, width) {
            (b'~', _) => ("<del>", "</del>"),
            (_, 1) => ("<em>", "</em>"),
            (_, 2) => ("<strong>", "</strong>"),
            _ => ("<strong><em>", "</em></strong>"),
        };
        let mut html = String::from(open_tag);
        render(
            &mut html,
            &self.src[i + width..close],
            self.depth + 1,
            self.links,
        );
        html.push_str(close_tag);
        Some((close + width, html))
    }

    /// `[text](url "title")`, or `![alt](url)` when `image` (shown as a link: the page loads
    /// nothing remote). `i` is the `[`.
    fn link(&mut self, i: usize, image: bool) -> Option<(usize, String)> {
        let bytes = self.src.as_bytes();
        if self.last_bracket.is_none_or(|b| b < i) || self.last_paren.is_none_or(|p| p < i) {
            return None;
        }
        let text_end = matching(bytes, i, b'[', b']', LINK_TEXT_WINDOW)?;
        if bytes.get(text_end + 1) != Some(&b'(') {
            return None;
        }
        let url_end = matching(bytes, text_end + 1, b'(', b')', LINK_URL_WINDOW)?;
        let target = self.src[text_end + 2..url_end].trim();
        let url = target
            .split_once(|c: char| c.is_ascii_whitespace())
            .map_or(target, |(url, _title)| url);
        let url = url
            .strip_prefix('<')
            .and_then(|u| u.strip_suffix('>'))
            .unwrap_or(url);
        let label = &self.src[i + 1..text_end];
        let mut html = String::new();
        match safe_link(url) {
            Some(href) => {
                html.push_str(r#"<a href=""#);
                push_escaped(&mut html, href);
                html.push_str(r#"" rel="noopener noreferrer nofollow">"#);
                if image {
                    html.push_str("image: ");
                }
                render(&mut html, label, self.depth + 1, false);
                html.push_str("</a>");
            }
            None => {
                // Not a link we will follow: keep the text and show where it pointed.
                if image {
                    html.push_str("image: ");
                }
                render(&mut html, label, self.depth + 1, false);
                html.push_str(r#" <span class="dropped-link">("#);
                push_escaped(&mut html, url);
                html.push_str(")</span>");
            }
        }
        Some((url_end + 1, html))
    }

    /// `<https://example.com>`.
    fn angle_autolink(&mut self, i: usize) -> Option<(usize, String)> {
        let rest = &self.src[i + 1..];
        let end = rest.find('>')?;
        let url = safe_link(&rest[..end])?;
        Some((i + 1 + end + 1, anchor(url)))
    }

    /// A bare `http(s)://…` URL, ending before whitespace and trailing punctuation.
    fn bare_autolink(&mut self, i: usize) -> Option<(usize, String)> {
        let bytes = self.src.as_bytes();
        if i > 0 && bytes[i - 1].is_ascii_alphanumeric() {
            return None;
        }
        let rest = &self.src[i..];
        if !(rest.starts_with("http://") || rest.starts_with("https://")) {
            return None;
        }
        let len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`'))
            .unwrap_or(rest.len());
        let mut url = &rest[..len];
        loop {
            let trimmed = url.trim_end_matches(['.', ',', ':', ';', '!', '?', '\'', '*', '_']);
            let unbalanced = trimmed.ends_with(')')
                && trimmed.matches('(').count() < trimmed.matches(')').count();
            url = if unbalanced {
                &trimmed[..trimmed.len() - 1]
            } else {
                trimmed
            };
            if !unbalanced {
                break;
            }
        }
        let url = safe_link(url)?;
        Some((i + url.len(), anchor(url)))
    }
}

fn anchor(url: &str) -> String {
    let mut html = String::from(r#"<a href=""#);
    push_escaped(&mut html, url);
    html.push_str(r#"" rel="noopener noreferrer nofollow">"#);
    push_escaped(&mut html, url);
    html.push_str("</a>");
    html
}

fn count_run(bytes: &[u8], i: usize, ch: u8) -> usize {
    bytes[i..].iter().take_while(|&&b| b == ch).count()
}

/// The start of a closing run of exactly `width` × `ch` at or after `from`, preceded by a
/// non-space and (for `_`) not followed by a word character.
fn find_closer(bytes: &[u8], from: usize, ch: u8, width: usize) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j] != ch {
            j += 1;
            continue;
        }
        let run = count_run(bytes, j, ch);
        let preceded = j > from && !bytes[j - 1].is_ascii_whitespace();
        let followed_ok = ch != b'_'
            || bytes
                .get(j + run)
                .is_none_or(|b| !b.is_ascii_alphanumeric());
        if run == width && preceded && followed_ok {
            return Some(j);
        }
        j += run;
    }
    None
}

/// The index of the bracket closing the one at `open`, within `window` bytes.
fn matching(bytes: &[u8], open: usize, left: u8, right: u8, window: usize) -> Option<usize> {
    let mut depth = 0usize;
    let end = bytes.len().min(open.saturating_add(window));
    let mut j = open;
    while j < end {
        match bytes[j] {
            b'\\' => j += 1,
            b'\n' if left == b'(' => return None,
            b if b == left => depth += 1,
            b if b == right => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> String {
        let mut out = String::new();
        render_inline(&mut out, text);
        out
    }

    #[test]
    fn raw_html_stays_text() {
        assert_eq!(
            md("<script>alert(1)</script> <img src=x onerror=alert(1)>"),
            "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;"
        );
    }

    #[test]
    fn emphasis_code_and_breaks() {
        assert_eq!(
            md("a **b** *c* ~~d~~ `<e>` snake_case_name\nnext"),
            "a <strong>b</strong> <em>c</em> <del>d</del> <code>&lt;e&gt;</code> snake_case_name<br>\nnext"
        );
        assert_eq!(md("**unclosed and `x"), "**unclosed and `x");
        assert_eq!(md(r"\*not em\*"), "*not em*");
        assert_eq!(md("`` a`b ``"), "<code>a`b</code>");
    }

    #[test]
    fn links_are_vetted() {
        assert_eq!(
            md("[docs](https://pi.dev/a?b=1&c=2 \"t\")"),
            r#"<a href="https://pi.dev/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">docs</a>"#
        );
        assert_eq!(
            md("[click](javascript:alert(1))"),
            r#"click <span class="dropped-link">(javascript:alert(1))</span>"#
        );
        assert_eq!(
            md("see https://x.dev/p_(q), or <mailto:a@b.c>."),
            concat!(
                r#"see <a href="https://x.dev/p_(q)" rel="noopener noreferrer nofollow">https://x.dev/p_(q)</a>, or "#,
                r#"<a href="mailto:a@b.c" rel="noopener noreferrer nofollow">mailto:a@b.c</a>."#
            )
        );
        assert_eq!(
            md("![x\" onerror=\"y](data:image/png;base64,AA)"),
            r#"image: x&quot; onerror=&quot;y <span class="dropped-link">(data:image/png;base64,AA)</span>"#
        );
    }

    #[test]
    fn hostile_runs_render_quickly() {
        let start = std::time::Instant::now();
        for unit in ["*a ", "_", "`", "[", "**", "~~x", "[a](", "https://", "\\"] {
            let text = unit.repeat(40_000);
            assert!(!md(&text).contains("<script"));
        }
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    }
}
