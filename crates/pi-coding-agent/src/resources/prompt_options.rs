//! `systemPromptOptions` of `before_agent_start` (Pi's `BuildSystemPromptOptions`, normalized):
//! what the system prompt is built from, handed to extensions, which may edit it in place. The
//! edited options build the prompt for that run, and their `selectedTools` become its tools.
//! `buildSystemPrompt(options)` from the package renders options the same way.

use super::context_files::ContextFile;
use super::session::SessionResources;
use super::skills::Skill;
use super::system_prompt::{PromptInputs, Sections, ToolPrompt, build_sections};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// The options, owned.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PromptOptions {
    custom_prompt: Option<String>,
    selected_tools: Vec<String>,
    hidden_tools: Vec<String>,
    tools: Vec<ToolPrompt>,
    prompt_guidelines: Vec<String>,
    append: String,
    sections: Vec<(String, String)>,
    cwd: PathBuf,
    context_files: Vec<ContextFile>,
    skills: Vec<Skill>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn pairs(v: Option<&Value>) -> Vec<(String, Value)> {
    v.and_then(Value::as_object)
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

impl PromptOptions {
    /// The session's own options (Pi's base options): `selected` active tools, `tools` the
    /// texts of every registered tool (as Pi's options carry them).
    pub fn session(
        res: &SessionResources,
        selected: Vec<String>,
        tools: Vec<ToolPrompt>,
    ) -> PromptOptions {
        PromptOptions {
            custom_prompt: res.resources.system_prompt.clone(),
            tools,
            selected_tools: selected,
            hidden_tools: Vec::new(),
            prompt_guidelines: Vec::new(),
            append: res.resources.append_system_prompt.join("\n\n"),
            sections: Vec::new(),
            cwd: res.cwd.clone(),
            context_files: res.resources.context_files.clone(),
            skills: res.resources.skills.clone(),
        }
    }

    /// The normalized JSON handlers see.
    pub fn to_json(&self) -> Value {
        let mut snippets = Map::new();
        let mut guidelines = Map::new();
        for t in &self.tools {
            if let Some(s) = t.snippet.as_deref().filter(|s| !s.is_empty()) {
                snippets.insert(t.name.clone(), json!(s));
            }
            if !t.guidelines.is_empty() {
                guidelines.insert(t.name.clone(), json!(t.guidelines));
            }
        }
        let mut out = Map::new();
        if let Some(p) = &self.custom_prompt {
            out.insert("customPrompt".into(), json!(p));
        }
        out.insert("selectedTools".into(), json!(self.selected_tools));
        out.insert("hiddenTools".into(), json!(self.hidden_tools));
        out.insert("toolSnippets".into(), Value::Object(snippets));
        out.insert("toolGuidelines".into(), Value::Object(guidelines));
        out.insert("promptGuidelines".into(), json!(self.prompt_guidelines));
        out.insert("appendSystemPrompt".into(), json!(self.append));
        let sections: Map<String, Value> = self
            .sections
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        out.insert("sections".into(), Value::Object(sections));
        out.insert("cwd".into(), json!(self.cwd));
        out.insert(
            "contextFiles".into(),
            Value::Array(
                self.context_files
                    .iter()
                    .map(|f| json!({ "path": f.path, "content": f.content }))
                    .collect(),
            ),
        );
        out.insert(
            "skills".into(),
            Value::Array(self.skills.iter().map(skill_json).collect()),
        );
        Value::Object(out)
    }

    /// Options as an extension left them; what it dropped or broke falls back to `base`.
    pub fn from_json(value: &Value, base: &PromptOptions) -> PromptOptions {
        let get = |k: &str| value.get(k);
        let snippets = pairs(get("toolSnippets"));
        let guidelines = pairs(get("toolGuidelines"));
        let mut names: Vec<String> = snippets.iter().map(|(k, _)| k.clone()).collect();
        for (k, _) in &guidelines {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        let tools = names
            .into_iter()
            .map(|name| ToolPrompt {
                snippet: snippets
                    .iter()
                    .find(|(k, _)| *k == name)
                    .and_then(|(_, v)| v.as_str().map(str::to_string)),
                guidelines: strings(guidelines.iter().find(|(k, _)| *k == name).map(|(_, v)| v)),
                name,
            })
            .collect();
        PromptOptions {
            custom_prompt: get("customPrompt")
                .and_then(Value::as_str)
                .map(str::to_string),
            selected_tools: match get("selectedTools") {
                Some(v) if v.is_array() => strings(Some(v)),
                _ => base.selected_tools.clone(),
            },
            hidden_tools: strings(get("hiddenTools")),
            tools,
            prompt_guidelines: strings(get("promptGuidelines")),
            append: get("appendSystemPrompt")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            sections: pairs(get("sections"))
                .into_iter()
                .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
                .collect(),
            cwd: get("cwd")
                .and_then(Value::as_str)
                .map_or_else(|| base.cwd.clone(), PathBuf::from),
            context_files: match get("contextFiles").and_then(Value::as_array) {
                Some(files) => files
                    .iter()
                    .filter_map(|f| {
                        Some(ContextFile {
                            path: PathBuf::from(f.get("path")?.as_str()?),
                            content: f.get("content")?.as_str()?.to_string(),
                        })
                    })
                    .collect(),
                None => Vec::new(),
            },
            skills: match get("skills").and_then(Value::as_array) {
                Some(skills) => skills
                    .iter()
                    .filter_map(|s| skill_from_json(s, base))
                    .collect(),
                None => Vec::new(),
            },
        }
    }

    /// The same options for another set of active tools (a later turn of the run): the run's
    /// own tool texts over the session's.
    pub fn with_tools(&self, names: &[String], session: &PromptOptions) -> PromptOptions {
        let tools = names
            .iter()
            .map(|n| {
                let own = self.tools.iter().find(|t| t.name == *n);
                let base = session.tools.iter().find(|t| t.name == *n);
                ToolPrompt {
                    name: n.clone(),
                    snippet: own
                        .and_then(|t| t.snippet.clone())
                        .or_else(|| base.and_then(|t| t.snippet.clone())),
                    guidelines: own
                        .filter(|t| !t.guidelines.is_empty())
                        .or(base)
                        .map(|t| t.guidelines.clone())
                        .unwrap_or_default(),
                }
            })
            .collect();
        PromptOptions {
            selected_tools: names.to_vec(),
            tools,
            ..self.clone()
        }
    }

    pub fn selected_tools(&self) -> &[String] {
        &self.selected_tools
    }

    /// The prompt's sections for these options.
    pub fn build(&self, package_dir: &std::path::Path) -> Result<Sections, String> {
        let append: Vec<String> = if self.append.is_empty() {
            Vec::new()
        } else {
            vec![self.append.clone()]
        };
        build_sections(&PromptInputs {
            custom_prompt: self.custom_prompt.as_deref(),
            selected_tools: &self.selected_tools,
            hidden_tools: &self.hidden_tools,
            tools: &self.tools,
            prompt_guidelines: &self.prompt_guidelines,
            append: &append,
            package_dir,
            cwd: &self.cwd,
            context_files: &self.context_files,
            skills: &self.skills,
            extra_sections: &self.sections,
        })
    }
}

/// Sections joined the way a leading system message renders them.
pub(crate) fn render(sections: &Sections) -> String {
    sections
        .iter()
        .map(|(_, text)| text.as_str())
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn skill_json(s: &Skill) -> Value {
    json!({
        "name": s.name,
        "description": s.description,
        "filePath": s.file_path,
        "baseDir": s.base_dir,
        "sourceInfo": s.source_info,
        "disableModelInvocation": s.disable_model_invocation,
    })
}

fn skill_from_json(v: &Value, base: &PromptOptions) -> Option<Skill> {
    let name = v.get("name")?.as_str()?.to_string();
    let file_path = PathBuf::from(v.get("filePath")?.as_str()?);
    let known = base.skills.iter().find(|s| s.file_path == file_path);
    Some(Skill {
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        base_dir: v
            .get("baseDir")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .or_else(|| file_path.parent().map(PathBuf::from))
            .unwrap_or_default(),
        source_info: v
            .get("sourceInfo")
            .cloned()
            .and_then(|i| serde_json::from_value(i).ok())
            .or_else(|| known.map(|k| k.source_info.clone()))?,
        disable_model_invocation: v
            .get("disableModelInvocation")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        name,
        file_path,
    })
}
