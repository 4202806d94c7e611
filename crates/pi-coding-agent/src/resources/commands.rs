//! The `get_commands` list: extension commands, then prompt templates, then skills
//! (`skill:<name>`), each with its `sourceInfo`. Pi's built-in extensions contribute `/llama`
//! (extension `builtin:llama.cpp`) and `/mcp` (`builtin:mcp`) unless switched off by `-ne`,
//! `--no-mcp` or an `extensions` setting entry such as `-builtin:mcp` (a project entry overrides
//! the user's). `-e builtin:<name>` loads one explicitly, before the others.

use super::patterns::Overrides;
use super::prompt_templates::PromptTemplate;
use super::skills::Skill;
use crate::settings::paths::CONFIG_DIR_NAME;
use pi_protocol::results::{
    RpcSlashCommand, SlashCommandSource, SourceInfo, SourceOrigin, SourceScope,
};
use std::path::Path;

/// Pi's built-in extensions, in registration order, with the command each registers.
const BUILTIN_EXTENSIONS: [(&str, Option<(&str, &str)>); 4] = [
    (
        "llama.cpp",
        Some(("llama", "Manage llama.cpp router models")),
    ),
    ("codemode", None),
    ("tool-search", None),
    (
        "mcp",
        Some((
            "mcp",
            "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure",
        )),
    ),
];

/// The names of Pi's built-in extensions, in registration order.
pub fn builtin_extension_names() -> impl Iterator<Item = &'static str> {
    BUILTIN_EXTENSIONS.iter().map(|(name, _)| *name)
}

/// What decides which built-in extensions load.
#[derive(Debug, Clone, Default)]
pub struct BuiltinOptions<'a> {
    /// `-ne`.
    pub no_extensions: bool,
    /// `--no-mcp`.
    pub no_mcp: bool,
    /// `-e` values (only `builtin:<name>` ones matter here).
    pub cli_extensions: &'a [String],
    /// The `extensions` lists of the agent-dir and project settings layers.
    pub user_extensions: &'a [String],
    pub project_extensions: &'a [String],
}

/// The built-in extensions that load, in load order (`builtin:<name>` paths), and errors for
/// unknown `-e builtin:` names (Pi: `Unknown built-in extension: builtin:<name>`).
pub fn builtin_extensions(
    opts: &BuiltinOptions<'_>,
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut errors = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for e in opts
        .cli_extensions
        .iter()
        .filter(|e| e.starts_with("builtin:"))
    {
        if BUILTIN_EXTENSIONS
            .iter()
            .any(|(n, _)| format!("builtin:{n}") == *e)
        {
            if !paths.contains(e) {
                paths.push(e.clone());
            }
        } else {
            errors.push((e.clone(), format!("Unknown built-in extension: {e}")));
        }
    }
    if !opts.no_extensions {
        let project = Overrides::new(opts.project_extensions);
        let user = Overrides::new(opts.user_extensions);
        let project_base = cwd.join(CONFIG_DIR_NAME);
        for (name, _) in BUILTIN_EXTENSIONS {
            let path = format!("builtin:{name}");
            let enabled = project
                .decision(&path, &project_base, home)
                .unwrap_or_else(|| user.enabled(&path, agent_dir, home));
            if enabled && !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    if opts.no_mcp {
        paths.retain(|p| p != "builtin:mcp");
    }
    (paths, errors)
}

/// The commands the built-in extensions in `paths` register, in that order.
pub fn builtin_commands(paths: &[String]) -> Vec<RpcSlashCommand> {
    paths
        .iter()
        .filter_map(|path| {
            let (_, command) = BUILTIN_EXTENSIONS
                .iter()
                .find(|(n, _)| format!("builtin:{n}") == *path)?;
            let (name, description) = (*command)?;
            Some(RpcSlashCommand {
                name: name.to_string(),
                description: Some(description.to_string()),
                source: SlashCommandSource::Extension,
                source_info: SourceInfo {
                    path: path.clone(),
                    source: "builtin".into(),
                    scope: SourceScope::Temporary,
                    origin: SourceOrigin::TopLevel,
                    base_dir: None,
                    changelog_path: None,
                },
            })
        })
        .collect()
}

/// The full `get_commands` list.
pub fn slash_commands(
    extension_commands: Vec<RpcSlashCommand>,
    templates: &[PromptTemplate],
    skills: &[Skill],
) -> Vec<RpcSlashCommand> {
    let mut out = extension_commands;
    out.extend(templates.iter().map(|t| RpcSlashCommand {
        name: t.name.clone(),
        description: Some(t.description.clone()),
        source: SlashCommandSource::Prompt,
        source_info: t.source_info.clone(),
    }));
    out.extend(skills.iter().map(|s| RpcSlashCommand {
        name: format!("skill:{}", s.name),
        description: Some(s.description.clone()),
        source: SlashCommandSource::Skill,
        source_info: s.source_info.clone(),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtins(opts: BuiltinOptions<'_>) -> Vec<String> {
        builtin_extensions(&opts, Path::new("/w"), Path::new("/a"), Path::new("/h")).0
    }

    #[test]
    fn which_builtins_load() {
        let all = [
            "builtin:llama.cpp",
            "builtin:codemode",
            "builtin:tool-search",
            "builtin:mcp",
        ];
        assert_eq!(builtins(BuiltinOptions::default()), all);
        let no_mcp = BuiltinOptions {
            no_mcp: true,
            ..Default::default()
        };
        assert_eq!(builtins(no_mcp), all[..3]);
        let ne = BuiltinOptions {
            no_extensions: true,
            ..Default::default()
        };
        assert!(builtins(ne).is_empty());
        let cli = ["builtin:mcp".to_string(), "x.ts".into()];
        let ne_e = BuiltinOptions {
            no_extensions: true,
            cli_extensions: &cli,
            ..Default::default()
        };
        assert_eq!(builtins(ne_e), ["builtin:mcp"]);
        let user = ["-builtin:mcp".to_string()];
        let project = ["+builtin:mcp".to_string(), "!builtin:llama*".into()];
        let o = BuiltinOptions {
            user_extensions: &user,
            ..Default::default()
        };
        assert_eq!(builtins(o), all[..3]);
        let o = BuiltinOptions {
            user_extensions: &user,
            project_extensions: &project,
            ..Default::default()
        };
        assert_eq!(builtins(o), all[1..]);
        let bad = ["builtin:nope".to_string()];
        let o = BuiltinOptions {
            cli_extensions: &bad,
            ..Default::default()
        };
        let (_, errors) = builtin_extensions(&o, Path::new("/w"), Path::new("/a"), Path::new("/h"));
        assert_eq!(errors[0].1, "Unknown built-in extension: builtin:nope");
    }

    #[test]
    fn builtin_commands_as_pi_reports_them() {
        let json = pi_js::json::to_js_string(&builtin_commands(&[
            "builtin:llama.cpp".into(),
            "builtin:codemode".into(),
            "builtin:mcp".into(),
        ]))
        .unwrap();
        assert_eq!(
            json,
            r#"[{"name":"llama","description":"Manage llama.cpp router models","source":"extension","sourceInfo":{"path":"builtin:llama.cpp","source":"builtin","scope":"temporary","origin":"top-level"}},{"name":"mcp","description":"Manage MCP servers: sign in, reconnect, enable or disable, and change exposure","source":"extension","sourceInfo":{"path":"builtin:mcp","source":"builtin","scope":"temporary","origin":"top-level"}}]"#
        );
    }
}
