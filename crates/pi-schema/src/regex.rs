//! ECMAScript regular expressions, as V8 (Node 22) parses and runs the `pattern` and
//! `patternProperties` of a schema and the `regex` format.
//!
//! JSON Schema patterns are ECMAScript regexes, and pi-schema compiles them with the `u` flag,
//! falling back to no flag when `u` rejects the source. The `regex` crate differs from ECMAScript
//! in exactly the places schemas touch (`\d`, `\s`, `.`, lookaround, backreferences, which
//! escapes are errors); `regress` implements ECMAScript's own syntax and semantics and runs every
//! match (a `u` pattern over code points, any other over UTF-16 units, as V8 does).
//!
//! Kept by hand: a checker of the grammar ([`parse`]), because what an invalid pattern says is
//! part of the recorded behaviour and `regress` words its errors its own way. The corpus recorded
//! from Pi (`tests/fixtures/validate_corpus.jsonl`) has 321 cases whose result is V8's
//! `SyntaxError` text (`Invalid regular expression: /+?a?/: Nothing to repeat`, where `regress`
//! says `Invalid atom character`; 124 distinct patterns), and one where `regress` accepts what
//! Node 22 rejects: `(?i:a)` (pattern modifiers, ES2025) must fail the `regex` format. With
//! `regress` alone 322 of the 18,480 cases differ; with the checker in front, none.

mod parse;
pub(crate) mod unicode;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A compiled pattern.
#[derive(Debug)]
pub(crate) struct Regex {
    regex: regress::Regex,
    /// Whether it was compiled with the `u` flag: it then matches code points, else UTF-16 units.
    unicode: bool,
}

impl Regex {
    /// `new RegExp(source, flags)` with flags `"u"` or `""`: the regex, or V8's message. A
    /// pattern V8 accepts but `regress` does not (none is known) gets `regress`'s message.
    pub(crate) fn new(source: &str, unicode: bool) -> Result<Regex, String> {
        let units: Vec<u32> = if unicode {
            source.chars().map(u32::from).collect()
        } else {
            source.encode_utf16().map(u32::from).collect()
        };
        parse::check(&units, unicode)?;
        let flags = regress::Flags {
            unicode,
            ..regress::Flags::default()
        };
        let regex = regress::Regex::from_unicode(units.into_iter(), flags).map_err(|e| e.text)?;
        Ok(Regex { regex, unicode })
    }

    /// `regex.test(s)`.
    pub(crate) fn test(&self, s: &str) -> bool {
        if self.unicode {
            self.regex.find(s).is_some()
        } else {
            let units: Vec<u16> = s.encode_utf16().collect();
            self.regex.find_from_ucs2(&units, 0).next().is_some()
        }
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
    Regex::new(source, true).is_ok()
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

    #[test]
    fn what_node_22_rejects_and_regress_accepts_is_rejected() {
        assert_eq!(
            shared("(?i:a)").unwrap_err(),
            "Invalid regular expression: /(?i:a)/: Invalid group"
        );
        assert!(!is_valid_unicode("(?i:a)"));
    }

    #[test]
    fn properties_match_with_unicode_tables() {
        assert!(t("^\\p{Script=Greek}+$", "αβγ"));
        assert!(!t("^\\p{Script=Greek}+$", "abc"));
        assert!(t("^\\p{Lu}$", "Ж"));
        assert!(!t("^\\p{Lu}$", "ǅ"));
        // An unknown script fails with `u`, so the pattern falls back to no flag: `\p` is `p`.
        assert!(!is_valid_unicode("\\p{Script=Nope}"));
        assert!(t("^\\p{Script=Nope}$", "p{Script=Nope}"));
        // Without `u`, an astral character is two units.
        assert!(!t("^..$", "😀"));
        assert!(Regex::new("^..$", false).unwrap().test("😀"));
    }
}
