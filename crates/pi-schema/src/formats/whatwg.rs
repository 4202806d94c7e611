//! `url`, `iri` and `iri-reference`, which pi-schema answers with the WHATWG URL parser
//! (`URL.canParse`): its rules for schemes, authorities, hosts (IPv4 numbers, IPv6, forbidden code
//! points) and ports, without the IDNA mapping of non-ASCII domains, which pass as they are.

use super::scheme_len;
use pi_js::utf16_len;

fn is_special(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

fn forbidden_host(c: char) -> bool {
    matches!(
        c,
        '\0' | '\t'
            | '\n'
            | '\r'
            | ' '
            | '#'
            | '/'
            | ':'
            | '<'
            | '>'
            | '?'
            | '@'
            | '['
            | '\\'
            | ']'
            | '^'
            | '|'
    )
}

fn forbidden_domain(c: char) -> bool {
    forbidden_host(c) || c <= '\u{1f}' || c == '%' || c == '\u{7f}'
}

/// The WHATWG IPv6 parser's verdict.
fn whatwg_ipv6(s: &str) -> bool {
    let c: Vec<char> = s.chars().collect();
    let at = |i: usize| c.get(i).copied();
    let mut piece = 0usize;
    let mut compress = false;
    let mut p = 0usize;
    if at(0) == Some(':') {
        if at(1) != Some(':') {
            return false;
        }
        p = 2;
        piece = 1;
        compress = true;
    }
    while let Some(ch) = at(p) {
        if piece == 8 {
            return false;
        }
        if ch == ':' {
            if compress {
                return false;
            }
            p += 1;
            piece += 1;
            compress = true;
            continue;
        }
        let mut length = 0;
        while length < 4 && at(p).is_some_and(|h| h.is_ascii_hexdigit()) {
            p += 1;
            length += 1;
        }
        match at(p) {
            Some('.') => {
                if length == 0 || piece > 6 {
                    return false;
                }
                p -= length;
                let mut seen = 0;
                while at(p).is_some() {
                    if seen > 0 {
                        if at(p) == Some('.') && seen < 4 {
                            p += 1;
                        } else {
                            return false;
                        }
                    }
                    if !at(p).is_some_and(|d| d.is_ascii_digit()) {
                        return false;
                    }
                    let mut value: Option<u32> = None;
                    while let Some(d) = at(p).and_then(|d| d.to_digit(10)) {
                        value = match value {
                            None => Some(d),
                            Some(0) => return false,
                            Some(v) => Some(v * 10 + d),
                        };
                        if value.is_some_and(|v| v > 255) {
                            return false;
                        }
                        p += 1;
                    }
                    seen += 1;
                    if seen == 2 || seen == 4 {
                        piece += 1;
                    }
                }
                return seen == 4 && (compress || piece == 8);
            }
            Some(':') => {
                p += 1;
                if at(p).is_none() {
                    return false;
                }
            }
            Some(_) => return false,
            None => {}
        }
        piece += 1;
    }
    compress || piece == 8
}

/// The WHATWG IPv4 number parser: `Some` for a valid part.
fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(h) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (h, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    digits.chars().try_fold(0u64, |v, c| {
        let d = c.to_digit(radix)?;
        Some(
            v.saturating_mul(u64::from(radix))
                .saturating_add(u64::from(d)),
        )
    })
}

/// Whether a domain ends in a number, and if so whether it is a valid IPv4 address.
fn ipv4_host_ok(host: &str) -> bool {
    let mut parts: Vec<&str> = host.split('.').collect();
    if parts.last() == Some(&"") && parts.len() > 1 {
        parts.pop();
    }
    let last = parts.last().copied().unwrap_or("");
    let ends_in_number = (!last.is_empty() && last.bytes().all(|c| c.is_ascii_digit()))
        || ipv4_number(last).is_some();
    if !ends_in_number {
        return true;
    }
    if parts.len() > 4 {
        return false;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for p in &parts {
        match ipv4_number(p) {
            Some(n) => numbers.push(n),
            None => return false,
        }
    }
    let n = numbers.len();
    if numbers[..n - 1].iter().any(|&v| v > 255) {
        return false;
    }
    numbers[n - 1] < 256u64.pow(5 - n as u32)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The host of an authority, by the host parser of a special (`special`) or other scheme.
fn host_ok(host: &str, special: bool) -> bool {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.strip_suffix(']').is_some_and(whatwg_ipv6);
    }
    if !special {
        return !host.chars().any(forbidden_host);
    }
    let domain = percent_decode(host).to_lowercase();
    !domain.is_empty() && !domain.chars().any(forbidden_domain) && ipv4_host_ok(&domain)
}

/// An authority (up to the path) of a URL: credentials, host and port.
fn url_authority(authority: &str, special: bool) -> bool {
    let hostport = match authority.rfind('@') {
        Some(i) => {
            let rest = &authority[i + 1..];
            if rest.is_empty() {
                return false;
            }
            rest
        }
        None => authority,
    };
    let mut in_brackets = false;
    let mut split = hostport.len();
    for (i, c) in hostport.char_indices() {
        match c {
            '[' => in_brackets = true,
            ']' => in_brackets = false,
            ':' if !in_brackets => {
                split = i;
                break;
            }
            _ => {}
        }
    }
    let (host, port) = (&hostport[..split], &hostport[split..]);
    if host.is_empty() {
        return !special && port.is_empty() && !authority.contains('@');
    }
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| {
            p.bytes().all(|c| c.is_ascii_digit())
                && (p.is_empty() || p.parse::<u32>().is_ok_and(|v| v <= 65535))
        });
    port_ok && host_ok(host, special)
}

fn authority_end(s: &str, special: bool) -> usize {
    s.find(|c: char| c == '/' || c == '?' || c == '#' || (special && c == '\\'))
        .unwrap_or(s.len())
}

/// `URL.canParse(s)`.
pub(super) fn url(s: &str) -> bool {
    let trimmed: String = s
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let Some(n) = scheme_len(&trimmed) else {
        return false;
    };
    let scheme = trimmed[..n].to_ascii_lowercase();
    let rest = &trimmed[n + 1..];
    if scheme == "file" {
        let Some(after) = rest
            .strip_prefix("//")
            .or_else(|| rest.strip_prefix("\\\\"))
        else {
            return true;
        };
        let host = &after[..authority_end(after, true)];
        return host.is_empty() || host_ok(host, true);
    }
    if is_special(&scheme) {
        let after = rest.trim_start_matches(['/', '\\']);
        return url_authority(&after[..authority_end(after, true)], true);
    }
    match rest.strip_prefix("//") {
        Some(after) => url_authority(&after[..authority_end(after, false)], false),
        None => true,
    }
}

fn bad_percent(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, c)| {
        *c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// An IPvFuture literal (`[v1.x]`) replaced by `[::1]`, which the URL parser accepts.
fn narrow_ipv_future(s: &str) -> String {
    if utf16_len(s) >= 2048 {
        return s.to_string();
    }
    let b = s.as_bytes();
    for start in 0..b.len() {
        if b[start] != b'[' || !matches!(b.get(start + 1), Some(b'v' | b'V')) {
            continue;
        }
        let mut i = start + 2;
        let hex_start = i;
        while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
            i += 1;
        }
        if i == hex_start || b.get(i) != Some(&b'.') {
            continue;
        }
        i += 1;
        let body = i;
        while b.get(i).is_some_and(|c| *c != b']') {
            i += 1;
        }
        if i == body || b.get(i) != Some(&b']') {
            continue;
        }
        return format!("{}[::1]{}", &s[..start], &s[i + 1..]);
    }
    s.to_string()
}

pub(super) fn iri(s: &str) -> bool {
    let invalid = s
        .chars()
        .any(|c| c <= ' ' || matches!(c, '<' | '>' | '^' | '`' | '{' | '|' | '}' | '\\'));
    !invalid && !bad_percent(s) && url(&narrow_ipv_future(s))
}

pub(super) fn iri_reference(s: &str) -> bool {
    if s.chars().any(|c| c <= ' ' || c == '\u{7f}' || c == '\\') || bad_percent(s) {
        return false;
    }
    let b = s.as_bytes();
    if b.first().is_some_and(u8::is_ascii_alphabetic) {
        let n = b
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
            .count();
        if s[n..].starts_with("//") {
            return false;
        }
    }
    // Against the base http://example.com.
    match scheme_len(s) {
        Some(n) => {
            let scheme = s[..n].to_ascii_lowercase();
            if scheme == "http" && !s[n + 1..].starts_with("//") {
                return true;
            }
            url(s)
        }
        None => match s.strip_prefix("//") {
            Some(after) => {
                // The special base's authority state skips any further slashes.
                let after = after.trim_start_matches(['/', '\\']);
                url_authority(&after[..authority_end(after, true)], true)
            }
            None => true,
        },
    }
}
