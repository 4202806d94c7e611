//! `tool_search`: ranks the tools that are not declared yet (`codemode` and `deferred`
//! exposure) with BM25 over their metadata and activates the matches, so the next request
//! declares them. The activation goes through the active tool set, so the transcript records it
//! like any tool change and it stays on that branch.

use pi_agent::{AgentTool, ToolError, ToolFuture, ToolInvocation};
use pi_protocol::content::{TextContent, UserBlock};
use pi_protocol::tool::{AgentToolResult, Tool};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

pub const TOOL_SEARCH_TOOL_NAME: &str = "tool_search";
pub const DEFAULT_LIMIT: usize = 8;

/// A searchable tool: its name, description, parameters and namespace text.
#[derive(Debug, Clone)]
pub struct SearchDoc {
    pub name: String,
    pub description: String,
    pub parameters: std::sync::Arc<Value>,
    /// `namespace name, description, instructions` joined by spaces (empty without one).
    pub namespace_text: String,
}

/// What the tool needs from the session.
pub trait ToolSearchHost: Send + Sync {
    /// Searchable tools that are not active, in registration order.
    fn candidates(&self) -> Vec<SearchDoc>;
    /// Adds tools to the active set (after the active ones).
    fn activate(&self, names: Vec<String>);
    /// Resolves once every server whose tools could match has connected or failed.
    fn wait_ready(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
}

const STOP_WORDS: [&str; 21] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "with",
];

fn stem(term: &str) -> String {
    let n = term.len();
    if n > 4 && term.ends_with("ies") {
        return format!("{}y", &term[..n - 3]);
    }
    if n > 4
        && ["ches", "shes", "sses", "xes", "zes"]
            .iter()
            .any(|s| term.ends_with(s))
    {
        return term[..n - 2].to_string();
    }
    if n > 3 && term.ends_with('s') && !term.ends_with("ss") {
        return term[..n - 1].to_string();
    }
    term.to_string()
}

/// Words of `text`: identifier boundaries split, lowercased, stop words out, singular forms.
pub fn tokenize(text: &str) -> Vec<String> {
    // camelCase and ACRONYMWord boundaries become spaces.
    let chars: Vec<char> = text.chars().collect();
    let mut spaced = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                spaced.push(' ');
            }
        }
        spaced.push(c);
    }
    let lowered: String = spaced
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    lowered
        .split(' ')
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(w))
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_alphanumeric()) {
                stem(w)
            } else {
                w.to_string()
            }
        })
        .collect()
}

fn schema_text(schema: &Value, parts: &mut Vec<String>) {
    let Value::Object(m) = schema else { return };
    if let Some(d) = m.get("description").and_then(Value::as_str) {
        parts.push(d.to_string());
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (name, prop) in props {
            parts.push(name.clone());
            schema_text(prop, parts);
        }
    }
    if let Some(items) = m.get("items") {
        schema_text(items, parts);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(vs)) = m.get(key) {
            for v in vs {
                schema_text(v, parts);
            }
        }
    }
}

