//! Where the state lives: the `--state` value and the config's `sandbox.state`, checked the same
//! way. Today only a file path (SQLite); a URL of a database server is refused by name until a
//! backend for it exists.

use std::path::PathBuf;

/// What this build can store state in.
pub const SUPPORTED_STATE: &str = "a file path (SQLite), e.g. --state ./state.db";

/// A state location: a file path. A value that looks like a URL (`scheme://…`) names a store
/// this build does not have, and is refused rather than taken as a directory named `scheme:`.
pub fn state_location(value: &str) -> Result<PathBuf, String> {
    if let Some((scheme, _)) = value.split_once("://") {
        let url_like = !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if url_like {
            return Err(format!(
                "'{scheme}://' state stores are not supported by this build; the state must be {SUPPORTED_STATE}"
            ));
        }
    }
    if value.is_empty() {
        return Err(format!("the state must be {SUPPORTED_STATE}"));
    }
    Ok(PathBuf::from(value))
}
