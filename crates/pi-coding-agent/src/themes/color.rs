//! Theme colours (`docs/themes.md`): `#rgb`/`#rrggbb`, `oklch(L C H)`, `okhsl(H S L)`, a
//! 256-colour palette index, and their sRGB values.
//!
//! OKLCH is reduced in chroma (hue and lightness kept) until it fits sRGB; OKHSL is Björn
//! Ottosson's hue/saturation/lightness over Oklab, whose saturation is relative to the sRGB
//! gamut at each hue and lightness (his published construction: the gamut cusp per hue from a
//! fitted maximum saturation refined by one Halley step, and the chroma stops at 0, 0.8 and 1).
//! Palette indices use the xterm palette.

// The matrices are written as published; the extra digits round to the same f64.
#![allow(clippy::excessive_precision)]

use pi_js::number_to_string;
use regex::Regex;
use std::sync::OnceLock;

/// A parsed colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Color {
    /// A palette index, 0–255.
    Indexed(u8),
    /// sRGB channels, 0–255.
    Rgb(f64, f64, f64),
    /// Oklab lightness (0–1), chroma, hue in degrees.
    Oklch(f64, f64, f64),
}

/// Oklab ↔ linear sRGB through LMS (Ottosson's matrices, double precision).
const LINEAR_SRGB_TO_LMS: [[f64; 3]; 3] = [
    [0.4122214694707629, 0.5363325372617349, 0.0514459932675022],
    [0.2119034958178251, 0.6806995506452344, 0.1073969535369405],
    [0.0883024591900564, 0.2817188391361215, 0.6299787016738222],
];
const LMS_TO_LAB: [[f64; 3]; 3] = [
    [0.210454268309314, 0.793617774702305, -0.0040720430116193],
    [1.9779985324311684, -2.42859224204858, 0.450593709617411],
    [0.0259040424655478, 0.7827717124575296, -0.8086757549230774],
];
const LAB_TO_LMS: [[f64; 3]; 3] = [
    [1.0, 0.3963377773761749, 0.2158037573099136],
    [1.0, -0.1055613458156586, -0.0638541728258133],
    [1.0, -0.0894841775298119, -1.2914855480194092],
];
const LMS_TO_LINEAR_SRGB: [[f64; 3]; 3] = [
    [4.0767416360759583, -3.3077115392580629, 0.2309699031821043],
    [-1.2684379732850315, 2.6097573492876882, -0.341319376002657],
    [-0.0041960761386756, -0.7034186179359362, 1.7076146940746117],
];

/// Per channel (red, green, blue): the half-plane of hues where it clips first (`x·a + y·b >
/// 1`), and the polynomial fit of the largest saturation there.
const SATURATION_FIT: [([f64; 2], [f64; 5]); 3] = [
    (
        [-1.8817031, -0.80936501],
        [1.19086277, 1.76576728, 0.59662641, 0.75515197, 0.56771245],
    ),
    (
        [1.8144408, -1.19445267],
        [0.73956515, -0.45954404, 0.08285427, 0.12541073, -0.14503204],
    ),
    (
        [0.13110758, 1.81333971],
        [1.35733652, -0.00915799, -1.1513021, -0.50559606, 0.00692167],
    ),
];

/// OKHSL's lightness "toe" constants.
const K1: f64 = 0.206;
const K2: f64 = 0.03;
const K3: f64 = (1.0 + K1) / (1.0 + K2);

