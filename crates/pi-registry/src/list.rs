//! `pi --list-models [search]` (`cli/list-models.js`): the available models as a table sorted by
//! provider and id, optionally narrowed by pi-tui's fuzzy filter over `"<provider> <id>"`.

use super::model_registry::ModelRegistry;
use pi_js::locale_compare;
use pi_protocol::Model;
use pi_protocol::model::InputModality;
use std::sync::Arc;

/// What `--list-models` writes (then Pi exits 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListModelsOutput {
    pub stdout: String,
    pub stderr: String,
}

/// `200000` → `200K`, `1000000` → `1M`, `1500` → `1.5K` (one decimal, JavaScript `toFixed`).
pub(crate) fn format_token_count(count: u64) -> String {
    let scaled = |unit: u64, suffix: &str| {
        if count.is_multiple_of(unit) {
            format!("{}{suffix}", count / unit)
        } else {
            format!("{}{suffix}", to_fixed_1(count as f64 / unit as f64))
        }
    };
    if count >= 1_000_000 {
        scaled(1_000_000, "M")
    } else if count >= 1_000 {
        scaled(1_000, "K")
    } else {
        count.to_string()
    }
}

/// `Number.prototype.toFixed(1)`: rounds the exact binary value, ties away from zero.
fn to_fixed_1(x: f64) -> String {
    // 60 fractional digits print the exact value of any double in this range.
    let exact = format!("{x:.60}");
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, "0"));
    let mut int: u64 = int_part.parse().unwrap_or(0);
    let mut tenth = frac.as_bytes().first().map_or(0, |d| d - b'0') as u64;
    let rest = &frac[1..];
    if rest.as_bytes().first().is_some_and(|d| *d >= b'5') {
        tenth += 1;
        if tenth == 10 {
            tenth = 0;
            int += 1;
        }
    }
    format!("{int}.{tenth}")
}

/// pi-tui `fuzzyMatch`: the query's characters in order (or, for `abc12`-style queries, with
/// letters and digits swapped).
fn fuzzy_matches(query: &str, text: &str) -> bool {
    let q = query.to_lowercase();
    let t = text.to_lowercase();
    if subsequence(&q, &t) {
        return true;
    }
    let letters = q.chars().take_while(char::is_ascii_lowercase).count();
    let digits = q.chars().take_while(char::is_ascii_digit).count();
    let swapped = if letters > 0
        && q[letters..].chars().all(|c| c.is_ascii_digit())
        && letters < q.len()
    {
        format!("{}{}", &q[letters..], &q[..letters])
    } else if digits > 0 && q[digits..].chars().all(|c| c.is_ascii_lowercase()) && digits < q.len()
    {
        format!("{}{}", &q[digits..], &q[..digits])
    } else {
        return false;
    };
    subsequence(&swapped, &t)
}

fn subsequence(query: &str, text: &str) -> bool {
    if query.encode_utf16().count() > text.encode_utf16().count() {
        return false;
    }
    let mut chars = text.chars();
    query.chars().all(|q| chars.any(|c| c == q))
}

fn fuzzy_filter(models: Vec<Arc<Model>>, query: &str) -> Vec<Arc<Model>> {
    let tokens: Vec<&str> = query
        .trim()
        .split(|c: char| c.is_whitespace() || c == '/')
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return models;
    }
    models
        .into_iter()
        .filter(|m| {
            let text = format!("{} {}", m.provider, m.id);
            tokens.iter().all(|t| fuzzy_matches(t, &text))
        })
        .collect()
}

fn pad(s: &str, width: usize) -> String {
    let len = s.encode_utf16().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(len)))
}

impl ModelRegistry {
    /// The output of `pi --list-models [search]`.
    pub fn list_models(&self, search: Option<&str>) -> ListModelsOutput {
        let mut out = ListModelsOutput::default();
        if let Some(errors) = self.error_text() {
            out.stderr = format!("Warning: errors loading models.json:\n{errors}\n");
        }
        let models = self.available_models().to_vec();
        if models.is_empty() {
            out.stdout = format!("{}\n", self.no_models_message());
            return out;
        }
        let mut models = match search.filter(|s| !s.is_empty()) {
            Some(q) => fuzzy_filter(models, q),
            None => models,
        };
        if models.is_empty() {
            out.stdout = format!("No models matching \"{}\"\n", search.unwrap_or_default());
            return out;
        }
        models.sort_by(|a, b| {
            locale_compare(&a.provider, &b.provider).then_with(|| locale_compare(&a.id, &b.id))
        });
        let header = [
            "provider", "model", "context", "max-out", "thinking", "images",
        ];
        let rows: Vec<[String; 6]> = models
            .iter()
            .map(|m| {
                [
                    m.provider.clone(),
                    m.id.clone(),
                    format_token_count(m.context_window),
                    format_token_count(m.max_tokens),
                    if m.reasoning { "yes" } else { "no" }.to_string(),
                    if m.input.contains(&InputModality::Image) {
                        "yes"
                    } else {
                        "no"
                    }
                    .to_string(),
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.len());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.encode_utf16().count());
            }
        }
        let line = |cells: [&str; 6]| -> String {
            let padded: Vec<String> = cells.iter().zip(widths).map(|(c, w)| pad(c, w)).collect();
            format!("{}\n", padded.join("  "))
        };
        out.stdout.push_str(&line(header));
        for row in &rows {
            out.stdout
                .push_str(&line(row.each_ref().map(String::as_str)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_match_pi() {
        assert_eq!(format_token_count(200_000), "200K");
        assert_eq!(format_token_count(1_000_000), "1M");
        assert_eq!(format_token_count(1_048_576), "1.0M");
        assert_eq!(format_token_count(1_250_000), "1.3M");
        assert_eq!(format_token_count(16_384), "16.4K");
        assert_eq!(format_token_count(999), "999");
        assert_eq!(format_token_count(131_072), "131.1K");
    }

    #[test]
    fn fuzzy_query_matches_subsequences_and_swaps() {
        assert!(fuzzy_matches("opus", "anthropic claude-opus-4"));
        assert!(fuzzy_matches("gpt5", "openai gpt-5"));
        assert!(fuzzy_matches("4o", "openai gpt-4o"));
        assert!(fuzzy_matches("o4", "openai gpt-4o"));
        assert!(!fuzzy_matches("zzz", "openai gpt-4o"));
    }
}
