//! `pi config`: switch discovered and packaged resources and the built-in extensions on and
//! off. Pi opens a terminal screen for it; this program has no terminal UI framework, so the
//! list is drawn as plain text: redrawn after each key on a terminal (raw mode via `stty`),
//! and without one (Pi then still reads keys from stdin) the keys on stdin are applied and the
//! final list printed once when stdin ends. Keys are Pi's: up/down, page up/down, space or
//! enter to switch, tab for the other scope, typing to search, escape or ctrl+c to close.

pub mod model;

use super::cli::{Place, Style, command_settings, report_settings_errors};
use super::{ChildOutput, PackageManager};
use crate::resources::commands::builtin_extension_names;
use crate::resources::discovery::{Discovered, DiscoveryInput, ResourceSet, discover_all};
use crate::resources::patterns::Overrides;
use crate::resources::source::Metadata;
use crate::settings::SettingsManager;
use crate::settings::paths::CONFIG_DIR_NAME;
use model::{Editor, Group, Item, Override, WriteScope, build_groups, kind_label};
use pi_protocol::results::SourceScope;
use std::io::{Read, Write};

const USAGE: &str = "pi config [-l] [--approve|--no-approve]";

fn help(style: Style) -> String {
    format!(
        "{}\n  {USAGE}\n\nSwitch package resources and built-in extensions on or off.\nWithout -l, starts with global settings (~/.pi/agent/settings.json).\nPress Tab to switch between global and project-local settings.\n\nOptions:\n  -l, --local       Edit project overrides (.pi/settings.json)\n  -a, --approve     Trust project-local files for this command with -l\n  -na, --no-approve Ignore project-local files for this command with -l\n\n",
        style.bold("Usage:")
    )
}

/// Runs `pi config`; returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let style = Style::detect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{}", help(style));
        return 0;
    }
    let mut local = false;
    let mut trust_override = None;
    for a in args {
        match a.as_str() {
            "-l" | "--local" => local = true,
            "-a" | "--approve" => trust_override = Some(true),
            "-na" | "--no-approve" => trust_override = Some(false),
            _ if a.starts_with('-') => {
                eprintln!(
                    "{}",
                    style.red(&format!("Unknown option {a} for \"config\"."))
                );
                eprintln!(
                    "{}",
                    style.dim(&format!("Use \"pi --help\" or \"{USAGE}\"."))
                );
                return 1;
            }
            _ => {
                eprintln!("{}", style.red(&format!("Unexpected argument {a}.")));
                eprintln!("{}", style.dim(&format!("Usage: {USAGE}")));
                return 1;
            }
        }
    }
    let place = Place::from_env();
    let mut settings = command_settings(&place, trust_override, false, style);
    if local && !settings.is_project_trusted() {
        eprintln!(
            "{}",
            style.red("Project is not trusted. Use --approve to modify local resource config.")
        );
        return 1;
    }
    report_settings_errors(&settings, "config command", style);
    let global_settings = SettingsManager::load(&place.cwd, &place.agent_dir, false);
    let (global, mut warnings) = resolve_all(&place, &global_settings);
    let project = if settings.is_project_trusted() {
        let (project, more) = resolve_all(&place, &settings);
        for w in more {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        project
    } else {
        global.clone()
    };
    for w in &warnings {
        eprintln!("{}", style.yellow(&format!("Warning: {w}")));
    }
    let groups_global = build_groups(&global, &place.agent_dir, &place.home);
    let groups_project = build_groups(&project, &place.agent_dir, &place.home);
    let project_available = settings.is_project_trusted();
    let editor = Editor::new(
        &mut settings,
        &place.cwd,
        &place.agent_dir,
        &place.home,
        &groups_global,
    );
    let mode = if local {
        WriteScope::Project
    } else {
        WriteScope::Global
    };
    let mut list = ResourceList::new(
        groups_global,
        groups_project,
        editor,
        mode,
        project_available,
    );
    let size = terminal_size();
    list.max_visible = (size.1.saturating_sub(8)).max(5);
    if is_tty() {
        interactive(&mut list, size.0)
    } else {
        let mut input = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut input);
        for key in parse_keys(&input, false) {
            if list.handle(key) == Flow::Close {
                break;
            }
        }
        print!("{}", list.frame(size.0).join("\n") + "\n");
        if let Some(e) = list.error.take() {
            eprintln!("{}", style.red(&format!("Error: {e}")));
        }
        0
    }
}

