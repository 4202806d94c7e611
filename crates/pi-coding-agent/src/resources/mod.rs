//! Resources of a session, as Pi 1.6.0 finds and uses them: context files (`AGENTS.md`),
//! skills, prompt templates, the custom and appended system prompt, project trust, the system
//! prompt's sections, the `get_commands` list and prompt expansion.
//!
//! How the runtime uses this:
//! 1. [`SessionResources::load`] decides project trust ([`trust::resolve_project_trust`]),
//!    loads the cwd's settings accordingly and every resource ([`load_resources`]), and returns
//!    the startup warnings to print.
//! 2. [`SessionResources::prompt_sections`] (or [`system_prompt::build_sections`]) gives the
//!    prompt sections; [`system_prompt::diff_sections`] against
//!    [`system_prompt::replay_sections`] of the transcript gives the patch, and
//!    [`system_prompt::system_message`] the message to emit (when `Some`).
//! 3. [`Resources::expand_input`] expands `/skill:` and template commands in `prompt`, `steer`
//!    and `follow_up` texts.
//! 4. [`SessionResources::commands`] answers `get_commands`.
//!
//! Files: `trust.rs`, `discovery.rs` (which files exist), `patterns.rs` (ignore files, settings
//! patterns), `skills.rs`, `prompt_templates.rs`, `frontmatter.rs` + `yaml.rs`,
//! `context_files.rs`, `source.rs` (source info, diagnostics), `loader.rs`, `session.rs`,
//! `system_prompt.rs` + `prompt_text.rs` (our wording), `expand.rs`, `commands.rs`.

pub mod commands;
pub mod context_files;
pub mod discovery;
pub mod expand;
pub mod extensions;
pub mod frontmatter;
pub mod loader;
pub mod patterns;
pub mod prompt_options;
pub mod prompt_templates;
pub mod prompt_text;
pub mod session;
pub mod skills;
pub mod source;
pub mod system_prompt;
pub mod trust;
pub mod yaml;

pub use loader::{ResourceOptions, Resources, load_resources};
pub use session::{Locations, SessionResources};

impl Resources {
    /// `prompt`/`steer`/`follow_up` text after `/skill:` and template expansion.
    pub fn expand_input(&self, text: &str) -> expand::Expansion {
        expand::expand_input(text, &self.skills, &self.prompts)
    }

    /// The `get_commands` list, after the commands of loaded extensions.
    pub fn commands(
        &self,
        extension_commands: Vec<pi_protocol::results::RpcSlashCommand>,
    ) -> Vec<pi_protocol::results::RpcSlashCommand> {
        commands::slash_commands(extension_commands, &self.prompts, &self.skills)
    }
}
