//! Where the state lives: the `--state` value and the config's `sandbox.state`, checked the same
//! way: a file path (SQLite) or a `postgres://` URL (PostgreSQL, see `store::pg`); any other
//! URL is refused by name. A PostgreSQL URL never holds its password (see `store::pg::url`).

use std::path::PathBuf;

/// What this build can store state in.
pub const SUPPORTED_STATE: &str =
    "a file path (SQLite), e.g. --state ./state.db, or a PostgreSQL URL, e.g. --state postgres://sandbox@db.internal/sandbox";

/// A state location: a file path. A value that looks like a URL (`scheme://…`) names a store
/// this build does not have, and is refused rather than taken as a directory named `scheme:`.
pub fn state_location(value: &str) -> Result<PathBuf, String> {
    if super::pg::url::is_postgres(value) {
        super::pg::url::check(value)?;
        return Ok(PathBuf::from(value));
    }
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
