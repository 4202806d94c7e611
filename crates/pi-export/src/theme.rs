//! A Pi theme's colours on the page: the theme's tokens map onto the page's own colour
//! variables (text, borders, user messages, tool results, diffs, the page and card
//! backgrounds), so the page keeps its layout and takes the theme's palette.

use std::collections::BTreeMap;
use std::fmt::Write;

/// The colours of one theme, as CSS colour values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThemeColors {
    pub name: String,
    /// Made for a dark background.
    pub dark: bool,
    /// Colour of each of Pi's theme tokens (`accent`, `text`, `userMessageBg`, ...).
    pub tokens: BTreeMap<String, String>,
    pub page_bg: String,
    pub card_bg: String,
    pub info_bg: String,
}

/// Which palette the page uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PageTheme {
    /// The page's own palettes, light or dark as the reader's system prefers.
    #[default]
    Default,
    /// One theme.
    Fixed(ThemeColors),
    /// A light and a dark theme (the `light/dark` setting), chosen by the reader's colour
    /// scheme; dark when the reader states none.
    Auto {
        light: ThemeColors,
        dark: ThemeColors,
    },
}

/// Page variable ← theme token.
const MAP: [(&str, &str); 16] = [
    ("--ink", "text"),
    ("--muted", "muted"),
    ("--line", "borderMuted"),
    ("--code-bg", "toolPendingBg"),
    ("--user", "accent"),
    ("--user-bg", "userMessageBg"),
    ("--assistant", "border"),
    ("--tool", "toolTitle"),
    ("--ok", "success"),
    ("--err", "error"),
    ("--err-bg", "toolErrorBg"),
    ("--shell", "bashMode"),
    ("--ext", "customMessageLabel"),
    ("--summary", "borderAccent"),
    ("--add", "toolSuccessBg"),
    ("--del", "toolErrorBg"),
];

/// Only colour syntax reaches the stylesheet (hex, `rgb(...)`, `oklch(...)`).
fn safe(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " #%().,-".contains(c))
}

fn declarations(t: &ThemeColors) -> String {
    let mut out = String::new();
    let scheme = if t.dark { "dark" } else { "light" };
    let _ = write!(out, "color-scheme: {scheme};");
    let mut put = |var: &str, value: &str| {
        if safe(value) {
            let _ = write!(out, " {var}: {value};");
        }
    };
    put("--bg", &t.page_bg);
    put("--card", &t.card_bg);
    for (var, token) in MAP {
        if let Some(v) = t.tokens.get(token) {
            put(var, v);
        }
    }
    out
}

/// The CSS that applies the theme (empty for the default palettes).
pub fn css(theme: &PageTheme) -> String {
    match theme {
        PageTheme::Default => String::new(),
        PageTheme::Fixed(t) => format!(":root {{ {} }}\n", declarations(t)),
        PageTheme::Auto { light, dark } => format!(
            ":root {{ {} }}\n@media (prefers-color-scheme: light) {{\n  :root {{ {} }}\n}}\n",
            declarations(dark),
            declarations(light)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn themes_become_page_variables() {
        let mut t = ThemeColors {
            name: "x".into(),
            dark: true,
            page_bg: "#101010".into(),
            card_bg: "rgb(1, 2, 3)".into(),
            info_bg: "#202020".into(),
            ..ThemeColors::default()
        };
        t.tokens.insert("text".into(), "#eeeeee".into());
        t.tokens
            .insert("accent".into(), "red;} body{display:none".into());
        let css = css(&PageTheme::Fixed(t.clone()));
        assert_eq!(
            css,
            ":root { color-scheme: dark; --bg: #101010; --card: rgb(1, 2, 3); --ink: #eeeeee; }\n"
        );
        assert_eq!(css_default(), "");
        let auto = super::css(&PageTheme::Auto {
            light: ThemeColors {
                dark: false,
                ..t.clone()
            },
            dark: t,
        });
        assert!(auto.contains("@media (prefers-color-scheme: light)"));
    }

    fn css_default() -> String {
        css(&PageTheme::Default)
    }
}
