//! `hostname` and `idn-hostname`: RFC 1123 labels, punycode A-labels decoded and checked as
//! U-labels (RFC 5891/5892 contextual rules, the RFC 5893 bidi rule), with the approximate
//! Unicode categories of `regex::unicode`.

use crate::regex::unicode;
use pi_js::utf16_len;

const PUNY_BASE: u32 = 36;
const PUNY_TMIN: u32 = 1;
const PUNY_TMAX: u32 = 26;

fn puny_adapt(delta: u64, points: u64, first: bool) -> u64 {
    let mut delta = if first { delta / 700 } else { delta / 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > u64::from((PUNY_BASE - PUNY_TMIN) * PUNY_TMAX) / 2 {
        delta /= u64::from(PUNY_BASE - PUNY_TMIN);
        k += u64::from(PUNY_BASE);
    }
    k + (u64::from(PUNY_BASE - PUNY_TMIN + 1) * delta) / (delta + 38)
}

fn puny_threshold(k: u64, bias: u64) -> u64 {
    if k <= bias {
        u64::from(PUNY_TMIN)
    } else if k >= bias + u64::from(PUNY_TMAX) {
        u64::from(PUNY_TMAX)
    } else {
        k - bias
    }
}

/// RFC 3492 decoding of a lowercase punycode payload.
fn puny_decode(s: &str) -> Option<String> {
    let units: Vec<u16> = s.encode_utf16().collect();
    let mut output: Vec<u64> = Vec::new();
    let delim = units.iter().rposition(|&u| u == u16::from(b'-'));
    if let Some(d) = delim.filter(|&d| d > 0) {
        for &u in &units[..d] {
            if u >= 128 {
                return None;
            }
            output.push(u64::from(u));
        }
    }
    let mut n: u64 = 128;
    let mut i: u64 = 0;
    let mut bias: u64 = 72;
    let mut idx = delim.map_or(0, |d| d + 1);
    while idx < units.len() {
        let old_i = i;
        let mut w: u64 = 1;
        let mut k = u64::from(PUNY_BASE);
        loop {
            let ch = *units.get(idx)?;
            idx += 1;
            let digit = match ch {
                0x61..=0x7a => u64::from(ch - 0x61),
                0x30..=0x39 => u64::from(ch - 0x30 + 26),
                _ => return None,
            };
            i = i.checked_add(digit.checked_mul(w)?)?;
            let t = puny_threshold(k, bias);
            if digit < t {
                break;
            }
            w = w.checked_mul(u64::from(PUNY_BASE) - t)?;
            k += u64::from(PUNY_BASE);
        }
        let len = output.len() as u64 + 1;
        bias = puny_adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        output.insert(i as usize, n);
        i += 1;
    }
    output
        .into_iter()
        .map(|c| u32::try_from(c).ok().and_then(char::from_u32))
        .collect()
}

/// The length of the RFC 3492 encoding of `s`.
fn puny_encoded_len(s: &str) -> usize {
    let points: Vec<u64> = s.chars().map(|c| u64::from(u32::from(c))).collect();
    let basic = points.iter().filter(|&&c| c < 0x80).count();
    let mut len = if basic > 0 { basic + 1 } else { 0 };
    let mut n: u64 = 128;
    let mut delta: u64 = 0;
    let mut bias: u64 = 72;
    let mut handled = basic;
    while handled < points.len() {
        let m = points
            .iter()
            .copied()
            .filter(|&c| c >= n)
            .min()
            .unwrap_or(n);
        delta += (m - n) * (handled as u64 + 1);
        n = m;
        for &c in &points {
            if c < n {
                delta += 1;
            }
            if c == n {
                let mut q = delta;
                let mut k = u64::from(PUNY_BASE);
                loop {
                    let t = puny_threshold(k, bias);
                    if q < t {
                        break;
                    }
                    len += 1;
                    q = (q - t) / (u64::from(PUNY_BASE) - t);
                    k += u64::from(PUNY_BASE);
                }
                len += 1;
                bias = puny_adapt(delta, handled as u64 + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    len
}

fn is_ace_prefixed(s: &str) -> bool {
    s.to_lowercase().starts_with("xn--")
}

fn ascii_label(s: &str) -> bool {
    let b = s.as_bytes();
    let line = |c: &u8| matches!(c, b'\n' | b'\r');
    b.first() != Some(&b'-')
        && b.last() != Some(&b'-')
        && !(b.len() >= 4 && !b[..2].iter().any(line) && &b[2..4] == b"--")
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

fn puny_label(s: &str) -> bool {
    if !is_ace_prefixed(s) {
        return false;
    }
    let body: String = s.chars().skip(4).collect::<String>().to_lowercase();
    if body.rfind('-') == Some(0) {
        return false;
    }
    match puny_decode(&body) {
        Some(decoded) => !decoded.is_ascii() && unicode_label(&decoded),
        None => false,
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Bidi {
    En,
    An,
    Nsm,
    R,
    Al,
    L,
    On,
}

fn bidi_class(c: char) -> Bidi {
    if c.is_ascii_digit() || ('\u{6f0}'..='\u{6f9}').contains(&c) {
        Bidi::En
    } else if ('\u{660}'..='\u{669}').contains(&c) {
        Bidi::An
    } else if unicode::is_nonspacing_mark(c) {
        Bidi::Nsm
    } else if unicode::in_script("Hebrew", c) {
        Bidi::R
    } else if ["Arabic", "Syriac", "Thaana", "Mandaic"]
        .iter()
        .any(|s| unicode::in_script(s, c))
    {
        Bidi::Al
    } else if unicode::is_letter(c) {
        Bidi::L
    } else {
        Bidi::On
    }
}

fn has_rtl(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(bidi_class(c), Bidi::R | Bidi::Al | Bidi::An))
}

fn has_bidi(label: &str) -> bool {
    if is_ace_prefixed(label) {
        let body: String = label.chars().skip(4).collect::<String>().to_lowercase();
        return puny_decode(&body).is_some_and(|d| has_rtl(&d));
    }
    has_rtl(label)
}

fn satisfies_bidi(s: &str) -> bool {
    let mut rtl = false;
    let mut first = true;
    let (mut en, mut an) = (false, false);
    for c in s.chars() {
        let class = bidi_class(c);
        if first {
            if !matches!(class, Bidi::L | Bidi::R | Bidi::Al) {
                return false;
            }
            rtl = matches!(class, Bidi::R | Bidi::Al);
            first = false;
        }
        let allowed = if rtl {
            matches!(
                class,
                Bidi::R | Bidi::Al | Bidi::An | Bidi::En | Bidi::On | Bidi::Nsm
            )
        } else {
            matches!(class, Bidi::L | Bidi::En | Bidi::On | Bidi::Nsm)
        };
        if !allowed {
            return false;
        }
        en |= class == Bidi::En;
        an |= class == Bidi::An;
    }
    !(rtl && en && an)
}

const VIRAMA: &[u32] = &[
    0x94d, 0x9cd, 0xa4d, 0xacd, 0xb4d, 0xbcd, 0xc4d, 0xccd, 0xd3b, 0xd3c, 0xd4d, 0xdca, 0x1b44,
    0x1baa, 0x1bab, 0xa9c0, 0x11046, 0x1107f, 0x110b9, 0x11133, 0x11134, 0x111c0, 0x11235, 0x1134d,
    0x11442, 0x114c2, 0x115bf, 0x1163f, 0x116b6, 0x11c3f, 0x11d44, 0x11d45,
];

fn unicode_label(s: &str) -> bool {
    if !s.is_ascii() && puny_encoded_len(s) + 4 > 63 {
        return false;
    }
    if has_rtl(s) && !satisfies_bidi(s) {
        return false;
    }
    let chars: Vec<char> = s.chars().collect();
    if chars.first() == Some(&'-') || chars.last() == Some(&'-') {
        return false;
    }
    if chars.len() >= 4 && chars[2] == '-' && chars[3] == '-' {
        return false;
    }
    if chars.first().is_some_and(|&c| unicode::is_mark(c)) {
        return false;
    }
    let mut japanese = false;
    for (i, &c) in chars.iter().enumerate() {
        let cp = u32::from(c);
        if matches!(
            cp,
            0x640 | 0x7fa | 0x302e | 0x302f | 0x3031..=0x3035 | 0x303b
        ) {
            return false;
        }
        let permitted = unicode::is_letter(c)
            || matches!(c, '-' | '+' | '.' | ',' | ':' | '/')
            || unicode::is_decimal_number(c)
            || unicode::is_mark(c)
            || matches!(cp, 0xb7 | 0x375 | 0x5f3 | 0x5f4 | 0x200c | 0x200d | 0x30fb)
            || matches!(cp, 0xdf | 0x3c2 | 0x6fd | 0x6fe | 0xf0b | 0x3007);
        if !permitted {
            return false;
        }
        if ["Hiragana", "Katakana", "Han"]
            .iter()
            .any(|s| unicode::in_script(s, c))
        {
            japanese = true;
        }
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let virama = |c: Option<char>| c.is_some_and(|c| VIRAMA.contains(&u32::from(c)));
        let ok = match cp {
            0xb7 => prev == Some('l') && next == Some('l'),
            0x375 => next.is_some_and(|n| unicode::in_script("Greek", n)),
            0x5f3 | 0x5f4 => prev.is_some_and(|p| unicode::in_script("Hebrew", p)),
            0x200c => prev.is_some_and(|p| u32::from(p) >= 0x80 || virama(Some(p))),
            0x200d => virama(prev),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    !s.contains('\u{30fb}') || japanese
}

pub(super) fn hostname(s: &str) -> bool {
    let n = utf16_len(s);
    if n == 0 || n > 253 || s.ends_with('.') {
        return false;
    }
    s.split('.').all(|label| {
        (1..=63).contains(&utf16_len(label)) && (puny_label(label) || ascii_label(label))
    })
}

pub(super) fn idn_hostname(s: &str) -> bool {
    if s.is_empty() || s.contains(' ') {
        return false;
    }
    let normalized: String = s
        .chars()
        .map(|c| match u32::from(c) {
            0xff01..=0xff5e => char::from_u32(u32::from(c) - 0xfee0).unwrap_or(c),
            _ => c,
        })
        .filter(|&c| {
            !matches!(u32::from(c), 0xad | 0x34f | 0x180b..=0x180d | 0x200b | 0xfe00..=0xfe0f | 0xe0100..=0xe01ef)
        })
        .map(|c| match c {
            '\u{3002}' | '\u{ff0e}' | '\u{ff61}' => '.',
            _ => c,
        })
        .collect();
    if utf16_len(&normalized) > 253 {
        return false;
    }
    let labels: Vec<&str> = normalized.split('.').collect();
    let bidi = labels.iter().any(|l| has_bidi(l));
    labels.iter().all(|label| {
        (1..=63).contains(&utf16_len(label))
            && (puny_label(label) || unicode_label(label))
            && (!bidi || satisfies_bidi(label))
    })
}
