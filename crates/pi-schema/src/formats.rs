//! The `format` checks pi-schema ships (`@earendil-works/pi-schema/formats`, adapted there from
//! TypeBox), written as small parsers of the same languages: dates and times, durations, email
//! addresses, IP addresses, UUIDs, JSON Pointers and RFC 3986 URIs here; URLs (WHATWG) and
//! hostnames (IDNA) in submodules. `idn-email` uses the approximate Unicode categories of
//! `regex::unicode` and, unlike pi-schema, does not NFC-normalize first.

mod idna;
mod whatwg;

use super::regex;
use super::regex::unicode;

/// Whether `s` has `format`; `None` for a format pi-schema does not check.
pub(crate) fn check(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "date" => date(s),
        "date-time" => date_time(s),
        "duration" => duration(s),
        "email" => email(s),
        "hostname" => idna::hostname(s),
        "idn-email" => idn_email(s),
        "idn-hostname" => idna::idn_hostname(s),
        "ipv4" => ipv4(s),
        "ipv6" => ipv6(s),
        "iri" => whatwg::iri(s),
        "iri-reference" => whatwg::iri_reference(s),
        "json-pointer" => json_pointer(s),
        "json-pointer-uri-fragment" => json_pointer_uri_fragment(s),
        "regex" => regex::is_valid_unicode(s),
        "relative-json-pointer" => relative_json_pointer(s),
        "time" => time(s),
        "uri" => uri(s),
        "uri-reference" => uri_reference(s),
        "uri-template" => uri_template(s),
        "url" => whatwg::url(s),
        "uuid" => uuid(s),
        _ => return None,
    })
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |v, d| {
        v.saturating_mul(10).saturating_add(u32::from(d - b'0'))
    }))
}

fn date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(hr), Some(min), Some(sec)) = (digits(&b[..2]), digits(&b[3..5]), digits(&b[6..8]))
    else {
        return false;
    };
    let mut i = 8;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let (sign, tz_h, tz_m) = match &b[i..] {
        [b'Z' | b'z'] => (1i64, 0, 0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (Some(h), Some(m)) = (digits(&[*h1, *h2]), digits(&[*m1, *m2])) else {
                return false;
            };
            if h > 23 || m > 59 {
                return false;
            }
            (if *sign == b'-' { -1 } else { 1 }, h, m)
        }
        _ => return false,
    };
    if hr > 23 || min > 59 || sec > 60 {
        return false;
    }
    if sec < 60 {
        return true;
    }
    // A leap second is 23:59:60 in UTC.
    let total = i64::from(hr * 60 + min) - sign * i64::from(tz_h * 60 + tz_m);
    total.rem_euclid(1440) == 1439
}

fn date_time(s: &str) -> bool {
    let mut parts = s.split(['T', 't']);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(d), Some(t), None) => date(d) && time(t),
        _ => false,
    }
}

/// `P` then date components in order without gaps (`Y`, `YM`, `YMD`, `M`, `MD`, `D`) and an
/// optional `T` with time components likewise (`H`…`S`), or a time part alone, or weeks alone.
fn duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('P') else {
        return false;
    };
    fn components(s: &str) -> Option<Vec<u8>> {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start || i == b.len() {
                return None;
            }
            out.push(b[i]);
            i += 1;
        }
        Some(out)
    }
    fn chain(found: &[u8], order: &[u8]) -> bool {
        let Some(first) = found
            .first()
            .and_then(|f| order.iter().position(|o| o == f))
        else {
            return false;
        };
        found.len() <= order.len() - first && found.iter().zip(&order[first..]).all(|(f, o)| f == o)
    }
    let (date_part, time_part) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let Some(date) = components(date_part) else {
        return false;
    };
    if let Some(t) = time_part {
        let Some(time) = components(t) else {
            return false;
        };
        if !chain(&time, b"HMS") {
            return false;
        }
        return date.is_empty() || chain(&date, b"YMD");
    }
    date == b"W" || chain(&date, b"YMD")
}

fn is_atext(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&c)
}