fn normalize_name(name: &str) -> String {
    pi_js::trim(name)
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

struct Indexed {
    name: String,
    name_terms: HashSet<String>,
    local_terms: Vec<String>,
    counts: HashMap<String, usize>,
    length: usize,
    namespace_terms: HashSet<String>,
}

fn index(doc: &SearchDoc) -> Indexed {
    let mut parts = vec![doc.description.clone()];
    schema_text(&doc.parameters, &mut parts);
    let text = parts
        .iter()
        .filter(|p| !pi_js::trim(p).is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let mut counts = HashMap::new();
    for t in tokenize(&text) {
        *counts.entry(t).or_insert(0) += 1;
    }
    let local = doc.name.rsplit("__").next().unwrap_or(&doc.name);
    let mut local_terms: Vec<String> = Vec::new();
    for t in tokenize(local) {
        if !local_terms.contains(&t) {
            local_terms.push(t);
        }
    }
    Indexed {
        name: doc.name.clone(),
        name_terms: tokenize(&doc.name).into_iter().collect(),
        local_terms,
        length: counts.values().sum(),
        counts,
        namespace_terms: tokenize(&doc.namespace_text).into_iter().collect(),
    }
}

/// Okapi BM25 with the name (weight 3) and namespace (0.5) as extra fields; more query terms
/// covered beats a higher score, and a query that is exactly a tool's name ranks it first.
pub fn rank(query: &str, docs: &[SearchDoc], limit: usize) -> Vec<(String, f64)> {
    let (k1, b) = (1.2, 0.75);
    let mut terms: Vec<String> = Vec::new();
    for t in tokenize(query) {
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    if terms.is_empty() || docs.is_empty() || limit == 0 {
        return Vec::new();
    }
    let indexed: Vec<Indexed> = docs.iter().map(index).collect();
    let n = indexed.len() as f64;
    let average = {
        let a = indexed.iter().map(|d| d.length).sum::<usize>() as f64 / n;
        if a == 0.0 { 1.0 } else { a }
    };
    let idf: HashMap<&String, f64> = terms
        .iter()
        .map(|t| {
            let f = indexed
                .iter()
                .filter(|d| {
                    d.name_terms.contains(t)
                        || d.counts.contains_key(t)
                        || d.namespace_terms.contains(t)
                })
                .count() as f64;
            (t, (1.0 + (n - f + 0.5) / (f + 0.5)).ln())
        })
        .collect();
    let bonus: f64 = terms.iter().map(|t| idf[t]).sum();
    let exact_query = normalize_name(query);
    let mut matches: Vec<(String, f64, usize, bool, usize)> = Vec::new();
    for (order, d) in indexed.iter().enumerate() {
        let norm = k1 * (1.0 - b + b * d.length as f64 / average);
        let mut score = 0.0;
        let mut covered = 0;
        for t in &terms {
            let count = *d.counts.get(t).unwrap_or(&0) as f64;
            let weight = if d.name_terms.contains(t) { 3.0 } else { 0.0 }
                + if d.namespace_terms.contains(t) {
                    0.5
                } else {
                    0.0
                }
                + (count * (k1 + 1.0)) / (count + norm);
            if weight > 0.0 {
                covered += 1;
            }
            score += idf[t] * weight;
        }
        if score == 0.0 {
            continue;
        }
        if !d.local_terms.is_empty() && d.local_terms.iter().all(|t| terms.contains(t)) {
            score += bonus;
        }
        let normalized = normalize_name(&d.name);
        let exact = normalized == exact_query || normalized.ends_with(&format!("__{exact_query}"));
        matches.push((d.name.clone(), score, covered, exact, order));
    }
    matches.sort_by(|a, b| {
        b.3.cmp(&a.3)
            .then(b.2.cmp(&a.2))
            .then(b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal))
            .then(a.4.cmp(&b.4))
    });
    matches
        .into_iter()
        .take(limit)
        .map(|m| (m.0, m.1))
        .collect()
}

pub struct ToolSearchTool {
    declaration: Tool,
    host: Weak<dyn ToolSearchHost>,
}

impl ToolSearchTool {
    pub fn new(host: Weak<dyn ToolSearchHost>) -> ToolSearchTool {
        ToolSearchTool {
            declaration: Tool {
                name: TOOL_SEARCH_TOOL_NAME.into(),
                description: "# Tool discovery\n\nSearches the metadata of tools that are not declared yet (BM25) and declares the matches for your next call.\n\nSome tools, such as those of MCP servers, are not provided to you upfront: use `tool_search` to find and load them. For MCP tools, always search with `tool_search`.".into(),
                parameters: json!({"type": "object", "required": ["query"], "properties": {
                    "query": {"type": "string", "description": "Search query for deferred tools."},
                    "limit": {"type": "number", "description": format!("Maximum number of tools to return. Defaults to {DEFAULT_LIMIT}.")}
                }})
                .into(),
                constrained_sampling: None,
                rest: Default::default(),
            },
            host,
        }
    }
}

impl AgentTool for ToolSearchTool {
    fn declaration(&self) -> &Tool {
        &self.declaration
    }

    fn execute(&self, inv: ToolInvocation) -> ToolFuture {
        let host = self.host.upgrade();
        Box::pin(async move {
            let query = inv.args.get("query").and_then(Value::as_str).unwrap_or("");
            if pi_js::trim(query).is_empty() {
                return Err(ToolError::new("query must not be empty"));
            }
            let limit = match inv.args.get("limit") {
                None | Some(Value::Null) => DEFAULT_LIMIT as f64,
                Some(v) => v.as_f64().unwrap_or(f64::NAN),
            };
            if !(limit.fract() == 0.0 && limit > 0.0) {
                return Err(ToolError::new("limit must be a positive integer"));
            }
            let mut loaded: Vec<(String, String)> = Vec::new();
            if let Some(host) = host {
                host.wait_ready().await;
                let candidates = host.candidates();
                let found = rank(query, &candidates, limit as usize);
                loaded = found
                    .iter()
                    .map(|(name, _)| {
                        let d = candidates
                            .iter()
                            .find(|c| &c.name == name)
                            .map(|c| c.description.clone())
                            .unwrap_or_default();
                        (name.clone(), d)
                    })
                    .collect();
                if !loaded.is_empty() {
                    host.activate(loaded.iter().map(|(n, _)| n.clone()).collect());
                }
            }
            let text = if loaded.is_empty() {
                "No matching tools found.".to_string()
            } else {
                let lines: Vec<String> = loaded
                    .iter()
                    .map(|(n, d)| {
                        let first = pi_js::trim(d)
                            .split('\n')
                            .next()
                            .unwrap_or("")
                            .trim_end_matches('\r');
                        format!("- {n}: {first}")
                    })
                    .collect();
                let plural = if loaded.len() == 1 { "" } else { "s" };
                format!(
                    "Loaded {} tool{plural}. They are available from your next call:\n{}",
                    loaded.len(),
                    lines.join("\n")
                )
            };
            let mut r = AgentToolResult::new(vec![UserBlock::Text(TextContent::new(text))]);
            r.details = Some(json!({"loaded": loaded.iter().map(|(n, _)| n).collect::<Vec<_>>()}));
            Ok(r)
        })
    }
}

/// A shared handle for building the tool before its host exists.
pub fn tool(host: Weak<dyn ToolSearchHost>) -> Arc<dyn AgentTool> {
    Arc::new(ToolSearchTool::new(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, description: &str) -> SearchDoc {
        SearchDoc {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {}}).into(),
            namespace_text: String::new(),
        }
    }

    #[test]
    fn tokens_split_identifiers_and_drop_stop_words() {
        assert_eq!(
            tokenize("getHTTPResponse for the issues"),
            ["get", "http", "response", "issue"]
        );
        // The naive singular form cuts any final `s`, as Pi's does.
        assert_eq!(
            tokenize("mcp__dev_radius__searches"),
            ["mcp", "dev", "radiu", "search"]
        );
    }

    #[test]
    fn names_beat_descriptions_and_exact_names_rank_first() {
        let docs = [
            doc("mcp__s__list_items", "Lists every item with its color"),
            doc("mcp__s__echo", "Echoes the text back"),
            doc("mcp__s__get_item", "Gets one item by id"),
        ];
        let names = |q: &str| {
            rank(q, &docs, 8)
                .into_iter()
                .map(|r| r.0)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("echo text")[0], "mcp__s__echo");
        assert_eq!(names("get_item")[0], "mcp__s__get_item");
        assert!(names("zebra").is_empty());
    }
}
