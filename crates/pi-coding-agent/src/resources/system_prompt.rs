//! The system prompt as Pi 1.6.0 structures it (`system-prompt.js`): named sections in a fixed
//! order, each but `preamble` wrapped in `<name>\n...\n</name>`, carried by `role: "system"`
//! messages (the first holds every section, later ones only the changed sections, `null` for a
//! removed one).
//!
//! Order: `preamble`, then, unless a custom prompt (`--system-prompt`, `SYSTEM.md`) replaced the
//! preamble, `tools`, `rules`, `docs`; then `addendum` (`--append-system-prompt`,
//! `APPEND_SYSTEM.md`), `project_context` (context files), `skills` (when a tool can read skill
//! files), `cwd`, then extension sections. The data-bearing parts (project instructions, the
//! skills list, the cwd, the addendum, a custom preamble) are byte-for-byte Pi's; the prose
//! comes from `prompt_text.rs`.

use super::context_files::ContextFile;
use super::prompt_text::{self, SkillReader};
use super::skills::Skill;
use pi_protocol::SystemMessage;
use pi_protocol::content::StringOrBlocks;
use pi_protocol::record::{OrderedMap, Rest};
use std::path::Path;

/// What a tool contributes to the prompt: its line in `tools` and its rules.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolPrompt {
    pub name: String,
    /// One line for the `tools` section; a tool without one is not listed.
    pub snippet: Option<String>,
    pub guidelines: Vec<String>,
}

impl ToolPrompt {
    /// Our text for a built-in tool (`read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`,
    /// `powershell`); other names get an empty entry.
    pub fn builtin(name: &str) -> ToolPrompt {
        match prompt_text::builtin_tool_prompt(name) {
            Some((snippet, guidelines)) => ToolPrompt {
                name: name.to_string(),
                snippet: Some(snippet.to_string()),
                guidelines: guidelines.iter().map(|g| g.to_string()).collect(),
            },
            None => ToolPrompt {
                name: name.to_string(),
                ..ToolPrompt::default()
            },
        }
    }
}

/// Everything the sections are built from.
#[derive(Debug, Clone, Copy)]
pub struct PromptInputs<'a> {
    /// Replaces the preamble and drops `tools`, `rules` and `docs`.
    pub custom_prompt: Option<&'a str>,
    /// Active tools, in order (the tools the request declares, plus hidden ones).
    pub selected_tools: &'a [String],
    /// Active tools whose declarations are hidden from the model.
    pub hidden_tools: &'a [String],
    /// Prompt contributions of registered tools, by name.
    pub tools: &'a [ToolPrompt],
    /// Extra rules (extensions).
    pub prompt_guidelines: &'a [String],
    /// The addendum texts (each `--append-system-prompt`, or `APPEND_SYSTEM.md`), joined by a
    /// blank line.
    pub append: &'a [String],
    /// Where the harness documentation lives, for the `docs` section.
    pub package_dir: &'a Path,
    pub cwd: &'a Path,
    pub context_files: &'a [ContextFile],
    pub skills: &'a [Skill],
    /// Extension sections, in registration order.
    pub extra_sections: &'a [(String, String)],
}

/// Sections as they replay from a transcript (name → text).
pub type Sections = OrderedMap<String>;
/// A system message's `sections`: changed names with their text, removed ones `None`.
pub type SectionPatch = OrderedMap<Option<String>>;

/// `Invalid system prompt section name: <name>` for extension sections.
fn check_section_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name != "preamble";
    if valid {
        Ok(())
    } else {
        Err(format!("Invalid system prompt section name: {name}"))
    }
}