/// A quoted local part at the start of `s`: the index after its closing quote. `escaped`
/// tells which characters may follow a backslash.
fn quoted(s: &[u32], escaped: impl Fn(u32) -> bool) -> Option<usize> {
    if s.first() != Some(&u32::from(b'"')) {
        return None;
    }
    let mut i = 1;
    while let Some(&c) = s.get(i) {
        match c {
            0x22 => return Some(i + 1),
            0x5c => {
                if !s.get(i + 1).is_some_and(|&n| escaped(n)) {
                    return None;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    None
}

fn dot_atoms(s: &[u32], atext: impl Fn(u32) -> bool) -> bool {
    let mut last_dot = true;
    for &c in s {
        if c == 0x2e {
            if last_dot {
                return false;
            }
            last_dot = true;
        } else if atext(c) {
            last_dot = false;
        } else {
            return false;
        }
    }
    !last_dot
}

/// Splits an address into local part and domain at the `@` that ends the local part.
fn split_address(s: &[u32], escaped: impl Fn(u32) -> bool) -> Option<(&[u32], &[u32])> {
    let at = match quoted(s, escaped) {
        Some(end) => end,
        None => s.iter().position(|&c| c == 0x40)?,
    };
    (s.get(at) == Some(&0x40)).then(|| (&s[..at], &s[at + 1..]))
}

fn email(s: &str) -> bool {
    let units: Vec<u32> = s.encode_utf16().map(u32::from).collect();
    let Some((local, domain)) = split_address(&units, |c| (0x20..=0x7e).contains(&c)) else {
        return false;
    };
    let local_ok =
        local.first() == Some(&0x22) || dot_atoms(local, |c| c < 0x80 && is_atext(c as u8));
    if !local_ok {
        return false;
    }
    let domain: String = char::decode_utf16(domain.iter().map(|&u| u as u16))
        .map(|c| c.unwrap_or('\u{fffd}'))
        .collect();
    if let Some(inner) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        if let Some(v6) = inner.get(..5).filter(|p| p.eq_ignore_ascii_case("IPv6:")) {
            let rest = &inner[v6.len()..];
            return !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_hexdigit() || c == b':');
        }
        return ipv4(inner);
    }
    !domain.is_empty()
        && domain.split('.').all(|label| {
            let b = label.as_bytes();
            (1..=63).contains(&b.len())
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

fn idn_email(s: &str) -> bool {
    let units: Vec<u32> = s.chars().map(u32::from).collect();
    let line = |c: u32| !matches!(c, 0x0a | 0x0d | 0x2028 | 0x2029);
    let Some((local, domain)) = split_address(&units, line) else {
        return false;
    };
    let local_ok =
        local.first() == Some(&0x22) || dot_atoms(local, |c| c >= 0x80 || is_atext(c as u8));
    if !local_ok || domain.is_empty() {
        return false;
    }
    let alnum = |c: u32| {
        char::from_u32(c).is_some_and(|ch| unicode::is_letter(ch) || unicode::is_number(ch))
    };
    domain.split(|&c| c == 0x2e).all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && alnum(label[0])
            && label[label.len() - 1] != 0x2d
            && label.iter().all(|&c| alnum(c) || c == 0x2d)
    })
}

fn dec_octet(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=3).contains(&b.len())
        && !(b.len() > 1 && b[0] == b'0')
        && digits(b).is_some_and(|v| v <= 255)
}

fn ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4 && parts.iter().all(|p| dec_octet(p))
}

fn h16(s: &str) -> bool {
    (1..=4).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// RFC 3986's IPv6address: eight groups, or fewer around one `::` that stands for at least one,
/// the last two possibly written as an IPv4 address.
fn ipv6(s: &str) -> bool {
    fn groups(part: &str, may_end_in_ipv4: bool) -> Option<usize> {
        if part.is_empty() {
            return Some(0);
        }
        let pieces: Vec<&str> = part.split(':').collect();
        let mut count = 0;
        for (i, p) in pieces.iter().enumerate() {
            if h16(p) {
                count += 1;
            } else if may_end_in_ipv4 && i + 1 == pieces.len() && ipv4(p) {
                count += 2;
            } else {
                return None;
            }
        }
        Some(count)
    }
    match s.split_once("::") {
        Some((head, tail)) => {
            if tail.contains("::") {
                return false;
            }
            match (groups(head, false), groups(tail, true)) {
                (Some(h), Some(t)) => h + t <= 7,
                _ => false,
            }
        }
        None => groups(s, true) == Some(8),
    }
}

fn uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn json_pointer(s: &str) -> bool {
    (s.is_empty() || s.starts_with('/')) && tildes_escaped(s)
}

fn tildes_escaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, c)| *c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
}

fn json_pointer_uri_fragment(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('#') else {
        return false;
    };
    if !(rest.is_empty() || rest.starts_with('/')) || !tildes_escaped(rest) {
        return false;
    }
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
            continue;
        }
        if !(c.is_ascii_alphanumeric() || b"_-.!$&'()*+,;:=@/~".contains(&c)) {
            return false;
        }
        i += 1;
    }
    true
}

fn relative_json_pointer(s: &str) -> bool {
    let b = s.as_bytes();
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || (n > 1 && b[0] == b'0') {
        return false;
    }
    let rest = &s[n..];
    rest == "#" || json_pointer(rest)
}

// ---------------------------------------------------------------------------------------------
// RFC 3986 URIs
// ---------------------------------------------------------------------------------------------

fn is_unreserved_or_sub_delim(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&c)
}

/// Every character of `s` is allowed by `allowed` or part of a `%XX` escape.
fn chars_ok(s: &str, allowed: impl Fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else if allowed(b[i]) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

fn pchar(c: u8) -> bool {
    is_unreserved_or_sub_delim(c) || c == b':' || c == b'@'
}

/// The length of a scheme followed by `:` at the start of `s`.
pub(super) fn scheme_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        .count();
    (b.get(n) == Some(&b':')).then_some(n)
}

fn ip_literal(inner: &str) -> bool {
    if let Some(future) = inner.strip_prefix(['v', 'V']) {
        return match future.split_once('.') {
            Some((hex, rest)) => {
                !hex.is_empty()
                    && hex.bytes().all(|c| c.is_ascii_hexdigit())
                    && !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|c| is_unreserved_or_sub_delim(c) || c == b':')
            }
            None => false,
        };
    }
    ipv6(inner)
}

