//! `postgres://…` state locations: which values name a PostgreSQL store, and where its password
//! comes from. The password is never part of the URL (a command line is visible to every user of
//! the machine through `ps`, and a config file is often committed): it comes from the
//! `PGPASSWORD` environment variable, or from the file named by `PGPASSWORD_FILE` (its content,
//! without the trailing newline; for container secrets).

use super::super::StoreError;
use std::str::FromStr;

/// The stable code of a state URL that carries a password.
pub const PASSWORD_IN_URL: &str = "STATE_PASSWORD_IN_URL";

/// Whether `value` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres(value: &str) -> bool {
    let lower = value.get(..13).unwrap_or(value).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Checks a PostgreSQL state URL without connecting: it parses, and holds no password.
pub fn check(value: &str) -> Result<(), String> {
    let (value, _) = super::tls::split(value)?;
    let config = tokio_postgres::Config::from_str(&value)
        .map_err(|e| format!("the PostgreSQL state URL does not parse: {e}"))?;
    if config.get_password().is_some() {
        return Err(format!(
            "{PASSWORD_IN_URL}: the PostgreSQL state URL holds a password; remove it from the URL and set PGPASSWORD (or PGPASSWORD_FILE, a file holding it) in the environment instead"
        ));
    }
    Ok(())
}

/// The connection settings of `value`, with the password from the environment, and whether
/// they ask for TLS (`sslmode`, see [`super::tls`]).
pub fn config(value: &str) -> Result<(tokio_postgres::Config, super::tls::Mode), StoreError> {
    check(value).map_err(StoreError::Postgres)?;
    let (value, mode) = super::tls::split(value).map_err(StoreError::Postgres)?;
    let mut config = tokio_postgres::Config::from_str(&value)
        .map_err(|e| StoreError::Postgres(e.to_string()))?;
    config.ssl_mode(match mode {
        super::tls::Mode::Clear => tokio_postgres::config::SslMode::Disable,
        super::tls::Mode::Verified { .. } => tokio_postgres::config::SslMode::Require,
    });
    if let Some(password) = password()? {
        config.password(password);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(super::CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("mcp-sandbox");
    }
    Ok((config, mode))
}

fn password() -> Result<Option<String>, StoreError> {
    if let Some(p) = std::env::var_os("PGPASSWORD") {
        return Ok(Some(p.to_string_lossy().into_owned()));
    }
    let Some(file) = std::env::var_os("PGPASSWORD_FILE") else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&file).map_err(|e| {
        StoreError::Postgres(format!(
            "cannot read PGPASSWORD_FILE {}: {e}; point it at a readable file holding the password",
            std::path::Path::new(&file).display()
        ))
    })?;
    Ok(Some(text.trim_end_matches(['\r', '\n']).to_string()))
}

/// The URL as shown in messages and by `Store::path`: `value` itself, which [`check`] made sure
/// holds no password (its query may hold the socket directory, the port, `sslmode`…).
pub fn shown(value: &str) -> String {
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_passwords() {
        assert!(is_postgres("postgres://h/db"));
        assert!(is_postgres("PostgreSQL://h/db"));
        assert!(!is_postgres("./state.db"));
        assert!(check("postgres://user@localhost:5432/db").is_ok());
        assert!(check("postgres:///db?host=/tmp/x&port=5433").is_ok());
        for bad in [
            "postgres://user:secret@localhost/db",
            "postgres://user@localhost/db?password=secret",
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.starts_with(PASSWORD_IN_URL), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
