//! Samples, their summaries and the result table.

use std::fmt::Write as _;

/// Summary of one figure's samples.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Summary {
        median: percentile_sorted(&v, 50.0),
        min: v[0],
        max: v[v.len() - 1],
        n: v.len(),
    })
}

/// Nearest-rank percentile of sorted data (the median of an even count is the mean of the two
/// middle values).
pub fn percentile_sorted(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    if p == 50.0 && v.len().is_multiple_of(2) {
        return (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

pub fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_sorted(&v, p)
}

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub figure: String,
    pub unit: &'static str,
    pub better: Better,
    pub ours: Vec<f64>,
    /// `None`: the reference has no comparable figure (e.g. rg is the comparison).
    pub reference: Option<Vec<f64>>,
    /// What ours is checked against, e.g. `≤ 5 ms`, and whether it is met.
    pub target: Option<(String, bool)>,
    /// Why a side has no samples (failed runs, unsupported command).
    pub notes: Vec<String>,
}

impl Row {
    pub fn new(figure: &str, unit: &'static str, better: Better) -> Row {
        Row {
            figure: figure.to_string(),
            unit,
            better,
            ours: Vec::new(),
            reference: Some(Vec::new()),
            target: None,
            notes: Vec::new(),
        }
    }

    pub fn ours_median(&self) -> Option<f64> {
        summarize(&self.ours).map(|s| s.median)
    }

    pub fn ref_median(&self) -> Option<f64> {
        self.reference
            .as_deref()
            .and_then(summarize)
            .map(|s| s.median)
    }

    /// ours / reference of the medians.
    pub fn ratio(&self) -> Option<f64> {
        match (self.ours_median(), self.ref_median()) {
            (Some(o), Some(r)) if r != 0.0 => Some(o / r),
            _ => None,
        }
    }
}

pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10_000.0 {
        format!("{:.0}", v)
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join(",")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn cell(samples: Option<&[f64]>, unit: &str) -> String {
    match samples.and_then(summarize) {
        None => "n/a".into(),
        Some(s) if s.n == 1 || s.min == s.max => format!("{} {unit}", fmt_num(s.median)),
        Some(s) => format!(
            "{} {unit} ({}–{})",
            fmt_num(s.median),
            fmt_num(s.min),
            fmt_num(s.max)
        ),
    }
}

fn fmt_ratio(r: f64) -> String {
    if r >= 0.1 {
        format!("{r:.2}")
    } else if r >= 0.001 {
        format!("{r:.4}")
    } else {
        format!("{r:.2e}")
    }
}

/// The Markdown table of all rows.
pub fn table(rows: &[Row], ref_name: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| Figure | ours: median (min–max) | {ref_name}: median (min–max) | ours/ref | target | met |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for r in rows {
        let ratio = match r.ratio() {
            Some(x) => {
                let time = matches!(r.unit, "ms" | "µs" | "s");
                let (less, more) = if time {
                    ("faster", "slower")
                } else {
                    ("less", "more")
                };
                let factor = match r.better {
                    Better::Lower if x > 0.0 => format!(" ({:.1}× {less})", 1.0 / x),
                    Better::Higher => format!(" ({x:.1}× more)"),
                    _ => String::new(),
                };
                if r.better == Better::Lower && x > 1.0 {
                    format!("{} ({x:.1}× {more})", fmt_ratio(x))
                } else {
                    format!("{}{factor}", fmt_ratio(x))
                }
            }
            None => "–".into(),
        };
        let (target, met) = match &r.target {
            Some((t, ok)) => (t.clone(), if *ok { "yes" } else { "**no**" }.to_string()),
            None => ("–".into(), "–".into()),
        };
        let mut figure = r.figure.clone();
        if !r.notes.is_empty() {
            figure.push_str(&format!(" ({})", r.notes.join("; ")));
        }
        let _ = writeln!(
            out,
            "| {figure} | {} | {} | {ratio} | {target} | {met} |",
            cell(Some(&r.ours), r.unit),
            cell(r.reference.as_deref(), r.unit),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_medians() {
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), 2.0);
        assert_eq!(percentile(&[4.0, 1.0, 2.0, 3.0], 50.0), 2.5);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(fmt_num(1234567.0), "1,234,567");
    }
}