/// Everything `resolve()` of Pi's package manager finds for these settings: packages
/// (installed when missing), settings entries, standard folders and the built-in extensions;
/// plus the install failure warnings.
fn resolve_all(place: &Place, settings: &SettingsManager) -> (ResourceSet, Vec<String>) {
    let mut pm = PackageManager::new(
        &place.cwd,
        &place.agent_dir,
        &place.home,
        settings,
        ChildOutput::Inherit,
    );
    let packages = pm.resolve_packages();
    let mut found = discover_all(&DiscoveryInput {
        cwd: &place.cwd,
        agent_dir: &place.agent_dir,
        home: &place.home,
        global: settings.global_layer(),
        project: settings.project_layer(),
        project_trusted: settings.is_project_trusted(),
        packages: &packages.resources,
    });
    let list = |layer: &serde_json::Map<String, serde_json::Value>| -> Vec<String> {
        layer
            .get("extensions")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let project = Overrides::new(&list(settings.project_layer()));
    let user = Overrides::new(&list(settings.global_layer()));
    let project_base = place.cwd.join(CONFIG_DIR_NAME);
    for name in builtin_extension_names() {
        let path = format!("builtin:{name}");
        let decision = project.decision(&path, &project_base, &place.home);
        let scope = if decision.is_some() {
            SourceScope::Project
        } else {
            SourceScope::User
        };
        let enabled =
            decision.unwrap_or_else(|| user.enabled(&path, &place.agent_dir, &place.home));
        found.extensions.push(Discovered {
            path: path.into(),
            enabled,
            metadata: Metadata::new("builtin", scope, None),
        });
    }
    let warnings = packages
        .install_failures
        .iter()
        .map(|f| format!("Extension package \"{}\": {}", f.source, f.description()))
        .collect();
    (found, warnings)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    PageUp,
    PageDown,
    Toggle,
    Tab,
    Cancel,
    Backspace,
    Char(char),
}

/// Keys in a byte stream. On a terminal a lone escape byte in one read is the escape key; in
/// a stream it is when no `[`/`O` follows.
pub fn parse_keys(bytes: &[u8], one_read: bool) -> Vec<Key> {
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.chars().collect();
    let mut keys = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '\x1b' => {
                let next = chars.get(i).copied();
                if matches!(next, Some('[') | Some('O')) && !(one_read && chars.len() == 1) {
                    let mut seq = String::new();
                    i += 1;
                    while let Some(&ch) = chars.get(i) {
                        i += 1;
                        seq.push(ch);
                        if ch.is_ascii_alphabetic() || ch == '~' {
                            break;
                        }
                    }
                    match seq.as_str() {
                        "A" => keys.push(Key::Up),
                        "B" => keys.push(Key::Down),
                        "5~" => keys.push(Key::PageUp),
                        "6~" => keys.push(Key::PageDown),
                        _ => {}
                    }
                } else {
                    keys.push(Key::Cancel);
                }
            }
            '\x03' => keys.push(Key::Cancel),
            '\t' => keys.push(Key::Tab),
            ' ' | '\r' | '\n' => keys.push(Key::Toggle),
            '\x7f' | '\x08' => keys.push(Key::Backspace),
            c if !c.is_control() => keys.push(Key::Char(c)),
            _ => {}
        }
    }
    keys
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Close,
}