fn mul(m: &[[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
    [
        m[0][0] * v[0] + m[0][1] * v[1] + m[0][2] * v[2],
        m[1][0] * v[0] + m[1][1] * v[1] + m[1][2] * v[2],
        m[2][0] * v[0] + m[2][1] * v[1] + m[2][2] * v[2],
    ]
}

fn oklab_to_linear(lab: [f64; 3]) -> [f64; 3] {
    let lms = mul(&LAB_TO_LMS, lab).map(|x| x * x * x);
    mul(&LMS_TO_LINEAR_SRGB, lms)
}

fn linear_to_oklab(rgb: [f64; 3]) -> [f64; 3] {
    mul(&LMS_TO_LAB, mul(&LINEAR_SRGB_TO_LMS, rgb).map(f64::cbrt))
}

fn to_srgb_channel(v: f64) -> f64 {
    if v > 0.0031308 {
        1.055 * v.powf(1.0 / 2.4) - 0.055
    } else {
        12.92 * v
    }
}

fn to_linear_channel(v: f64) -> f64 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

/// Linear sRGB to 0–255 channels, clipped and rounded.
fn linear_to_rgb(linear: [f64; 3]) -> (f64, f64, f64) {
    let c = |v: f64| (to_srgb_channel(v).clamp(0.0, 1.0) * 255.0).round();
    (c(linear[0]), c(linear[1]), c(linear[2]))
}

fn rgb_to_oklab(r: f64, g: f64, b: f64) -> [f64; 3] {
    linear_to_oklab([r, g, b].map(|v| to_linear_channel(v / 255.0)))
}

/// How each cube-root LMS component changes along the chroma direction `(a, b)`.
fn lms_slopes(a: f64, b: f64) -> [f64; 3] {
    [0, 1, 2].map(|i| LAB_TO_LMS[i][1] * a + LAB_TO_LMS[i][2] * b)
}

/// The largest saturation (C/L) in sRGB for the hue `(a, b)`.
fn max_saturation(a: f64, b: f64) -> f64 {
    let channel = SATURATION_FIT
        .iter()
        .position(|([x, y], _)| x * a + y * b > 1.0)
        .unwrap_or(2);
    let k = SATURATION_FIT[channel].1;
    let weights = LMS_TO_LINEAR_SRGB[channel];
    let s = k[0] + k[1] * a + k[2] * b + k[3] * a * a + k[4] * a * b;
    let slopes = lms_slopes(a, b);
    let base = slopes.map(|k| 1.0 + s * k);
    let dot = |v: [f64; 3]| weights[0] * v[0] + weights[1] * v[1] + weights[2] * v[2];
    let f = dot(base.map(|v| v * v * v));
    let f1 = dot([0, 1, 2].map(|i| 3.0 * slopes[i] * base[i] * base[i]));
    let f2 = dot([0, 1, 2].map(|i| 6.0 * slopes[i] * slopes[i] * base[i]));
    // One Halley step on the clipping channel.
    s - (f * f1) / (f1 * f1 - 0.5 * f * f2)
}

/// Lightness and chroma of the most saturated sRGB colour of the hue.
fn cusp(a: f64, b: f64) -> (f64, f64) {
    let s = max_saturation(a, b);
    let rgb = oklab_to_linear([1.0, s * a, s * b]);
    let l = (1.0 / rgb[0].max(rgb[1]).max(rgb[2])).cbrt();
    (l, l * s)
}

/// The chroma where the constant-lightness line leaves the gamut.
fn max_chroma(a: f64, b: f64, l: f64, (cusp_l, cusp_c): (f64, f64)) -> f64 {
    if l <= cusp_l {
        return cusp_c * l / cusp_l;
    }
    let t = cusp_c * (l - 1.0) / (cusp_l - 1.0);
    let slopes = lms_slopes(a, b);
    let lms = slopes.map(|k| l + t * k);
    let cubes = lms.map(|v| v * v * v);
    let first = [0, 1, 2].map(|i| 3.0 * slopes[i] * lms[i] * lms[i]);
    let second = [0, 1, 2].map(|i| 6.0 * slopes[i] * slopes[i] * lms[i]);
    let dot = |row: [f64; 3], v: [f64; 3]| row[0] * v[0] + row[1] * v[1] + row[2] * v[2];
    let step = |row: [f64; 3]| {
        let f = dot(row, cubes) - 1.0;
        let f1 = dot(row, first);
        let f2 = dot(row, second);
        let u = f1 / (f1 * f1 - 0.5 * f * f2);
        if u >= 0.0 { -f * u } else { f64::MAX }
    };
    t + LMS_TO_LINEAR_SRGB
        .iter()
        .map(|row| step(*row))
        .fold(f64::INFINITY, f64::min)
}

/// OKHSL's chroma at saturation 0 (the start slope), 0.8 and 1 for lightness `l` and hue.
fn chroma_stops(l: f64, a: f64, b: f64) -> (f64, f64, f64) {
    let peak = cusp(a, b);
    let c_max = max_chroma(a, b, l, peak);
    let k = c_max / (l * (peak.1 / peak.0)).min((1.0 - l) * (peak.1 / (1.0 - peak.0)));
    let mid_s = 0.11516993
        + 1.0
            / (7.4477897
                + 4.1590124 * b
                + a * (-2.19557347
                    + 1.75198401 * b
                    + a * (-2.13704948 - 10.02301043 * b
                        + a * (-4.24894561 + 5.38770819 * b + 4.69891013 * a))));
    let mid_t = 0.11239642
        + 1.0
            / (1.6132032 - 0.68124379 * b
                + a * (0.40370612
                    + 0.90148123 * b
                    + a * (-0.27087943
                        + 0.6122399 * b
                        + a * (0.00299215 - 0.45399568 * b - 0.14661872 * a))));
    let c_mid = 0.9
        * k
        * (1.0 / (1.0 / (l * mid_s).powi(4) + 1.0 / ((1.0 - l) * mid_t).powi(4)))
            .sqrt()
            .sqrt();
    let c0 = (1.0 / (1.0 / (l * 0.4).powi(2) + 1.0 / ((1.0 - l) * 0.8).powi(2))).sqrt();
    (c0, c_mid, c_max)
}

/// OKHSL (hue in degrees, saturation and lightness 0–1) to sRGB channels.
pub fn okhsl_to_rgb(hue: f64, saturation: f64, lightness: f64) -> (f64, f64, f64) {
    let l = (lightness * lightness + K1 * lightness) / (K3 * (lightness + K2));
    let mut lab = [l, 0.0, 0.0];
    if l > 0.0 && l < 1.0 && saturation > 0.0 {
        let angle = 2.0 * std::f64::consts::PI * ((hue % 360.0 + 360.0) % 360.0) / 360.0;
        let (a, b) = (angle.cos(), angle.sin());
        let (c0, c_mid, c_max) = chroma_stops(l, a, b);
        let chroma = if saturation < 0.8 {
            let t = 1.25 * saturation;
            let k1 = 0.8 * c0;
            t * k1 / (1.0 - (1.0 - k1 / c_mid) * t)
        } else {
            let t = 5.0 * (saturation - 0.8);
            let k1 = 0.2 * c_mid * c_mid * 1.25 * 1.25 / c0;
            c_mid + t * k1 / (1.0 - (1.0 - k1 / (c_max - c_mid)) * t)
        };
        lab = [l, chroma * a, chroma * b];
    }
    linear_to_rgb(oklab_to_linear(lab))
}

fn in_gamut(linear: [f64; 3]) -> bool {
    linear.iter().all(|c| *c >= -1e-7 && *c <= 1.0 + 1e-7)
}

/// OKLCH to sRGB, reducing chroma by bisection until the colour fits (grey always does).
fn oklch_to_rgb(l: f64, c: f64, h: f64) -> (f64, f64, f64) {
    let rad = h * std::f64::consts::PI / 180.0;
    let (cos, sin) = (rad.cos(), rad.sin());
    let at = |chroma: f64| oklab_to_linear([l, chroma * cos, chroma * sin]);
    let direct = at(c);
    if in_gamut(direct) {
        return linear_to_rgb(direct);
    }
    let mut linear = at(0.0);
    let (mut low, mut high) = (0.0, c);
    for _ in 0..20 {
        let chroma = (low + high) / 2.0;
        let candidate = at(chroma);
        if in_gamut(candidate) {
            low = chroma;
            linear = candidate;
        } else {
            high = chroma;
        }
    }
    linear_to_rgb(linear)
}

/// The xterm palette.
fn indexed_to_rgb(index: u8) -> (f64, f64, f64) {
    const BASIC: [(u8, u8, u8); 16] = [
        (0, 0, 0),
        (128, 0, 0),
        (0, 128, 0),
        (128, 128, 0),
        (0, 0, 128),
        (128, 0, 128),
        (0, 128, 128),
        (192, 192, 192),
        (128, 128, 128),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (0, 0, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    const CUBE: [u8; 6] = [0, 95, 135, 175, 215, 255];
    let f = |v: u8| f64::from(v);
    match index {
        0..=15 => {
            let (r, g, b) = BASIC[usize::from(index)];
            (f(r), f(g), f(b))
        }
        16..=231 => {
            let i = usize::from(index - 16);
            (f(CUBE[i / 36]), f(CUBE[(i % 36) / 6]), f(CUBE[i % 6]))
        }
        _ => {
            let grey = f(8 + (index - 232) * 10);
            (grey, grey, grey)
        }
    }
}

impl Color {
    /// sRGB channels, 0–255.
    pub fn rgb(self) -> (f64, f64, f64) {
        match self {
            Color::Indexed(i) => indexed_to_rgb(i),
            Color::Rgb(r, g, b) => (r, g, b),
            Color::Oklch(l, c, h) => oklch_to_rgb(l, c, h),
        }
    }

    /// `#rrggbb`.
    pub fn hex(self) -> String {
        let (r, g, b) = self.rgb();
        let c = |v: f64| v.round().clamp(0.0, 255.0) as u8;
        format!("#{:02x}{:02x}{:02x}", c(r), c(g), c(b))
    }

    /// Oklab lightness (for telling dark themes from light ones).
    pub fn lightness(self) -> f64 {
        match self {
            Color::Oklch(l, _, _) => l,
            other => {
                let (r, g, b) = other.rgb();
                rgb_to_oklab(r, g, b)[0]
            }
        }
    }
}

/// A colour value of a theme file: a palette index, or a colour string (not a variable).
pub fn parse_color(value: &serde_json::Value) -> Result<Color, String> {
    match value {
        serde_json::Value::Number(n) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            if v.fract() == 0.0 && (0.0..=255.0).contains(&v) {
                Ok(Color::Indexed(v as u8))
            } else {
                Err(format!(
                    "ANSI color index must be an integer from 0 to 255: {}",
                    number_to_string(v)
                ))
            }
        }
        serde_json::Value::String(s) => parse_color_str(s),
        other => Err(format!("Invalid color value: {other}")),
    }
}

type Patterns = (Option<Regex>, Option<Regex>, Option<Regex>);

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let n = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?";
        let build = |s: String| Regex::new(&s).ok();
        (
            build(r"(?i)^#([0-9a-f]{3}|[0-9a-f]{6})$".to_string()),
            build(format!(
                r"(?i)^oklch\(\s*({n})(%)?\s+({n})\s+({n})(?:deg)?\s*\)$"
            )),
            build(format!(
                r"(?i)^okhsl\(\s*({n})(?:deg)?\s+({n})(%)?\s+({n})(%)?\s*\)$"
            )),
        )
    })
}

