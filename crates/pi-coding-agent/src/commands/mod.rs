//! Subcommands that run instead of a session (`pi auth ...`).

pub mod auth;
pub mod auth_login;