fn authority(a: &str) -> bool {
    let (userinfo, hostport) = match a.split_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, a),
    };
    if userinfo.is_some_and(|u| !chars_ok(u, |c| is_unreserved_or_sub_delim(c) || c == b':')) {
        return false;
    }
    let port = if let Some(after) = hostport.strip_prefix('[') {
        let Some((inner, rest)) = after.split_once(']') else {
            return false;
        };
        if !ip_literal(inner) {
            return false;
        }
        rest
    } else {
        let end = hostport.find(':').unwrap_or(hostport.len());
        if !chars_ok(&hostport[..end], is_unreserved_or_sub_delim) {
            return false;
        }
        &hostport[end..]
    };
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|c| c.is_ascii_digit()))
}

/// The part after a scheme (or a whole relative reference): hierarchy, query and fragment.
fn hier_query_fragment(s: &str, relative: bool) -> bool {
    let (s, fragment) = match s.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (s, None),
    };
    let query_char = |c: u8| pchar(c) || c == b'/' || c == b'?';
    if fragment.is_some_and(|f| !chars_ok(f, query_char)) {
        return false;
    }
    let (hier, query) = match s.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (s, None),
    };
    if query.is_some_and(|q| !chars_ok(q, query_char)) {
        return false;
    }
    let path_char = |c: u8| pchar(c) || c == b'/';
    if let Some(after) = hier.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        return authority(&after[..end]) && chars_ok(&after[end..], path_char);
    }
    if relative && !hier.starts_with('/') {
        let end = hier.find('/').unwrap_or(hier.len());
        return chars_ok(&hier[..end], |c| is_unreserved_or_sub_delim(c) || c == b'@')
            && chars_ok(&hier[end..], path_char);
    }
    chars_ok(hier, path_char)
}

fn uri(s: &str) -> bool {
    scheme_len(s).is_some_and(|n| hier_query_fragment(&s[n + 1..], false))
}

fn uri_reference(s: &str) -> bool {
    uri(s) || hier_query_fragment(s, true)
}

fn uri_template(s: &str) -> bool {
    let b = s.as_bytes();
    let hex_at = |i: usize| {
        b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if !hex_at(i) {
                    return false;
                }
                i += 3;
            }
            b'{' => {
                i += 1;
                if b.get(i).is_some_and(|c| b"+#./;?&=,!@|".contains(c)) {
                    i += 1;
                }
                loop {
                    // varname: varchars, dot-separated.
                    let mut need_char = true;
                    loop {
                        match b.get(i) {
                            Some(b'%') if hex_at(i) => {
                                i += 3;
                                need_char = false;
                            }
                            Some(c) if c.is_ascii_alphanumeric() || *c == b'_' => {
                                i += 1;
                                need_char = false;
                            }
                            Some(b'.') if !need_char => {
                                i += 1;
                                need_char = true;
                            }
                            _ => break,
                        }
                    }
                    if need_char {
                        return false;
                    }
                    match b.get(i) {
                        Some(b'*') => i += 1,
                        Some(b':') => {
                            i += 1;
                            if !b.get(i).is_some_and(|c| (b'1'..=b'9').contains(c)) {
                                return false;
                            }
                            i += 1;
                            let mut n = 0;
                            while n < 3 && b.get(i).is_some_and(u8::is_ascii_digit) {
                                i += 1;
                                n += 1;
                            }
                        }
                        _ => {}
                    }
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => {
                            i += 1;
                            break;
                        }
                        _ => return false,
                    }
                }
            }
            c if c <= 0x20 || b"\"<>\\^`{|}\x7f".contains(&c) => return false,
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject_like_pi_schema() {
        let cases: &[(&str, &str, bool)] = &[
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date-time", "2024-01-01T10:00:00Z", true),
            ("date-time", "2024-01-01T10:00:00", false),
            ("time", "23:59:60Z", true),
            ("time", "23:59:60+01:00", false),
            ("duration", "P1Y2M3DT4H5M6S", true),
            ("duration", "P1Y2D", false),
            ("duration", "P2W", true),
            ("duration", "PT", false),
            ("email", "a.b@example.com", true),
            ("email", "a..b@example.com", false),
            ("ipv4", "192.168.0.1", true),
            ("ipv4", "01.1.1.1", false),
            ("ipv6", "::1", true),
            ("ipv6", "1:2:3:4:5:6::1.2.3.4", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uri", "https://example.com/a?b#c", true),
            ("uri", "/relative", false),
            ("uri-reference", "/relative", true),
            ("uri-template", "/users/{id}", true),
            ("uri-template", "/users/{id", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("json-pointer", "/a~1b", true),
            ("json-pointer", "/a~2", false),
            ("relative-json-pointer", "0#", true),
            ("url", "http://[::1]:80/", true),
            ("url", "http://a:99999/", false),
        ];
        for (format, value, want) in cases {
            assert_eq!(check(format, value), Some(*want), "{format} {value:?}");
        }
    }
}
