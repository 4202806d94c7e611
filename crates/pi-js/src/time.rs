//! Timestamps as JavaScript's `Date` writes and reads them: `toISOString()` for entry and header
//! times, `new Date(iso).getTime()` when an entry time becomes a message `timestamp` or a sort key.

use std::time::{SystemTime, UNIX_EPOCH};

/// `Date.now()`: Unix milliseconds (0 for a clock set before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `new Date().toISOString()`.
pub fn now_iso() -> String {
    iso_from_ms(now_ms() as i64)
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A proleptic Gregorian date to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `new Date(ms).toISOString()` (years outside 0..=9999 use the six-digit signed form).
pub fn iso_from_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", -y)
    } else {
        format!("+{y:06}")
    };
    format!("{year}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// The timestamp part of a session file name: the ISO time with `:` and `.` replaced by `-`.
pub fn file_timestamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

/// Reads `n` ASCII digits at `*i`.
fn digits(b: &[u8], i: &mut usize, n: usize) -> Option<i64> {
    let s = b.get(*i..*i + n)?;
    if !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    *i += n;
    Some(s.iter().fold(0i64, |a, c| a * 10 + i64::from(c - b'0')))
}

fn expect(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
    (b.get(*i) == Some(&c)).then(|| *i += 1)
}

/// `new Date(s).getTime()` for the ECMAScript date-time string format (`YYYY-MM-DDTHH:mm:ss.sssZ`
/// and its shorter forms, `±HH:mm` offsets, six-digit years); `None` where JavaScript gives `NaN`.
/// A date-time without offset is read as UTC (JavaScript would use the local zone).
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let mut i = 0;
    let year = match b.first()? {
        b'+' | b'-' => {
            let neg = b[0] == b'-';
            i = 1;
            let y = digits(b, &mut i, 6)?;
            if neg && y == 0 {
                return None;
            }
            if neg { -y } else { y }
        }
        _ => digits(b, &mut i, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    if expect(b, &mut i, b'-').is_some() {
        month = digits(b, &mut i, 2)?;
        if expect(b, &mut i, b'-').is_some() {
            day = digits(b, &mut i, 2)?;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut h, mut min, mut sec, mut milli, mut offset_min) = (0, 0, 0, 0, 0);
    if expect(b, &mut i, b'T').is_some() {
        h = digits(b, &mut i, 2)?;
        expect(b, &mut i, b':')?;
        min = digits(b, &mut i, 2)?;
        if expect(b, &mut i, b':').is_some() {
            sec = digits(b, &mut i, 2)?;
            if expect(b, &mut i, b'.').is_some() {
                let start = i;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                let frac = &s[start..i.min(start + 3)];
                milli = frac.parse::<i64>().ok()? * 10i64.pow(3 - frac.len() as u32);
            }
        }
        match b.get(i) {
            Some(b'Z') => i += 1,
            Some(c @ (b'+' | b'-')) => {
                let sign = if *c == b'-' { -1 } else { 1 };
                i += 1;
                let oh = digits(b, &mut i, 2)?;
                expect(b, &mut i, b':')?;
                let om = digits(b, &mut i, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                offset_min = sign * (oh * 60 + om);
            }
            _ => {}
        }
        let midnight_24 = h == 24 && min == 0 && sec == 0 && milli == 0;
        if (h > 23 && !midnight_24) || min > 59 || sec > 59 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let ms =
        days * 86_400_000 + h * 3_600_000 + min * 60_000 + sec * 1000 + milli - offset_min * 60_000;
    // The range of a JavaScript Date: ±100,000,000 days around the epoch.
    (ms.abs() <= 8_640_000_000_000_000).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_to_iso_string() {
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_ms(1_796_001_938_008), "2026-11-30T01:25:38.008Z");
        assert_eq!(iso_from_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso_from_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            file_timestamp("2026-11-29T23:46:16.125Z"),
            "2026-11-29T23-46-16-125Z"
        );
    }

    #[test]
    fn parses_like_date_constructor() {
        let cases: &[(&str, Option<i64>)] = &[
            ("2026-11-30T01:25:38.008Z", Some(1_796_001_938_008)),
            ("1970-01-01T00:00:00Z", Some(0)),
            ("1970-01-01", Some(0)),
            ("1970-01", Some(0)),
            ("1970", Some(0)),
            ("1970-01-01T01:00:00+01:00", Some(0)),
            ("1970-01-01T00:00:00.5Z", Some(500)),
            ("1970-01-01T00:00:00.123456Z", Some(123)),
            ("1970-01-01T24:00:00Z", Some(86_400_000)),
            ("1970-01-01T24:00:01Z", None),
            ("1970-13-01", None),
            ("t", None),
            ("", None),
            ("2026-11-30T01:25:38.008Zx", None),
            ("+002026-11-30T01:25:38.008Z", Some(1_796_001_938_008)),
            ("-000000-01-01T00:00:00Z", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_iso_ms(s), *want, "{s}");
        }
        for ms in [0, 1, -1, 1_796_001_938_008, -62_198_755_200_000] {
            assert_eq!(parse_iso_ms(&iso_from_ms(ms)), Some(ms));
        }
    }
}
