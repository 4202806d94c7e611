//! ECMAScript regular expressions, as V8 (Node 22) parses and runs the `pattern` and
//! `patternProperties` of a schema and the `regex` format.
//!
//! JSON Schema patterns are ECMAScript regexes, and pi-schema compiles them with the `u` flag,
//! falling back to no flag when `u` rejects the source. The `regex` crate differs from ECMAScript
//! in exactly the places schemas touch (`\d`, `\s`, `.`, lookaround, backreferences, which escapes
//! are errors), so this is a small backtracking engine of ECMAScript's own semantics instead: a
//! parser with V8's error messages for both modes, and a VM with an explicit backtrack stack, so
//! long arguments never recurse deeply.

mod parse;
pub(crate) mod unicode;
mod vm;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled pattern.
#[derive(Debug)]
pub(crate) struct Regex {
    program: vm::Program,
    /// Whether it was compiled with the `u` flag: it then matches code points, else UTF-16 units.
    unicode: bool,
}

impl Regex {
    /// `new RegExp(source, flags)` with flags `"u"` or `""`: the regex, or V8's message.
    pub(crate) fn new(source: &str, unicode: bool) -> Result<Regex, &'static str> {
        let units = to_units(source, unicode);
        let (node, groups) = parse::parse(&units, unicode)?;
        Ok(Regex {
            program: vm::compile(&node, groups),
            unicode,
        })
    }

    /// `regex.test(s)`.
    pub(crate) fn test(&self, s: &str) -> bool {
        self.program.search(&to_units(s, self.unicode))
    }
}

fn to_units(s: &str, unicode: bool) -> Vec<u32> {
    if unicode {
        s.chars().map(u32::from).collect()
    } else {
        s.encode_utf16().map(u32::from).collect()
    }
}

/// pi-schema's `sharedRegex`: the pattern with the `u` flag, or without it when `u` rejects it,
/// shared by source. The error is the `SyntaxError` message of `new RegExp(source)`.
pub(crate) fn shared(source: &str) -> Result<Arc<Regex>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock()
        && let Some(hit) = map.get(source)
    {
        return Ok(Arc::clone(hit));
    }
    let compiled = Regex::new(source, true)
        .or_else(|_| Regex::new(source, false))
        .map_err(|message| format!("Invalid regular expression: /{source}/: {message}"))?;
    let compiled = Arc::new(compiled);
    if let Ok(mut map) = cache.lock() {
        // Schemas repeat a few patterns; a process that sees endless distinct ones starts over.
        if map.len() >= 4096 {
            map.clear();
        }
        map.insert(source.to_string(), Arc::clone(&compiled));
    }
    Ok(compiled)
}

/// Whether `new RegExp(source, "u")` succeeds (the `regex` format).
pub(crate) fn is_valid_unicode(source: &str) -> bool {
    parse::parse(&to_units(source, true), true).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(p: &str, s: &str) -> bool {
        shared(p).unwrap().test(s)
    }

    #[test]
    fn matches_like_ecmascript() {
        assert!(t("^[a-z]+$", "abc"));
        assert!(!t("^[a-z]+$", "abC"));
        assert!(t("b", "abc"));
        assert!(!t("^\\d+$", "١٢"));
        assert!(t("^(a|ab)(c|bcd)(d*)$", "abcd"));
        assert!(t("^(?:a+)+b$", "aaab"));
        assert!(!t("^(a*)*$", "aab"));
        assert!(t("^(a*)*$", "aaa"));
        assert!(t("(?<=\\$)\\d+", "$42"));
        assert!(!t("(?<!\\$)\\b\\d+", "$42"));
        assert!(t("^(\\w)\\1$", "aa"));
        assert!(!t("^(\\w)\\1$", "ab"));
        assert!(t("^(?<x>.)\\k<x>$", "zz"));
        assert!(t("^.$", "😀"));
        assert!(!t("^.$", "\n"));
        assert!(t("^\\p{L}+$", "héllo"));
        assert!(t("^a{2,3}$", "aaa"));
        assert!(!t("^a{2,3}$", "aaaa"));
        assert!(t("^(?:a|b)*?c$", "ababc"));
        assert!(t("^[^]$", "\n"));
        assert!(t("^\\-$", "-"));
        assert!(t("^(?=.*\\d)(?=.*[a-z]).{6,}$", "abc123"));
        assert!(!t("^(?=.*\\d)(?=.*[a-z]).{6,}$", "abcdef"));
    }

    #[test]
    fn long_inputs_do_not_recurse() {
        let s = "ab".repeat(200_000);
        assert!(t("^(?:a|b)+$", &s));
        assert!(t("^(ab)*$", &s));
        assert!(!t("^(?:a|b)+c$", &s[..2000]));
    }

    #[test]
    fn errors_are_v8_messages() {
        assert_eq!(
            shared("(").unwrap_err(),
            "Invalid regular expression: /(/: Unterminated group"
        );
        assert_eq!(
            shared("a**").unwrap_err(),
            "Invalid regular expression: /a**/: Nothing to repeat"
        );
        assert!(!is_valid_unicode("\\-"));
        assert!(is_valid_unicode("[\\-]"));
    }
}