/// Builds the sections (Pi's `buildSystemPromptSections`).
pub fn build_sections(input: &PromptInputs<'_>) -> Result<Sections, String> {
    for (name, _) in input.extra_sections {
        check_section_name(name)?;
    }
    let declared: Vec<&String> = input
        .selected_tools
        .iter()
        .filter(|t| !input.hidden_tools.contains(t))
        .collect();
    let mut raw: Vec<(String, String)> = Vec::new();
    match input.custom_prompt.filter(|p| !p.is_empty()) {
        Some(custom) => raw.push(("preamble".into(), custom.to_string())),
        None => {
            raw.push(("preamble".into(), prompt_text::PREAMBLE.into()));
            raw.push(("tools".into(), tools_section(input, &declared)));
            raw.push(("rules".into(), rules_section(input, &declared)));
            raw.push(("docs".into(), prompt_text::docs(input.package_dir)));
        }
    }
    let append = input.append.join("\n\n");
    if !append.is_empty() {
        raw.push(("addendum".into(), append));
    }
    if !input.context_files.is_empty() {
        raw.push((
            "project_context".into(),
            project_context(input.context_files),
        ));
    }
    let is_declared = |n: &str| declared.iter().any(|d| *d == n);
    let is_selected = |n: &str| input.selected_tools.iter().any(|d| d == n);
    let reader = if is_declared("read") {
        Some(SkillReader::Read)
    } else if is_declared("bash") {
        Some(SkillReader::Bash)
    } else if is_selected("read") || is_selected("bash") {
        Some(SkillReader::Indirect)
    } else {
        None
    };
    if let Some(reader) = reader
        && let Some(text) = skills_section(input.skills, reader)
    {
        raw.push(("skills".into(), text));
    }
    raw.push(("cwd".into(), input.cwd.to_string_lossy().replace('\\', "/")));
    let mut sections = Sections::new();
    for (name, text) in raw {
        sections.insert(name, text);
    }
    for (name, text) in input.extra_sections {
        if !text.is_empty() {
            sections.insert(name.clone(), text.clone());
        }
    }
    // Wrap every section but the preamble in its tag.
    let wrapped = sections
        .0
        .into_iter()
        .map(|(name, text)| {
            if name == "preamble" {
                (name, text)
            } else {
                let w = format!("<{name}>\n{text}\n</{name}>");
                (name, w)
            }
        })
        .collect();
    Ok(OrderedMap(wrapped))
}

fn tools_section(input: &PromptInputs<'_>, declared: &[&String]) -> String {
    let lines: Vec<String> = declared
        .iter()
        .filter_map(|name| {
            let t = input.tools.iter().find(|t| t.name == **name)?;
            let snippet = t.snippet.as_deref().filter(|s| !s.is_empty())?;
            Some(format!("- {name}: {snippet}"))
        })
        .collect();
    let list = if lines.is_empty() {
        prompt_text::NO_TOOLS.to_string()
    } else {
        lines.join("\n")
    };
    format!("{list}\n\n{}", prompt_text::TOOLS_FOOTER)
}

