//! Flow collections (`[a, b]`, `{k: v}`).

use super::Yaml;
use super::scalar::{fold_quoted, resolve_plain, scan_quoted};

/// Flow collections (`[a, b]`, `{k: v}`), possibly over several lines.
pub(super) struct FlowParser<'a> {
    pub(super) s: &'a [u8],
    pub(super) src: &'a str,
    pub(super) i: usize,
}

impl FlowParser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b' ' | b'\t' | b'\n' => self.i += 1,
                b'#' if self.i > 0 && matches!(self.s[self.i - 1], b' ' | b'\t' | b'\n') => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => return,
            }
        }
    }

    pub(super) fn node(&mut self) -> std::result::Result<Yaml, String> {
        self.skip_ws();
        match self.s.get(self.i) {
            Some(b'[') => self.collection(b']'),
            Some(b'{') => self.collection(b'}'),
            Some(q @ (b'"' | b'\'')) => {
                let q = *q as char;
                let (raw, end) = scan_quoted(&self.src[self.i + 1..], q)
                    .ok_or_else(|| format!("Missing closing {q}quote"))?;
                self.i += 1 + end;
                Ok(Yaml::String(fold_quoted(&raw, q)))
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len() {
                    let c = self.s[self.i];
                    if matches!(c, b',' | b']' | b'}' | b'[' | b'{') {
                        break;
                    }
                    if c == b':'
                        && matches!(
                            self.s.get(self.i + 1),
                            None | Some(b' ' | b'\t' | b'\n' | b',' | b']' | b'}')
                        )
                    {
                        break;
                    }
                    if c == b'#' && self.i > start && matches!(self.s[self.i - 1], b' ' | b'\t') {
                        break;
                    }
                    self.i += 1;
                }
                let text: Vec<&str> = self.src[start..self.i]
                    .split('\n')
                    .map(|l| l.trim())
                    .filter(|l| !l.is_empty())
                    .collect();
                Ok(resolve_plain(&text.join(" ")))
            }
            None => Err("Unexpected end of flow collection".into()),
        }
    }

    fn collection(&mut self, close: u8) -> std::result::Result<Yaml, String> {
        self.i += 1;
        let unclosed = if close == b'}' {
            "Flow map in block collection must be sufficiently indented and end with a }"
        } else {
            "Flow sequence in block collection must be sufficiently indented and end with a ]"
        };
        let mut items = Vec::new();
        let mut entries: Vec<(String, Yaml)> = Vec::new();
        loop {
            self.skip_ws();
            match self.s.get(self.i) {
                None => return Err(unclosed.into()),
                Some(c) if *c == close => {
                    self.i += 1;
                    break;
                }
                _ => {}
            }
            let key = self.node()?;
            self.skip_ws();
            let entry = if self.s.get(self.i) == Some(&b':') {
                self.i += 1;
                self.skip_ws();
                let value = if matches!(self.s.get(self.i), Some(b',') | Some(b']') | Some(b'}')) {
                    Yaml::Null
                } else {
                    self.node()?
                };
                Some((yaml_key(&key), value))
            } else {
                None
            };
            match (close, entry) {
                (b'}', Some(e)) => entries.push(e),
                (b'}', None) => entries.push((yaml_key(&key), Yaml::Null)),
                (_, Some(e)) => items.push(Yaml::Map(vec![e])),
                (_, None) => items.push(key),
            }
            self.skip_ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(c) if *c == close => {}
                None => return Err(unclosed.into()),
                _ => return Err("Unexpected flow-seq-end".into()),
            }
        }
        Ok(if close == b'}' {
            Yaml::Map(entries)
        } else {
            Yaml::Seq(items)
        })
    }
}

fn yaml_key(key: &Yaml) -> String {
    match key {
        Yaml::String(s) => s.clone(),
        Yaml::Null => String::new(),
        other => crate::settings::file::js_string(&other.to_json()),
    }
}
