//! Themes where RPC mode shows colours: `export_html` pages take the palette of the `theme`
//! setting — a built-in, a theme file from the agent dir, the project (after trust), settings
//! or a package, or a `light/dark` pair — through the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::{Value, json};
use support::Pi;

const TOKENS: [&str; 51] = [
    "accent",
    "border",
    "borderAccent",
    "borderMuted",
    "success",
    "error",
    "warning",
    "muted",
    "dim",
    "text",
    "thinkingText",
    "selectedBg",
    "userMessageBg",
    "userMessageText",
    "customMessageBg",
    "customMessageText",
    "customMessageLabel",
    "toolPendingBg",
    "toolSuccessBg",
    "toolErrorBg",
    "toolTitle",
    "toolOutput",
    "mdHeading",
    "mdLink",
    "mdLinkUrl",
    "mdCode",
    "mdCodeBlock",
    "mdCodeBlockBorder",
    "mdQuote",
    "mdQuoteBorder",
    "mdHr",
    "mdListBullet",
    "toolDiffAdded",
    "toolDiffRemoved",
    "toolDiffContext",
    "syntaxComment",
    "syntaxKeyword",
    "syntaxFunction",
    "syntaxVariable",
    "syntaxString",
    "syntaxNumber",
    "syntaxType",
    "syntaxOperator",
    "syntaxPunctuation",
    "thinkingOff",
    "thinkingMinimal",
    "thinkingLow",
    "thinkingMedium",
    "thinkingHigh",
    "thinkingXhigh",
    "bashMode",
];

/// A complete theme: every token `ink`, with a few set apart.
fn theme(name: &str, ink: Value, extra: Value) -> String {
    let mut colors: serde_json::Map<String, Value> = TOKENS
        .iter()
        .map(|t| (t.to_string(), ink.clone()))
        .collect();
    for (k, v) in extra.as_object().unwrap() {
        colors.insert(k.clone(), v.clone());
    }
    json!({"name": name, "vars": {"paper": "#fafafa", "leaf": "okhsl(140 60% 40%)"},
        "colors": colors, "export": {"pageBg": "paper", "cardBg": 255}})
    .to_string()
}