fn rules_section(input: &PromptInputs<'_>, declared: &[&String]) -> String {
    let mut rules: Vec<String> = Vec::new();
    let mut add = |rule: &str| {
        let r = pi_js::trim(rule);
        if !r.is_empty() && !rules.iter().any(|x| x == r) {
            rules.push(r.to_string());
        }
    };
    let has = |n: &str| declared.iter().any(|d| *d == n);
    let (bash, ps) = (has("bash"), has("powershell"));
    if (bash || ps) && !has("grep") && !has("find") && !has("ls") {
        add(prompt_text::shell_file_ops_rule(bash, ps));
    }
    for name in declared {
        if let Some(t) = input.tools.iter().find(|t| t.name == **name) {
            for g in &t.guidelines {
                add(g);
            }
        }
    }
    for g in input.prompt_guidelines {
        add(g);
    }
    for r in prompt_text::CLOSING_RULES {
        add(r);
    }
    rules
        .iter()
        .map(|r| format!("- {r}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn project_context(files: &[ContextFile]) -> String {
    let mut parts = vec![prompt_text::PROJECT_CONTEXT_HEADING.to_string()];
    parts.extend(files.iter().map(|f| {
        format!(
            "<project_instructions path=\"{}\">\n{}\n</project_instructions>",
            f.path.display(),
            f.content
        )
    }));
    parts.join("\n\n")
}

/// The skills the model may load by itself, in Pi's `<available_skills>` format (Agent Skills
/// integration format); `None` when every skill is hidden.
fn skills_section(skills: &[Skill], reader: SkillReader) -> Option<String> {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = prompt_text::skills_intro(reader)
        .iter()
        .map(|s| s.to_string())
        .collect();
    lines.push(String::new());
    lines.push(available_skills(&visible));
    Some(lines.join("\n"))
}

/// `<available_skills>...</available_skills>` exactly as Pi writes it.
pub fn available_skills(skills: &[&Skill]) -> String {
    let mut lines = vec!["<available_skills>".to_string()];
    for s in skills {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    lines.join("\n")
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The sections a transcript's system messages add up to (Pi's `getCurrentSystemMessage`): in
/// order, each message sets its sections and removes the `null` ones.
pub fn replay_sections<'a>(messages: impl IntoIterator<Item = &'a SystemMessage>) -> Sections {
    let mut sections = Sections::new();
    for m in messages {
        for (name, value) in m.sections.iter().flat_map(|s| s.iter()) {
            match value {
                Some(text) => sections.insert(name.to_string(), text.clone()),
                None => {
                    sections.remove(name);
                }
            }
        }
    }
    sections
}

/// The patch from `previous` (the replayed sections) to `current`: changed or new sections
/// with their text, then removed ones as `None`; `None` when nothing changed (no system
/// message is sent).
pub fn diff_sections(previous: &Sections, current: &Sections) -> Option<SectionPatch> {
    let mut patch = SectionPatch::new();
    for (name, text) in current.iter() {
        if previous.get(name) != Some(text) {
            patch.insert(name.to_string(), Some(text.clone()));
        }
    }
    for (name, _) in previous.iter() {
        if current.get(name).is_none() {
            patch.insert(name.to_string(), None);
        }
    }
    (!patch.is_empty()).then_some(patch)
}

/// The system message carrying `patch` (`content` empty), in the key order Pi emits at the
/// start of a run. Tool declarations are added by the agent loop.
pub fn system_message(patch: SectionPatch, timestamp: u64) -> SystemMessage {
    SystemMessage {
        content: StringOrBlocks::Text(String::new()),
        sections: Some(patch),
        tools_added: None,
        tools_removed: None,
        timestamp,
        rest: Rest::with_order(SystemMessage::RUN_START_ORDER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn names(s: &Sections) -> Vec<&str> {
        s.iter().map(|(k, _)| k).collect()
    }

    fn tools(list: &[&str]) -> (Vec<String>, Vec<ToolPrompt>) {
        (
            list.iter().map(|s| s.to_string()).collect(),
            list.iter().map(|s| ToolPrompt::builtin(s)).collect(),
        )
    }

    fn inputs<'a>(selected: &'a [String], registry: &'a [ToolPrompt]) -> PromptInputs<'a> {
        PromptInputs {
            custom_prompt: None,
            selected_tools: selected,
            hidden_tools: &[],
            tools: registry,
            prompt_guidelines: &[],
            append: &[],
            package_dir: Path::new("/pkg"),
            cwd: Path::new("/work"),
            context_files: &[],
            skills: &[],
            extra_sections: &[],
        }
    }

    #[test]
    fn default_sections_and_wrapping() {
        let (sel, reg) = tools(&["read", "bash", "edit", "write"]);
        let s = build_sections(&inputs(&sel, &reg)).unwrap();
        assert_eq!(names(&s), ["preamble", "tools", "rules", "docs", "cwd"]);
        assert_eq!(s.get("cwd").unwrap(), "<cwd>\n/work\n</cwd>");
        assert!(s.get("tools").unwrap().starts_with("<tools>\n- read: "));
        let rules = s.get("rules").unwrap();
        assert_eq!(rules.lines().count(), 2 + 8);
        assert!(!s.get("preamble").unwrap().starts_with('<'));
    }

    #[test]
    fn custom_prompt_replaces_preamble_tools_rules_and_docs() {
        let (sel, reg) = tools(&["read"]);
        let append = ["a".to_string(), "b\n".to_string()];
        let mut i = inputs(&sel, &reg);
        i.custom_prompt = Some("Be terse.");
        i.append = &append;
        let s = build_sections(&i).unwrap();
        assert_eq!(names(&s), ["preamble", "addendum", "cwd"]);
        assert_eq!(s.get("preamble").unwrap(), "Be terse.");
        assert_eq!(
            s.get("addendum").unwrap(),
            "<addendum>\na\n\nb\n\n</addendum>"
        );
    }

    #[test]
    fn extension_sections_are_validated_and_appended() {
        let (sel, reg) = tools(&[]);
        let extra = [
            ("plan".to_string(), "x".to_string()),
            ("empty".into(), String::new()),
        ];
        let mut i = inputs(&sel, &reg);
        i.extra_sections = &extra;
        let s = build_sections(&i).unwrap();
        assert_eq!(
            names(&s),
            ["preamble", "tools", "rules", "docs", "cwd", "plan"]
        );
        assert!(s.get("tools").unwrap().contains("(none)"));
        let bad = [("preamble".to_string(), "x".to_string())];
        i.extra_sections = &bad;
        assert_eq!(
            build_sections(&i).unwrap_err(),
            "Invalid system prompt section name: preamble"
        );
    }

    #[test]
    fn skills_need_a_reader_and_a_visible_skill() {
        let skill = |name: &str, hidden: bool| Skill {
            name: name.into(),
            description: "Use <this> & \"that\"".into(),
            file_path: PathBuf::from(format!("/s/{name}/SKILL.md")),
            base_dir: PathBuf::from(format!("/s/{name}")),
            source_info: super::super::source::Metadata::new(
                "auto",
                pi_protocol::results::SourceScope::User,
                None,
            )
            .source_info(Path::new("/s")),
            disable_model_invocation: hidden,
        };
        let skills = [skill("a", false), skill("b", true)];
        let (sel, reg) = tools(&["ls"]);
        let mut i = inputs(&sel, &reg);
        i.skills = &skills;
        assert!(build_sections(&i).unwrap().get("skills").is_none());
        let (sel, reg) = tools(&["read", "bash"]);
        let hidden = ["read".to_string(), "bash".to_string()];
        let mut i = inputs(&sel, &reg);
        i.skills = &skills;
        i.hidden_tools = &hidden;
        let s = build_sections(&i).unwrap();
        let text = s.get("skills").unwrap();
        assert!(text.ends_with(
            "<available_skills>\n  <skill>\n    <name>a</name>\n    <description>Use &lt;this&gt; &amp; &quot;that&quot;</description>\n    <location>/s/a/SKILL.md</location>\n  </skill>\n</available_skills>\n</skills>"
        ));
        assert!(text.contains(prompt_text::skills_intro(SkillReader::Indirect)[1]));
    }

    #[test]
    fn patches_carry_changes_and_removals() {
        let mut a = Sections::new();
        a.insert("preamble".into(), "p".into());
        a.insert("skills".into(), "s".into());
        a.insert("cwd".into(), "c".into());
        let mut b = Sections::new();
        b.insert("preamble".into(), "p".into());
        b.insert("cwd".into(), "c2".into());
        b.insert("plan".into(), "x".into());
        let patch = diff_sections(&a, &b).unwrap();
        assert_eq!(
            pi_js::json::to_js_string(&patch).unwrap(),
            r#"{"cwd":"c2","plan":"x","skills":null}"#
        );
        assert_eq!(diff_sections(&b, &b), None);
        let first = system_message(diff_sections(&Sections::new(), &a).unwrap(), 5);
        let second = system_message(patch, 6);
        assert_eq!(replay_sections([&first, &second]), b_with_order(&b));
        assert_eq!(
            pi_js::json::to_js_string(&first).unwrap(),
            r#"{"role":"system","content":"","sections":{"preamble":"p","skills":"s","cwd":"c"},"timestamp":5}"#
        );
    }

    /// Replay keeps the first position of a section that stays, as a JavaScript `Map` does.
    fn b_with_order(b: &Sections) -> Sections {
        let mut s = Sections::new();
        s.insert("preamble".into(), b.get("preamble").unwrap().clone());
        s.insert("cwd".into(), b.get("cwd").unwrap().clone());
        s.insert("plan".into(), b.get("plan").unwrap().clone());
        s
    }
}
