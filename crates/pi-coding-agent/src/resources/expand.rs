//! What a prompt's text becomes before it is sent (Pi's `_preparePrompt`, step 4): first a
//! `/skill:<name> args` command is replaced by the skill's instructions, then a `/<template>
//! args` command by the template's body with the arguments substituted.

use super::frontmatter;
use super::prompt_templates::{PromptTemplate, expand_prompt_template};
use super::skills::Skill;

/// A skill whose file could not be read while expanding `/skill:<name>`. Pi reports it as an
/// `extension_error` event with `extensionPath` = the skill file and `event` =
/// `"skill_expansion"`, and sends the text unexpanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillExpansionError {
    pub path: String,
    pub error: String,
}

/// The expanded text, and the error to report if a skill file failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub text: String,
    pub error: Option<SkillExpansionError>,
}

/// `/skill:<name> args` → the skill block (Pi's exact format), followed by the arguments after a
/// blank line. Unknown skills and other text pass through unchanged.
pub fn expand_skill_command(text: &str, skills: &[Skill]) -> Expansion {
    let unchanged = || Expansion {
        text: text.to_string(),
        error: None,
    };
    let Some(rest) = text.strip_prefix("/skill:") else {
        return unchanged();
    };
    // Pi splits at the first space only (not at other whitespace).
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], pi_js::trim(&rest[i + 1..])),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return unchanged();
    };
    let body = std::fs::read(&skill.file_path)
        .map_err(|e| crate::settings::file::node_io_message(&e, &skill.file_path))
        .and_then(|bytes| {
            frontmatter::strip(&String::from_utf8_lossy(&bytes)).map_err(|e| e.to_string())
        });
    match body {
        Ok(body) => {
            let block = format!(
                "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
                skill.name,
                skill.file_path.display(),
                skill.base_dir.display(),
                pi_js::trim(&body)
            );
            Expansion {
                text: if args.is_empty() {
                    block
                } else {
                    format!("{block}\n\n{args}")
                },
                error: None,
            }
        }
        Err(error) => Expansion {
            text: text.to_string(),
            error: Some(SkillExpansionError {
                path: skill.file_path.to_string_lossy().into_owned(),
                error,
            }),
        },
    }
}

/// Skill expansion, then prompt-template expansion.
pub fn expand_input(text: &str, skills: &[Skill], templates: &[PromptTemplate]) -> Expansion {
    let skill = expand_skill_command(text, skills);
    Expansion {
        text: expand_prompt_template(&skill.text, templates),
        error: skill.error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::skills::load_skills;
    use pi_test_support::TempDir;

    #[test]
    fn skill_block_like_pi() {
        let tmp = TempDir::new();
        tmp.write(
            "s/tool/SKILL.md",
            "---\r\nname: tool\r\ndescription: d\r\n---\r\n\r\nBody.\r\n\r\n",
        );
        let (skills, _) = load_skills(&[tmp.path().join("s")], tmp.path(), tmp.path(), tmp.path());
        let dir = tmp.path().join("s/tool");
        let block = format!(
            "<skill name=\"tool\" location=\"{0}/SKILL.md\">\nReferences are relative to {0}.\n\nBody.\n</skill>",
            dir.display()
        );
        assert_eq!(expand_input("/skill:tool", &skills, &[]).text, block);
        assert_eq!(
            expand_input("/skill:tool   a  b  ", &skills, &[]).text,
            format!("{block}\n\na  b")
        );
        assert_eq!(
            expand_input("/skill:tool\nx", &skills, &[]).text,
            "/skill:tool\nx"
        );
        assert_eq!(
            expand_input("/skill:other", &skills, &[]).text,
            "/skill:other"
        );
        std::fs::remove_file(dir.join("SKILL.md")).unwrap();
        let e = expand_input("/skill:tool", &skills, &[]);
        assert_eq!(e.text, "/skill:tool");
        assert!(
            e.error
                .unwrap()
                .error
                .starts_with("ENOENT: no such file or directory")
        );
    }
}