#[derive(Debug, Clone)]
enum Row {
    Group(usize),
    Subgroup(usize, usize),
    Item(usize, usize, usize),
}

/// The list: Pi's `ResourceList` state.
pub struct ResourceList<'a> {
    global: Vec<Group>,
    project: Vec<Group>,
    editor: Editor<'a>,
    mode: WriteScope,
    project_available: bool,
    rows: Vec<Row>,
    filtered: Vec<Row>,
    selected: usize,
    query: String,
    pub max_visible: usize,
    pub error: Option<String>,
}

impl<'a> ResourceList<'a> {
    pub fn new(
        global: Vec<Group>,
        project: Vec<Group>,
        editor: Editor<'a>,
        mode: WriteScope,
        project_available: bool,
    ) -> ResourceList<'a> {
        let mut list = ResourceList {
            global,
            project,
            editor,
            mode,
            project_available,
            rows: Vec::new(),
            filtered: Vec::new(),
            selected: 0,
            query: String::new(),
            max_visible: 16,
            error: None,
        };
        list.rebuild();
        list
    }

    fn groups(&self) -> &Vec<Group> {
        match self.mode {
            WriteScope::Global => &self.global,
            WriteScope::Project => &self.project,
        }
    }

    fn item(&self, g: usize, s: usize, i: usize) -> &Item {
        &self.groups()[g].subgroups[s].1[i]
    }

    fn rebuild(&mut self) {
        let mut rows = Vec::new();
        for (g, group) in self.groups().iter().enumerate() {
            rows.push(Row::Group(g));
            for (s, (_, items)) in group.subgroups.iter().enumerate() {
                rows.push(Row::Subgroup(g, s));
                for i in 0..items.len() {
                    rows.push(Row::Item(g, s, i));
                }
            }
        }
        self.rows = rows;
        self.filter();
    }

    fn filter(&mut self) {
        let q = self.query.trim().to_lowercase();
        if q.is_empty() {
            self.filtered = self.rows.clone();
        } else {
            let matches = |it: &Item| {
                it.display_name.to_lowercase().contains(&q)
                    || it.kind.key().contains(&q)
                    || it.path.to_lowercase().contains(&q)
            };
            let groups = self.groups();
            let hit_sub = |g: usize, s: usize| groups[g].subgroups[s].1.iter().any(matches);
            let hit_group = |g: usize| (0..groups[g].subgroups.len()).any(|s| hit_sub(g, s));
            self.filtered = self
                .rows
                .iter()
                .filter(|r| match r {
                    Row::Group(g) => hit_group(*g),
                    Row::Subgroup(g, s) => hit_sub(*g, *s),
                    Row::Item(g, s, i) => matches(&groups[*g].subgroups[*s].1[*i]),
                })
                .cloned()
                .collect();
        }
        self.selected = self
            .filtered
            .iter()
            .position(|r| matches!(r, Row::Item(..)))
            .unwrap_or(0);
    }

    fn next_item(&self, from: usize, down: bool) -> usize {
        let mut i = from as isize;
        loop {
            i += if down { 1 } else { -1 };
            if i < 0 || i as usize >= self.filtered.len() {
                return from;
            }
            if matches!(self.filtered[i as usize], Row::Item(..)) {
                return i as usize;
            }
        }
    }

    pub fn handle(&mut self, key: Key) -> Flow {
        match key {
            Key::Up => self.selected = self.next_item(self.selected, false),
            Key::Down => self.selected = self.next_item(self.selected, true),
            Key::PageUp => {
                let mut t = self.selected.saturating_sub(self.max_visible);
                while t < self.filtered.len() && !matches!(self.filtered[t], Row::Item(..)) {
                    t += 1;
                }
                if t < self.filtered.len() {
                    self.selected = t;
                }
            }
            Key::PageDown => {
                let mut t = (self.selected + self.max_visible)
                    .min(self.filtered.len().saturating_sub(1))
                    as isize;
                while t >= 0 && !matches!(self.filtered[t as usize], Row::Item(..)) {
                    t -= 1;
                }
                if t >= 0 {
                    self.selected = t as usize;
                }
            }
            Key::Cancel => return Flow::Close,
            Key::Tab => {
                if self.project_available {
                    self.mode = match self.mode {
                        WriteScope::Global => WriteScope::Project,
                        WriteScope::Project => WriteScope::Global,
                    };
                    self.rebuild();
                }
            }
            Key::Toggle => self.toggle_selected(),
            Key::Backspace => {
                self.query.pop();
                self.filter();
            }
            Key::Char(c) => {
                self.query.push(c);
                self.filter();
            }
        }
        Flow::Continue
    }

    fn toggle_selected(&mut self) {
        let Some(Row::Item(g, s, i)) = self.filtered.get(self.selected).cloned() else {
            return;
        };
        let item = self.item(g, s, i).clone();
        if !Editor::can_toggle(self.mode, &item) {
            return;
        }
        match self.editor.toggle(self.mode, &item) {
            Ok(Some(enabled)) => {
                let mode = self.mode;
                let groups = match mode {
                    WriteScope::Global => &mut self.global,
                    WriteScope::Project => &mut self.project,
                };
                groups[g].subgroups[s].1[i].enabled = enabled;
            }
            Ok(None) => {}
            Err(e) => self.error = Some(e),
        }
    }

    fn checkbox(&self, item: &Item) -> &'static str {
        if self.mode == WriteScope::Project {
            match self.editor.override_state(self.mode, item) {
                Override::Load => return "[+]",
                Override::Unload => return "[-]",
                Override::Inherit => {}
            }
        }
        if item.enabled { "[x]" } else { "[ ]" }
    }

    fn suffix(&self, item: &Item) -> &'static str {
        if self.mode != WriteScope::Project {
            return "";
        }
        match self.editor.override_state(self.mode, item) {
            Override::Load => "  project load",
            Override::Unload => "  project unload",
            Override::Inherit if self.editor.is_inherited_global(item) => "  inherited global",
            Override::Inherit => "",
        }
    }

    /// The screen as plain lines, `width` columns wide.
    pub fn frame(&self, width: usize) -> Vec<String> {
        let project = self.mode == WriteScope::Project;
        let title = if project {
            "Project Local Resources"
        } else {
            "Global Resources"
        };
        let mut hint = String::new();
        if self.project_available {
            hint.push_str("tab switch mode · ");
        }
        hint.push_str(if project {
            "space cycle inherit/+/-"
        } else {
            "space toggle"
        });
        hint.push_str(" · esc close");
        let spacing = width
            .saturating_sub(title.chars().count() + hint.chars().count())
            .max(1);
        let scope_hint = if project {
            format!("{CONFIG_DIR_NAME}/settings.json · inherited global resources are dimmed")
        } else {
            format!("~/{CONFIG_DIR_NAME}/agent/settings.json")
        };
        let border = "─".repeat(width);
        let mut lines = vec![
            String::new(),
            border.clone(),
            String::new(),
            truncate(&format!("{title}{}{hint}", " ".repeat(spacing)), width, ""),
            truncate(&scope_hint, width, ""),
            String::new(),
            truncate(&format!("> {}", self.query), width, ""),
            String::new(),
        ];
        if self.filtered.is_empty() {
            lines.push("  No resources found".into());
        } else {
            let len = self.filtered.len();
            let start = self
                .selected
                .saturating_sub(self.max_visible / 2)
                .min(len.saturating_sub(self.max_visible));
            let end = (start + self.max_visible).min(len);
            for (n, row) in self.filtered[start..end].iter().enumerate() {
                let selected = start + n == self.selected;
                let groups = self.groups();
                lines.push(match row {
                    Row::Group(g) => {
                        let inherited = project && groups[*g].scope == SourceScope::User;
                        let extra = if inherited {
                            " · inherited global"
                        } else {
                            ""
                        };
                        truncate(&format!("  {}{extra}", groups[*g].label), width, "")
                    }
                    Row::Subgroup(g, s) => truncate(
                        &format!("    {}", kind_label(groups[*g].subgroups[*s].0)),
                        width,
                        "",
                    ),
                    Row::Item(g, s, i) => {
                        let item = &groups[*g].subgroups[*s].1[*i];
                        let cursor = if selected { "> " } else { "  " };
                        truncate(
                            &format!(
                                "{cursor}    {} {}{}",
                                self.checkbox(item),
                                item.display_name,
                                self.suffix(item)
                            ),
                            width,
                            "...",
                        )
                    }
                });
            }
            if start > 0 || end < len {
                let count = self
                    .filtered
                    .iter()
                    .filter(|r| matches!(r, Row::Item(..)))
                    .count();
                let current = self.filtered[..self.selected]
                    .iter()
                    .filter(|r| matches!(r, Row::Item(..)))
                    .count()
                    + 1;
                lines.push(format!("  ({current}/{count})"));
            }
        }
        lines.push(String::new());
        lines.push(border);
        lines
    }
}