fn session_file(cwd: &str) -> String {
    let header = json!({"type": "session", "version": 3, "id": "0190a0a0-0000-7000-8000-000000000001",
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd});
    let message = json!({"type": "message", "id": "a1b2c3d4", "parentId": null,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hello", "timestamp": 1767225601000u64}});
    format!("{header}\n{message}\n")
}

/// Exports the prepared session over RPC and returns the page's extra stylesheet rules.
fn exported_theme_css(settings: Value, files: &[(&str, &str)], extra_args: &[&str]) -> String {
    let settings = settings.to_string();
    let mut all: Vec<(&str, &str)> = vec![("agent/settings.json", settings.as_str())];
    all.extend_from_slice(files);
    let mut args = vec!["--mode", "rpc", "--provider", "x", "--model", "y"];
    args.extend_from_slice(extra_args);
    let models = json!({"providers": {"x": {"baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-completions", "apiKey": "k", "models": [{"id": "y"}]}}})
    .to_string();
    all.push(("agent/models.json", models.as_str()));
    // The session belongs to the test's folder: Pi runs a session in its own cwd.
    let session_text = session_file("${PI_TEST_HOME}");
    all.push(("s.jsonl", session_text.as_str()));
    args.extend(["--session", "s.jsonl"]);
    let mut pi = Pi::spawn_with(&args, &[], &all);
    pi.write(b"{\"id\":\"e\",\"type\":\"export_html\",\"outputPath\":\"page.html\"}\n");
    let response = pi.read_json();
    assert_eq!(response["success"], true, "{response} {}", pi.stderr());
    let path = response["data"]["path"].as_str().unwrap().to_string();
    let cwd = std::path::Path::new(&pi_cwd(&pi)).join(path);
    let html = std::fs::read_to_string(cwd).unwrap();
    let style = html
        .split("<style>")
        .nth(1)
        .and_then(|s| s.split("</style>").next())
        .unwrap()
        .to_string();
    // Our own stylesheet comes first; the theme's rules follow it.
    match style.find(":root { color-scheme") {
        Some(at) => style[at..].to_string(),
        None => String::new(),
    }
}

fn pi_cwd(pi: &Pi) -> String {
    std::fs::read_link(format!("/proc/{}/cwd", pi.pid()))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_theme_from_a_package_colours_the_page() {
    let forest = theme(
        "forest",
        json!("#333333"),
        json!({"accent": "leaf", "userMessageBg": "#e8f0e8", "text": ""}),
    );
    let css = exported_theme_css(
        json!({"packages": ["pkgs/look"], "theme": "forest"}),
        &[("agent/pkgs/look/themes/forest.json", forest.as_str())],
        &[],
    );
    // Light (its backgrounds are lighter than its text): the terminal default text is black;
    // export colours from variables and a palette index; okhsl converted.
    assert_eq!(
        css.lines().next().unwrap(),
        ":root { color-scheme: light; --bg: #fafafa; --card: #eeeeee; --ink: #000000; --muted: #333333; --line: #333333; --code-bg: #333333; --user: #436a3b; --user-bg: #e8f0e8; --assistant: #333333; --tool: #333333; --ok: #333333; --err: #333333; --err-bg: #333333; --shell: #333333; --ext: #333333; --summary: #333333; --add: #333333; --del: #333333; }"
    );
}

#[test]
fn built_in_themes_and_light_dark_pairs() {
    let dark = exported_theme_css(json!({"theme": "dark"}), &[], &[]);
    // Pi 1.6.0's export colours of its dark theme.
    assert!(
        dark.starts_with(
            ":root { color-scheme: dark; --bg: #21252c; --card: #282c34; --ink: #dee0e1;"
        ),
        "{dark}"
    );
    let pair = exported_theme_css(json!({"theme": "light/dark"}), &[], &[]);
    assert!(
        pair.starts_with(":root { color-scheme: dark; --bg: #21252c;"),
        "{pair}"
    );
    assert!(
        pair.contains("@media (prefers-color-scheme: light) {\n  :root { color-scheme: light; --bg: #efeeee; --card: #f7f6f6;"),
        "{pair}"
    );
}

#[test]
fn without_a_usable_theme_the_page_keeps_its_palettes() {
    assert_eq!(exported_theme_css(json!({}), &[], &[]), "");
    assert_eq!(exported_theme_css(json!({"theme": "system"}), &[], &[]), "");
    // An invalid theme (a token missing) is skipped.
    let broken = json!({"name": "broken", "colors": {"accent": "#ff0000"}}).to_string();
    assert_eq!(
        exported_theme_css(
            json!({"theme": "broken"}),
            &[("agent/themes/broken.json", broken.as_str())],
            &[]
        ),
        ""
    );
}

#[test]
fn project_themes_need_trust() {
    let proj = theme("proj", json!(21), json!({}));
    let files = [(".pi/themes/proj.json", proj.as_str())];
    assert_eq!(
        exported_theme_css(json!({"theme": "proj"}), &files, &["--no-approve"]),
        ""
    );
    let css = exported_theme_css(json!({"theme": "proj"}), &files, &["--approve"]);
    // Palette index 21 is #0000ff; Pi 1.6.0 judges this theme dark (as it does here).
    assert!(
        css.starts_with(
            ":root { color-scheme: dark; --bg: #fafafa; --card: #eeeeee; --ink: #0000ff;"
        ),
        "{css}"
    );
}

#[test]
fn a_theme_an_extension_discovers_colours_the_page() {
    let node22 = std::process::Command::new("node")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).starts_with("v22"))
        .unwrap_or(false);
    if !node22 {
        eprintln!("skipped: the extension host needs Node 22 on PATH");
        return;
    }
    let ext = "export default function (pi: any) {\n  pi.on(\"resources_discover\", () => ({ themePaths: [\"./ext-theme.json\"] }));\n}\n";
    let t = theme("from-ext", json!("#123456"), json!({}));
    let css = exported_theme_css(
        json!({"theme": "from-ext"}),
        &[("ext.ts", ext), ("ext-theme.json", t.as_str())],
        &["-e", "./ext.ts"],
    );
    assert!(css.contains("--ink: #123456;"), "{css}");
}
