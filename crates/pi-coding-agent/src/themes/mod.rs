//! Themes (`docs/themes.md`): theme JSON files from the agent dir, the project (after trust),
//! the `themes` setting, packages and `--theme`; the built-ins `dark` and `light`; the `theme`
//! setting with its `light/dark` pair form. Where RPC mode shows colours is the `export_html`
//! page, so a theme here becomes the page's palette ([`page_theme`]).
//!
//! A file is checked against Pi's schema (strict keys, every required colour token, a name
//! without `/`), its variables are resolved (missing or circular references make it invalid),
//! the five optional tokens take their fallbacks, and each colour is converted to sRGB
//! ([`color`]). Tokens set to `""` (the terminal's default) take the default colours Pi assumes
//! for the theme's appearance. Files that fail are skipped; two themes with one name keep the
//! first.

pub mod color;
mod tokens;

use color::{Color, parse_color};
use pi_export::{PageTheme, ThemeColors};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokens::{Slot, TOKENS};

/// A loaded theme.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub path: Option<PathBuf>,
    pub colors: ThemeColors,
}

fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_color_value(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Number(n) => n
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && (0.0..=255.0).contains(&f)),
        _ => false,
    }
}

/// Pi's schema check: `Err` is the message it reports (`Invalid theme "<label>": …`).
fn validate(label: &str, json: &Value) -> Result<(), String> {
    if let Some(name) = json.get("name").and_then(Value::as_str)
        && name.contains('/')
    {
        return Err(format!(
            "Invalid theme name \"{name}\": theme names cannot contain \"/\" because it is reserved for automatic light/dark theme settings."
        ));
    }
    let mut missing: Vec<&str> = Vec::new();
    let mut other: Vec<String> = Vec::new();
    let Some(obj) = json.as_object() else {
        return Err(format!(
            "Invalid theme \"{label}\":\n\nOther errors:\n  - /: Expected object, got {}",
            js_type(json)
        ));
    };
    let allowed = ["$schema", "name", "appearance", "vars", "colors", "export"];
    for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        other.push(format!("  - /{key}: Unexpected property"));
    }
    match obj.get("$schema") {
        Some(v) if !v.is_string() => other.push("  - /$schema: Expected string".into()),
        _ => {}
    }
    match obj.get("name") {
        Some(Value::String(_)) => {}
        Some(_) => other.push("  - /name: Expected string".into()),
        None => other.push("  - /: Required property name".into()),
    }
    match obj.get("appearance") {
        None => {}
        Some(Value::String(s)) if s == "dark" || s == "light" => {}
        Some(_) => other.push("  - /appearance: Expected \"dark\" or \"light\"".into()),
    }
    match obj.get("vars") {
        None => {}
        Some(Value::Object(vars)) => {
            for (k, v) in vars {
                if !is_color_value(v) {
                    other.push(format!("  - /vars/{k}: Expected color value"));
                }
            }
        }
        Some(_) => other.push("  - /vars: Expected object".into()),
    }
    match obj.get("colors") {
        Some(Value::Object(colors)) => {
            for t in TOKENS.iter() {
                match colors.get(t.name) {
                    None if t.fallback.is_none() => missing.push(t.name),
                    Some(v) if !is_color_value(v) => {
                        other.push(format!("  - /colors/{}: Expected color value", t.name))
                    }
                    _ => {}
                }
            }
            for k in colors
                .keys()
                .filter(|k| !TOKENS.iter().any(|t| t.name == k.as_str()))
            {
                other.push(format!("  - /colors/{k}: Unexpected property"));
            }
        }
        Some(_) => other.push("  - /colors: Expected object".into()),
        None => other.push("  - /: Required property colors".into()),
    }
    match obj.get("export") {
        None => {}
        Some(Value::Object(e)) => {
            for (k, v) in e {
                if !["pageBg", "cardBg", "infoBg"].contains(&k.as_str()) {
                    other.push(format!("  - /export/{k}: Unexpected property"));
                } else if !is_color_value(v) {
                    other.push(format!("  - /export/{k}: Expected color value"));
                }
            }
        }
        Some(_) => other.push("  - /export: Expected object".into()),
    }
    if missing.is_empty() && other.is_empty() {
        return Ok(());
    }
    let mut message = format!("Invalid theme \"{label}\":\n");
    if !missing.is_empty() {
        missing.sort_unstable();
        message.push_str("\nMissing required color tokens:\n");
        message.push_str(
            &missing
                .iter()
                .map(|m| format!("  - {m}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        message.push_str("\n\nPlease add these colors to your theme's \"colors\" object.");
        message.push_str("\nSee the built-in themes (dark.json, light.json) for reference values.");
    }
    if !other.is_empty() {
        message.push_str(&format!("\n\nOther errors:\n{}", other.join("\n")));
    }
    Err(message)
}

/// A variable's value: literal colours as they are, names looked up (chains allowed).
fn resolve_var(
    value: &Value,
    vars: &Map<String, Value>,
    seen: &mut Vec<String>,
) -> Result<Value, String> {
    let Value::String(s) = value else {
        return Ok(value.clone());
    };
    let lower = s.to_ascii_lowercase();
    if s.is_empty()
        || s.starts_with('#')
        || lower.starts_with("oklch(")
        || lower.starts_with("okhsl(")
    {
        return Ok(value.clone());
    }
    if seen.contains(s) {
        return Err(format!("Circular variable reference detected: {s}"));
    }
    let Some(next) = vars.get(s) else {
        return Err(format!("Variable reference not found: {s}"));
    };
    seen.push(s.clone());
    resolve_var(next, vars, seen)
}

/// The background a theme is made for, from its own colours: darker backgrounds than
/// foregrounds mean dark (palette colours 0–15 say nothing: they follow the terminal).
fn detect_dark(fg: &[Color], bg: &[Color]) -> Option<bool> {
    let avg = |cs: &[Color]| -> Option<f64> {
        let fixed: Vec<f64> = cs
            .iter()
            .filter(|c| !matches!(c, Color::Indexed(i) if *i < 16))
            .map(|c| c.lightness())
            .collect();
        (!fixed.is_empty()).then(|| fixed.iter().sum::<f64>() / fixed.len() as f64)
    };
    match (avg(fg), avg(bg)) {
        (Some(f), Some(b)) => Some(b < f),
        (None, Some(b)) => Some(b < 0.5),
        (Some(f), None) => Some(f > 0.5),
        (None, None) => None,
    }
}

/// Dark or light as the terminal says (`COLORFGBG`), else dark: what Pi assumes in RPC mode,
/// where the terminal never reports its colours.
pub fn terminal_is_dark() -> bool {
    let value = std::env::var("COLORFGBG").unwrap_or_default();
    let Some(bg) = value.rsplit(';').next().map(str::trim) else {
        return true;
    };
    match bg.parse::<u32>() {
        Ok(i) if bg.len() <= 2 && i <= 15 => i <= 6 || i == 8,
        _ => true,
    }
}

/// Parses, checks and resolves one theme document.
pub fn theme_from_json(label: &str, json: &Value, path: Option<&Path>) -> Result<Theme, String> {
    validate(label, json)?;
    let name = json["name"].as_str().unwrap_or_default().to_string();
    let vars = json
        .get("vars")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let colors = json
        .get("colors")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut resolved: BTreeMap<&str, Value> = BTreeMap::new();
    for t in TOKENS.iter() {
        if let Some(v) = colors.get(t.name) {
            resolved.insert(t.name, resolve_var(v, &vars, &mut Vec::new())?);
        }
    }
    for t in TOKENS.iter() {
        if let (None, Some(fallback)) = (resolved.get(t.name), t.fallback) {
            let v = resolved.get(fallback).cloned().ok_or_else(|| {
                format!("Theme token {} has unresolved fallback {fallback}", t.name)
            })?;
            resolved.insert(t.name, v);
        }
    }
    let mut concrete: Vec<(&str, Slot, Option<Color>)> = Vec::new();
    for t in TOKENS.iter() {
        let value = &resolved[t.name];
        let color = if value.as_str() == Some("") {
            None
        } else {
            Some(parse_color(value)?)
        };
        concrete.push((t.name, t.slot, color));
    }
    let of = |slot: Slot| -> Vec<Color> {
        concrete
            .iter()
            .filter(|(_, s, _)| *s == slot)
            .filter_map(|(_, _, c)| *c)
            .collect()
    };
    let dark = match json.get("appearance").and_then(Value::as_str) {
        Some(a) => a == "dark",
        None => detect_dark(&of(Slot::Foreground), &of(Slot::Background))
            .unwrap_or_else(terminal_is_dark),
    };
    let (default_fg, default_bg) = if dark {
        ("#e5e5e7", "#000000")
    } else {
        ("#000000", "#ffffff")
    };
    let tokens: BTreeMap<String, String> = concrete
        .iter()
        .map(|(name, slot, c)| {
            let hex = match (c, slot) {
                (Some(c), _) => c.hex(),
                (None, Slot::Foreground) => default_fg.into(),
                (None, Slot::Background) => default_bg.into(),
            };
            (name.to_string(), hex)
        })
        .collect();
    let export = json.get("export").and_then(Value::as_object);
    let export_color = |key: &str| -> Option<String> {
        let v = export?.get(key)?;
        let v = resolve_var(v, &vars, &mut Vec::new()).ok()?;
        if v.as_str() == Some("") {
            return None;
        }
        parse_color(&v).ok().map(|c| c.hex())
    };
    let derived = derive_export_colors(
        tokens
            .get("userMessageBg")
            .map(String::as_str)
            .unwrap_or("#343541"),
    );
    Ok(Theme {
        name: name.clone(),
        path: path.map(Path::to_path_buf),
        colors: ThemeColors {
            name,
            dark,
            page_bg: export_color("pageBg").unwrap_or(derived.0),
            card_bg: export_color("cardBg").unwrap_or(derived.1),
            info_bg: export_color("infoBg").unwrap_or(derived.2),
            tokens,
        },
    })
}

/// Pi's page, card and info backgrounds derived from the user message background when a theme
/// does not give them: a lighter or darker shade by the colour's luminance.
fn derive_export_colors(base: &str) -> (String, String, String) {
    let parse = |s: &str| -> Option<(f64, f64, f64)> {
        let hex = s.strip_prefix('#').filter(|h| h.len() == 6)?;
        let ch = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok().map(f64::from);
        Some((ch(0)?, ch(2)?, ch(4)?))
    };
    let Some((r, g, b)) = parse(base) else {
        return (
            "rgb(24, 24, 30)".into(),
            "rgb(30, 30, 36)".into(),
            "rgb(60, 55, 40)".into(),
        );
    };
    let lin = |c: f64| {
        let s = c / 255.0;
        if s <= 0.03928 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    let luminance = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    let adjust = |f: f64| {
        let a = |c: f64| (c * f).round().clamp(0.0, 255.0);
        format!("rgb({}, {}, {})", a(r), a(g), a(b))
    };
    if luminance > 0.5 {
        (
            adjust(0.96),
            base.to_string(),
            format!(
                "rgb({}, {}, {})",
                (r + 10.0).min(255.0),
                (g + 5.0).min(255.0),
                (b - 20.0).max(0.0)
            ),
        )
    } else {
        (
            adjust(0.7),
            adjust(0.85),
            format!(
                "rgb({}, {}, {})",
                (r + 20.0).min(255.0),
                (g + 15.0).min(255.0),
                b
            ),
        )
    }
}

/// Reads a theme file.
pub fn load_theme_file(path: &Path) -> Result<Theme, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let label = path.display().to_string();
    let json = pi_js::parse::parse_js_json(text)
        .map_err(|e| format!("Failed to parse theme {label}: SyntaxError: {e}"))?;
    theme_from_json(&label, &json, Some(path))
}

/// Loads theme files and folders (their `.json` files) in order. Returns the themes (one per
/// name, the first wins) and `(path, problem)` for each file skipped.
pub fn load_themes(paths: &[PathBuf]) -> (Vec<Theme>, Vec<(PathBuf, String)>) {
    let mut themes: Vec<Theme> = Vec::new();
    let mut problems = Vec::new();
    let mut load = |file: &Path, themes: &mut Vec<Theme>| match load_theme_file(file) {
        Ok(t) if themes.iter().any(|x| x.name == t.name) => {
            problems.push((file.to_path_buf(), format!("name \"{}\" collision", t.name)));
        }
        Ok(t) => themes.push(t),
        Err(e) => problems.push((file.to_path_buf(), e)),
    };
    for p in paths {
        if p.is_dir() {
            for (name, file) in crate::resources::skills::sorted_entries(p) {
                if name.ends_with(".json") && crate::resources::skills::entry_kind(&file).1 {
                    load(&file, &mut themes);
                }
            }
        } else if p.is_file() && p.to_string_lossy().ends_with(".json") {
            load(p, &mut themes);
        }
    }
    (themes, problems)
}

/// The built-in `dark` and `light` themes.
pub fn builtin(name: &str) -> Option<ThemeColors> {
    let data: Value = serde_json::from_str(tokens::BUILTIN_RESOLVED).ok()?;
    let t = data.get(name)?;
    let tokens = t["colors"]
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    let e = |k: &str| t["export"][k].as_str().unwrap_or_default().to_string();
    Some(ThemeColors {
        name: name.to_string(),
        dark: name == "dark",
        tokens,
        page_bg: e("pageBg"),
        card_bg: e("cardBg"),
        info_bg: e("infoBg"),
    })
}

/// A theme by name: the built-ins first, then the loaded files.
fn find(name: &str, themes: &[Theme]) -> Option<ThemeColors> {
    builtin(name).or_else(|| {
        themes
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.colors.clone())
    })
}

/// The export page's palette for the `theme` setting: none (`system`, unset, unknown) keeps
/// the page's own light and dark palettes; a name gives that theme; `light/dark` gives both,
/// chosen by the reader's colour scheme.
pub fn page_theme(setting: Option<&str>, theme_paths: &[PathBuf]) -> PageTheme {
    let Some(setting) = setting.filter(|s| !s.is_empty() && *s != "system") else {
        return PageTheme::Default;
    };
    let (themes, _) = load_themes(theme_paths);
    if let Some((light, dark)) = auto_pair(setting) {
        return match (find(light, &themes), find(dark, &themes)) {
            (Some(light), Some(dark)) => PageTheme::Auto { light, dark },
            (Some(one), None) | (None, Some(one)) => PageTheme::Fixed(one),
            (None, None) => PageTheme::Default,
        };
    }
    if setting.contains('/') {
        return PageTheme::Default;
    }
    find(setting, &themes).map_or(PageTheme::Default, PageTheme::Fixed)
}

/// `light/dark`: exactly one `/`, both names non-empty (trimmed).
fn auto_pair(setting: &str) -> Option<(&str, &str)> {
    let (light, dark) = setting.split_once('/')?;
    if dark.contains('/') {
        return None;
    }
    let (light, dark) = (light.trim(), dark.trim());
    (!light.is_empty() && !dark.is_empty()).then_some((light, dark))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_colors(value: Value) -> Map<String, Value> {
        TOKENS
            .iter()
            .filter(|t| t.fallback.is_none())
            .map(|t| (t.name.to_string(), value.clone()))
            .collect()
    }

    #[test]
    fn resolves_variables_fallbacks_and_defaults() {
        let mut colors = full_colors(json!("base"));
        colors.insert("text".into(), json!(""));
        colors.insert("userMessageBg".into(), json!("#ffffff"));
        colors.insert("selectedBg".into(), json!(231));
        let doc = json!({"name": "mine", "vars": {"base": "accentVar", "accentVar": "okhsl(250 60% 55%)"},
            "colors": colors, "export": {"cardBg": "#0af", "infoBg": ""}});
        let t = theme_from_json("mine", &doc, None).unwrap();
        assert_eq!(t.colors.tokens["accent"], "#4e88c2");
        // Optional tokens fall back: scrollbarThumb → text, which is the default foreground.
        assert_eq!(t.colors.tokens["scrollbarThumb"], t.colors.tokens["text"]);
        assert_eq!(t.colors.tokens["searchMatchBg"], "#ffffff");
        assert_eq!(t.colors.card_bg, "#00aaff");
        // Derived from userMessageBg (light): 96% for the page, Pi's info tint.
        assert_eq!(t.colors.page_bg, "rgb(245, 245, 245)");
        assert_eq!(t.colors.info_bg, "rgb(255, 255, 235)");
    }

    #[test]
    fn invalid_documents_say_why() {
        let mut colors = full_colors(json!("#000"));
        colors.remove("accent");
        colors.remove("bashMode");
        colors.insert("bogus".into(), json!("#fff"));
        let err = theme_from_json("t", &json!({"name": "t", "colors": colors}), None).unwrap_err();
        assert!(
            err.starts_with(
                "Invalid theme \"t\":\n\nMissing required color tokens:\n  - accent\n  - bashMode\n"
            ),
            "{err}"
        );
        assert!(
            err.contains("  - /colors/bogus: Unexpected property"),
            "{err}"
        );
        let err = theme_from_json("t", &json!({"name": "a/b", "colors": {}}), None).unwrap_err();
        assert!(err.starts_with("Invalid theme name \"a/b\""));
        let loop_ =
            json!({"name": "l", "vars": {"x": "y", "y": "x"}, "colors": full_colors(json!("x"))});
        assert_eq!(
            theme_from_json("l", &loop_, None).unwrap_err(),
            "Circular variable reference detected: x"
        );
        let missing = json!({"name": "m", "colors": full_colors(json!("nope"))});
        assert_eq!(
            theme_from_json("m", &missing, None).unwrap_err(),
            "Variable reference not found: nope"
        );
    }

    #[test]
    fn settings_pick_page_themes() {
        assert_eq!(page_theme(None, &[]), PageTheme::Default);
        assert_eq!(page_theme(Some("system"), &[]), PageTheme::Default);
        assert_eq!(page_theme(Some("unknown"), &[]), PageTheme::Default);
        let PageTheme::Fixed(dark) = page_theme(Some("dark"), &[]) else {
            panic!("dark");
        };
        assert!(dark.dark);
        assert_eq!(dark.page_bg, "#21252c");
        assert!(matches!(
            page_theme(Some("light/dark"), &[]),
            PageTheme::Auto { .. }
        ));
        assert_eq!(page_theme(Some("a/b/c"), &[]), PageTheme::Default);
    }

    /// Pi's own theme files, read by this code, give the colours Pi 1.6.0 resolved for them
    /// (okhsl variables, fallbacks, export colours).
    #[test]
    fn pis_theme_files_resolve_as_in_pi() {
        for (name, text) in [
            (
                "dark",
                include_str!("../../tests/fixtures/themes/pi-dark.json"),
            ),
            (
                "light",
                include_str!("../../tests/fixtures/themes/pi-light.json"),
            ),
        ] {
            let json: Value = serde_json::from_str(text).unwrap();
            let ours = theme_from_json(name, &json, None).unwrap().colors;
            let pi = builtin(name).unwrap();
            assert_eq!(ours, pi, "{name}");
        }
    }
}
