//! Markdown frontmatter as Pi reads it (`utils/frontmatter.js`): the text loses a BOM, line ends
//! become `\n`, and when it starts with `---` the YAML runs to the next line starting with
//! `---`. The body after it is trimmed; without frontmatter the body is the whole text, untrimmed.

use super::yaml::{self, Yaml, YamlError};

/// A parsed file: its frontmatter value (`Yaml::Map` normally; an empty map when there is none)
/// and its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub frontmatter: Yaml,
    pub body: String,
}

impl Parsed {
    /// A frontmatter field (`None` when absent or when the frontmatter is not a mapping).
    pub fn field(&self, key: &str) -> Option<&Yaml> {
        self.frontmatter.get(key)
    }

    /// A string field (`None` when absent or not a string).
    pub fn string(&self, key: &str) -> Option<&str> {
        self.field(key).and_then(Yaml::as_str)
    }
}

/// Parses `content`; `Err` when the frontmatter is not valid YAML.
pub fn parse(content: &str) -> Result<Parsed, YamlError> {
    let (yaml_text, body) = split(content);
    let frontmatter = match yaml_text {
        Some(text) if !text.is_empty() => match yaml::parse(&text)? {
            Yaml::Null => Yaml::Map(Vec::new()),
            other => other,
        },
        _ => Yaml::Map(Vec::new()),
    };
    Ok(Parsed { frontmatter, body })
}

/// The body without frontmatter (Pi's `stripFrontmatter`).
pub fn strip(content: &str) -> Result<String, YamlError> {
    parse(content).map(|p| p.body)
}

/// Pi's `extractFrontmatter`: the YAML text (if any) and the body.
fn split(content: &str) -> (Option<String>, String) {
    let content = content.strip_prefix('\u{FEFF}').unwrap_or(content);
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return (None, normalized);
    }
    let Some(end) = normalized[3..].find("\n---").map(|i| i + 3) else {
        return (None, normalized);
    };
    // The YAML starts after the fourth character (normally the newline after `---`).
    let start = normalized[3..]
        .chars()
        .next()
        .map_or(normalized.len(), |c| 3 + c.len_utf8());
    let yaml_text = if start <= end {
        normalized[start..end].to_string()
    } else {
        String::new()
    };
    let body = pi_js::trim(&normalized[end + 4..]).to_string();
    (Some(yaml_text), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn splitting_like_pi() {
        let p = parse("\u{FEFF}---\r\nname: x\r\n---\r\n\r\nBody\r\n").unwrap();
        assert_eq!(p.string("name"), Some("x"));
        assert_eq!(p.body, "Body");
        let p = parse("\nNo frontmatter\n").unwrap();
        assert_eq!(p.frontmatter, Yaml::Map(vec![]));
        assert_eq!(p.body, "\nNo frontmatter\n");
        let p = parse("---\nunterminated: 1\n").unwrap();
        assert_eq!(p.body, "---\nunterminated: 1\n");
        let p = parse("---\n---\nEmpty: $@\n").unwrap();
        assert_eq!(p.body, "Empty: $@");
        assert_eq!(parse("---\ndescription: x\n----\nb").unwrap().body, "-\nb");
        assert!(parse("---\ndescription: a: b\n---\n").is_err());
    }

    /// Every block of the corpus, compared with what Pi's own parser (the `yaml` package) made of
    /// it: tests/fixtures/resources/frontmatter/frontmatter.jsonl.
    #[test]
    fn agrees_with_pi_on_the_recorded_corpus() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/resources/frontmatter/frontmatter.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut failures = Vec::new();
        for line in text.lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let yaml = case["yaml"].as_str().unwrap();
            let input = format!("---\n{yaml}\n---\nbody\n");
            let got = parse(&input);
            let matches = match (&got, case["ok"].as_bool().unwrap()) {
                (Ok(p), true) => {
                    p.frontmatter.to_json() == case["frontmatter"] && p.body == case["body"]
                }
                (Err(e), false) => {
                    // The reason (before " at line") must be Pi's.
                    let want = case["error"].as_str().unwrap();
                    want.split(" at line").next() == e.to_string().split(" at line").next()
                }
                _ => false,
            };
            if !matches {
                failures.push(format!(
                    "{yaml:?}\n  pi:  {}\n  ours: {:?}",
                    line,
                    got.map(|p| p.frontmatter.to_json())
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} differ\n{}",
            failures.len(),
            text.lines().count(),
            failures.join("\n")
        );
    }
}
