//! `Number(x)` for strings and `String(n)` for numbers, as JavaScript computes them.

/// `String(n)`: `NaN`, `Infinity`, `-Infinity`, or the shortest round-trip form
/// (`1e+21`, `1e-7`, `0.000001`) that `JSON.stringify` also writes.
pub fn number_to_string(n: f64) -> String {
    if n.is_nan() {
        return "NaN".to_string();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    let mut out = String::new();
    crate::json::push_js_number(&mut out, n);
    out
}

/// `Number(s)` for a string: NaN when it is not a numeric literal.
pub fn string_to_number(s: &str) -> f64 {
    let t = crate::string::trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_integer(&t[2..], radix);
        }
    }
    let (sign, body) = match b[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    match decimal_literal(body) {
        Some(v) => sign * v,
        None => f64::NAN,
    }
}

/// An unsigned decimal literal (`12`, `1.5`, `.5`, `5.`, `1e-3`), correctly rounded.
fn decimal_literal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_part = &s[int_start..i];
    let mut frac_part = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_part = &s[start..i];
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut exp = "0";
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let start = i + 1;
        let mut j = start;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == digits {
            return None;
        }
        exp = &s[start..j];
        i = j;
    }
    if i != b.len() {
        return None;
    }
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let frac_part = if frac_part.is_empty() { "0" } else { frac_part };
    format!("{int_part}.{frac_part}e{exp}").parse::<f64>().ok()
}

fn radix_integer(digits: &str, radix: u32) -> f64 {
    if digits.is_empty() {
        return f64::NAN;
    }
    let mut exact: Option<u128> = Some(0);
    let mut approx = 0.0f64;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return f64::NAN;
        };
        exact = exact
            .and_then(|e| e.checked_mul(u128::from(radix)))
            .and_then(|e| e.checked_add(u128::from(d)));
        approx = approx * f64::from(radix) + f64::from(d);
    }
    exact.map_or(approx, |e| e as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_string_of_a_number() {
        assert_eq!(number_to_string(10.0), "10");
        assert_eq!(number_to_string(2.5), "2.5");
        assert_eq!(number_to_string(1e21), "1e+21");
        assert_eq!(number_to_string(0.0000001), "1e-7");
        assert_eq!(number_to_string(f64::NAN), "NaN");
        assert_eq!(number_to_string(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn string_to_number_follows_javascript() {
        let cases: &[(&str, f64)] = &[
            ("", 0.0),
            ("  ", 0.0),
            (" 12 ", 12.0),
            ("1.5", 1.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("-0x10", f64::NAN),
            ("0x10", 16.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("1e3", 1000.0),
            ("1e", f64::NAN),
            ("+7", 7.0),
            ("-Infinity", f64::NEG_INFINITY),
            ("inf", f64::NAN),
            ("1_000", f64::NAN),
            ("12n", f64::NAN),
            ("\u{a0}3\u{2028}", 3.0),
        ];
        for (s, want) in cases {
            let got = string_to_number(s);
            assert!(
                got == *want || (got.is_nan() && want.is_nan()),
                "Number({s:?}) = {got}, want {want}"
            );
        }
    }
}
