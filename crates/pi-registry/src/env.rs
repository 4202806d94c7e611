//! A snapshot of the environment the registry reads credentials from. Taking it as a value (not
//! reading `std::env` on the fly) keeps resolution deterministic and testable.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The current process environment, as extensions left it (variables that are not UTF-8
    /// are skipped).
    pub fn from_process() -> Env {
        Env {
            vars: pi_js::process_env::vars_os()
                .into_iter()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// `process.env[name]`, as is.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// pi-ai's auth context: a variable counts only when it is not blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.raw(name).filter(|v| !v.trim().is_empty())
    }

    /// `process.env[name] || undefined`: empty counts as unset.
    pub(crate) fn non_empty(&self, name: &str) -> Option<&str> {
        self.raw(name).filter(|v| !v.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}
