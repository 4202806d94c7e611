//! URI references of `$id` and `$ref`, resolved the way pi-schema's `new URL(ref, base).href` does
//! for the URIs schemas use: absolute `http(s)`/`urn`-style identifiers, relative paths and
//! fragments.

/// The base URI of a root schema without `$id`.
pub(crate) const DEFAULT_BASE: &str = "https://json-schema.invalid/root.json";

struct Parts<'a> {
    scheme: &'a str,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
}

fn scheme_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let end = b
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))?;
    (b[end] == b':').then_some(end)
}

fn parse(s: &str) -> Option<Parts<'_>> {
    let n = scheme_len(s)?;
    let scheme = &s[..n];
    let rest = &s[n + 1..];
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            (Some(&after[..end]), &after[end..])
        }
        None => (None, rest),
    };
    Some(Parts {
        scheme,
        authority,
        path,
        query,
    })
}

fn is_special(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "http" | "https" | "ws" | "wss" | "ftp" | "file"
    )
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        if i == 0 && absolute {
            continue;
        }
        match *seg {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

fn build(scheme: &str, authority: Option<&str>, path: &str, query: Option<&str>) -> String {
    let special = is_special(scheme);
    let mut out = scheme.to_ascii_lowercase();
    out.push(':');
    if let Some(a) = authority {
        out.push_str("//");
        if special {
            out.push_str(&a.to_ascii_lowercase());
        } else {
            out.push_str(a);
        }
    }
    if special && authority.is_some() && path.is_empty() {
        out.push('/');
    } else if authority.is_some() || path.starts_with('/') {
        out.push_str(&remove_dot_segments(path));
    } else {
        out.push_str(path);
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `new URL(reference, base).href`, or `None` where the URL parser throws.
fn resolve(reference: &str, base: &str) -> Option<String> {
    let (reference, fragment) = match reference.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (reference, None),
    };
    let with_fragment = |s: String| match fragment {
        Some(f) => format!("{s}#{f}"),
        None => s,
    };
    if let Some(r) = parse(reference) {
        return Some(with_fragment(build(r.scheme, r.authority, r.path, r.query)));
    }
    let b = parse(base)?;
    let opaque = b.authority.is_none() && !b.path.starts_with('/');
    if reference.is_empty() {
        return Some(with_fragment(build(b.scheme, b.authority, b.path, b.query)));
    }
    if opaque {
        return None;
    }
    let (ref_path, ref_query) = match reference.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (reference, None),
    };
    if let Some(after) = ref_path.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        return Some(with_fragment(build(
            b.scheme,
            Some(&after[..end]),
            &after[end..],
            ref_query,
        )));
    }
    let path = if ref_path.is_empty() {
        return Some(with_fragment(build(
            b.scheme,
            b.authority,
            b.path,
            ref_query,
        )));
    } else if ref_path.starts_with('/') {
        ref_path.to_string()
    } else {
        let dir = match b.path.rfind('/') {
            Some(i) => &b.path[..=i],
            None if b.authority.is_some() => "/",
            None => "",
        };
        format!("{dir}{ref_path}")
    };
    Some(with_fragment(build(
        b.scheme,
        b.authority,
        &path,
        ref_query,
    )))
}

/// pi-schema's `resolveUri`: URNs and other bases the URL parser rejects take fragment-only
/// references.
pub(crate) fn resolve_uri(reference: &str, base: &str) -> String {
    resolve(reference, base).unwrap_or_else(|| {
        if reference.starts_with('#') {
            format!("{}{reference}", document_of(base))
        } else {
            reference.to_string()
        }
    })
}

/// `uri` without its fragment.
pub(crate) fn document_of(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(d, _)| d)
}

/// `decodeURIComponent(s)`, or `None` where it throws (a malformed escape or invalid UTF-8).
pub(crate) fn decode_component(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_like_the_url_parser() {
        let cases = [
            (
                "#/$defs/a",
                DEFAULT_BASE,
                "https://json-schema.invalid/root.json#/$defs/a",
            ),
            ("Tree", DEFAULT_BASE, "https://json-schema.invalid/Tree"),
            (
                "other.json#x",
                "https://a.example/b/c.json",
                "https://a.example/b/other.json#x",
            ),
            ("../d", "https://a.example/b/c/e", "https://a.example/b/d"),
            ("/x", "https://a.example/b/c", "https://a.example/x"),
            ("#foo", "urn:example:root", "urn:example:root#foo"),
            ("bar", "urn:example:root", "bar"),
            ("HTTPS://A.example", DEFAULT_BASE, "https://a.example/"),
            ("", "https://a.example/b#frag", "https://a.example/b"),
        ];
        for (r, base, want) in cases {
            assert_eq!(resolve_uri(r, base), want, "{r} against {base}");
        }
    }
}
