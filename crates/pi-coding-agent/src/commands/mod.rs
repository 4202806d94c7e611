//! Subcommands that run instead of a session (`pi auth ...`, `pi update --models`).

pub mod auth;
pub mod auth_login;
pub mod update;
