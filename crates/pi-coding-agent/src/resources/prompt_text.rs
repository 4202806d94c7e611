//! The prose of our system prompt, written for this project. The prompt's structure (which
//! sections exist, in which order, and what data they carry) follows Pi so that clients and
//! extensions see the same section names; the wording is ours.

use std::path::Path;

/// The `preamble` section when no custom system prompt replaces it.
pub const PREAMBLE: &str = "You are pi, a coding agent working in the user's project. You look at files, run commands, change code and say plainly what you did.";

/// Last line of the `tools` section.
pub const TOOLS_FOOTER: &str = "Other tools may be offered to you as well.";

/// The `tools` section's list when no declared tool has a description line.
pub const NO_TOOLS: &str = "(none)";

/// The rule added when a shell is the only way to list and search files.
pub fn shell_file_ops_rule(bash: bool, powershell: bool) -> &'static str {
    match (bash, powershell) {
        (true, true) => "List, search and locate files with bash or PowerShell",
        (false, true) => "List, search and locate files with PowerShell",
        _ => "List, search and locate files with bash (ls, rg, find)",
    }
}

/// The rules every prompt ends with.
pub const CLOSING_RULES: [&str; 2] = [
    "Keep answers short and to the point",
    "Name the files you work on by their paths",
];

/// A built-in tool's one-line description for the `tools` section and its rules.
pub fn builtin_tool_prompt(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match name {
        "read" => (
            "Show the contents of a file",
            &["Look at files with read rather than cat or sed."][..],
        ),
        "bash" => (
            "Run a bash command (ls, grep, find, and so on)",
            &["The PI_* environment variables name the current model and session."][..],
        ),
        "powershell" => (
            "Run a PowerShell command",
            &["The PI_* environment variables name the current model and session."][..],
        ),
        "edit" => (
            "Change a file by replacing exact text; several separate replacements fit in one call",
            &[
                "Prefer edit for focused changes, and put all changes to one file into a single call.",
                "Each edits[].oldText has to occur in the original file exactly once. Keep it short, keep edits from overlapping, and merge edits that sit close together instead of quoting long unchanged passages.",
            ][..],
        ),
        "write" => (
            "Create a file or replace all of its contents",
            &["Use write for new files and complete rewrites only."][..],
        ),
        "grep" => (
            "Search file contents for a pattern (honours .gitignore)",
            &[][..],
        ),
        "find" => ("Find files by glob pattern (honours .gitignore)", &[][..]),
        "ls" => ("List the entries of a folder", &[][..]),
        _ => return None,
    })
}

/// The `docs` section: where the harness's own documentation lives.
pub fn docs(package_dir: &Path) -> String {
    let root = package_dir.display();
    format!(
        "About pi itself (read this only when asked about the harness: its SDK, extensions, themes, skills or terminal UI):\n\
- Overview: {root}/README.md\n\
- Reference: {root}/docs\n\
- Examples: {root}/examples (extensions, custom tools, SDK)\n\
- Paths written docs/... or examples/... mean those two folders, not the working directory\n\
- Topics: extensions (docs/extensions.md, examples/extensions/), themes (docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), terminal UI components (docs/tui.md), keybindings (docs/keybindings.md), the SDK (docs/sdk.md), custom providers (docs/custom-provider.md), models (docs/models.md), packages (docs/packages.md), environment variables (docs/environment-variables.md), MCP servers (docs/mcp.md), codemode scripts and non-chat models (docs/codemode.md)\n\
- Before changing the harness, read the relevant documents and examples completely, following their cross-references."
    )
}

/// First line of the `project_context` section.
pub const PROJECT_CONTEXT_HEADING: &str = "Instructions that come with this project:";

/// Which tool the `skills` section tells the model to load skill files with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillReader {
    Read,
    Bash,
    /// The reader is hidden and reachable only through another tool: name none.
    Indirect,
}

/// The `skills` section's introduction (before `<available_skills>`).
pub fn skills_intro(reader: SkillReader) -> [&'static str; 3] {
    [
        "Skills carry instructions for particular kinds of work.",
        match reader {
            SkillReader::Read => {
                "When a task fits a skill's description, load the skill's file with the read tool."
            }
            SkillReader::Bash => {
                "When a task fits a skill's description, load the skill's file with bash."
            }
            SkillReader::Indirect => {
                "When a task fits a skill's description, load the skill's file."
            }
        },
        "Paths in a skill are relative to its folder (where SKILL.md is); give tools absolute paths.",
    ]
}