fn num(s: &str) -> f64 {
    s.parse::<f64>().unwrap_or(f64::NAN)
}

fn parse_color_str(value: &str) -> Result<Color, String> {
    let (hex, oklch, okhsl) = patterns();
    let captures = |r: &Option<Regex>| r.as_ref().and_then(|r| r.captures(value));
    if let Some(m) = captures(hex) {
        let digits: String = if m[1].len() == 3 {
            m[1].chars().flat_map(|c| [c, c]).collect()
        } else {
            m[1].to_string()
        };
        let ch = |i: usize| f64::from(u8::from_str_radix(&digits[i..i + 2], 16).unwrap_or(0));
        return Ok(Color::Rgb(ch(0), ch(2), ch(4)));
    }
    if let Some(m) = captures(oklch) {
        let l = num(&m[1]) / if m.get(2).is_some() { 100.0 } else { 1.0 };
        let (c, h) = (num(&m[3]), num(&m[4]));
        if !(0.0..=1.0).contains(&l) {
            return Err(format!(
                "l must be between 0 and 1: {}",
                number_to_string(l)
            ));
        }
        if c < 0.0 {
            return Err(format!("c must not be negative: {}", number_to_string(c)));
        }
        return Ok(Color::Oklch(l, c, (h % 360.0 + 360.0) % 360.0));
    }
    if let Some(m) = captures(okhsl) {
        let s = num(&m[2]) / if m.get(3).is_some() { 100.0 } else { 1.0 };
        let l = num(&m[4]) / if m.get(5).is_some() { 100.0 } else { 1.0 };
        if !(0.0..=1.0).contains(&s) {
            return Err(format!(
                "s must be between 0 and 1: {}",
                number_to_string(s)
            ));
        }
        if !(0.0..=1.0).contains(&l) {
            return Err(format!(
                "l must be between 0 and 1: {}",
                number_to_string(l)
            ));
        }
        let (r, g, b) = okhsl_to_rgb(num(&m[1]), s, l);
        return Ok(Color::Rgb(r, g, b));
    }
    Err(format!("Invalid color value: {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value was converted by Pi 1.6.0's colour code (`parseColor` + `colorToHex`).
    #[test]
    fn hex_values_match_pi() {
        let vectors: Vec<(serde_json::Value, String)> = serde_json::from_str(include_str!(
            "../../tests/fixtures/themes/color-vectors.json"
        ))
        .unwrap_or_default();
        assert!(vectors.len() > 400);
        let mut wrong = Vec::new();
        for (input, want) in &vectors {
            let got = match parse_color(input) {
                Ok(c) => c.hex(),
                Err(e) => format!("ERR {e}"),
            };
            if &got != want {
                wrong.push(format!("{input}: {got} != {want}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
