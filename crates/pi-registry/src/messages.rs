//! Pi's auth guidance texts (`auth-guidance.js`). They name the docs directory of the installed
//! package, so it is a parameter; without Pi's docs next to us (`None`), the help names what
//! this program has instead (a deviation: Pi's text would point at files that do not exist).

use std::path::Path;

/// The three-line login help, or ours without Pi's docs.
pub fn login_help(docs_dir: Option<&Path>) -> String {
    match docs_dir {
        Some(docs) => format!(
            "Use /login to log into a provider via OAuth or API key. See:\n  {}\n  {}",
            docs.join("providers.md").display(),
            docs.join("models.md").display()
        ),
        None => OWN_LOGIN_HELP.to_string(),
    }
}

/// What to do without a login command or Pi's docs at hand.
const OWN_LOGIN_HELP: &str = "Set a provider's API key environment variable (e.g. ANTHROPIC_API_KEY), add a key to auth.json, or configure a provider in models.json (both in ~/.pi/agent, or $PI_CODING_AGENT_DIR). See \"Providers and models\" in the README of pi in Rust.";

/// `No models available. <help>` (startup warning, `--list-models`).
pub fn no_models_available(docs_dir: Option<&Path>) -> String {
    format!("No models available. {}", login_help(docs_dir))
}

/// `No model selected.` with help.
pub fn no_model_selected(docs_dir: Option<&Path>) -> String {
    format!(
        "No model selected.\n\n{}\n\nThen use /model to select a model.",
        login_help(docs_dir)
    )
}

/// `No API key found for <provider>.` with help; the placeholder provider `unknown` reads as
/// "the selected model".
pub fn no_api_key_found(provider: &str, docs_dir: Option<&Path>) -> String {
    let shown = if provider == "unknown" {
        "the selected model"
    } else {
        provider
    };
    format!("No API key found for {shown}.\n\n{}", login_help(docs_dir))
}

/// The error of a prompt whose provider's stored OAuth login no longer works.
pub fn oauth_failed(provider: &str) -> String {
    format!(
        "Authentication failed for \"{provider}\". Credentials may have expired or network is unavailable. Run '/login {provider}' to re-authenticate."
    )
}

/// `set_model` for a model that is unknown or not usable.
pub fn model_not_found(provider: &str, model_id: &str) -> String {
    format!("Model not found: {provider}/{model_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_provider_reads_as_selected_model() {
        assert_eq!(
            no_api_key_found("unknown", Some(Path::new("/pkg/docs"))),
            "No API key found for the selected model.\n\nUse /login to log into a provider via OAuth or API key. See:\n  /pkg/docs/providers.md\n  /pkg/docs/models.md"
        );
    }
}
