//! `pi mcp add|remove|list|login|logout`: shell commands that work without a session.