fn truncate(text: &str, width: usize, ellipsis: &str) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(ellipsis.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(ellipsis);
    out
}

fn is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `(columns, rows)` of the terminal (`stty size`), else `COLUMNS`/`LINES`, else 80×24.
fn terminal_size() -> (usize, usize) {
    let from_stty = std::process::Command::new("stty")
        .arg("size")
        .stdin(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).to_string();
            let mut parts = text.split_whitespace().map(|p| p.parse::<usize>().ok());
            Some((parts.next()??, parts.next()??))
        });
    if let Some((rows, cols)) = from_stty
        && rows > 0
        && cols > 0
    {
        return (cols, rows);
    }
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    (env("COLUMNS", 80), env("LINES", 24))
}

fn stty(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("stty")
        .args(args)
        .stdin(std::process::Stdio::inherit())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A terminal: raw input, the list redrawn on the alternate screen after every key.
fn interactive(list: &mut ResourceList<'_>, width: usize) -> i32 {
    let saved = stty(&["-g"]);
    let _ = stty(&["raw", "-echo"]);
    let mut out = std::io::stdout();
    let draw = |list: &ResourceList<'_>, out: &mut std::io::Stdout| {
        let body = list.frame(width).join("\r\n");
        let _ = write!(out, "\x1b[H\x1b[2J{body}");
        let _ = out.flush();
    };
    let _ = write!(out, "\x1b[?1049h\x1b[?25l");
    draw(list, &mut out);
    let mut stdin = std::io::stdin();
    let mut buf = [0u8; 64];
    'read: loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for key in parse_keys(&buf[..n], true) {
            if list.handle(key) == Flow::Close {
                break 'read;
            }
        }
        draw(list, &mut out);
    }
    let _ = write!(out, "\x1b[?25h\x1b[?1049l");
    let _ = out.flush();
    match saved {
        Some(s) => {
            let _ = stty(&[s.as_str()]);
        }
        None => {
            let _ = stty(&["sane"]);
        }
    }
    if let Some(e) = list.error.take() {
        eprintln!("Error: {e}");
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_a_stream() {
        assert_eq!(
            parse_keys(b"\x1b[Bab \x1b[A\t\x7f\x1b", false),
            [
                Key::Down,
                Key::Char('a'),
                Key::Char('b'),
                Key::Toggle,
                Key::Up,
                Key::Tab,
                Key::Backspace,
                Key::Cancel
            ]
        );
        assert_eq!(parse_keys(b"\x1b", true), [Key::Cancel]);
        assert_eq!(
            parse_keys(b"\x1b[6~\x03", false),
            [Key::PageDown, Key::Cancel]
        );
    }
}
