//! The environment of a spawned stdio MCP server: never the host's whole environment (API keys,
//! cloud credentials). Like the official MCP SDKs, a server gets only [`DEFAULT_INHERITED`]
//! from the host, plus the host variables its config's `inheritEnv` names or globs match, plus
//! its config's `env` (which wins).

use crate::config::ServerConfig;
use std::ffi::OsString;
use wildmatch::WildMatch;

/// Host variables every server inherits (when the host has them).
pub const DEFAULT_INHERITED: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables a server starts with, from the host's `host` environment. `${VAR}` in a
/// config `env` value is replaced by the host's `VAR` (see `config::server_entry`).
pub fn server_env(
    config: &ServerConfig,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<Vec<(OsString, OsString)>, crate::config::server_entry::MissingVar> {
    let host: Vec<(OsString, OsString)> = host.into_iter().collect();
    let lookup = |name: &str| {
        host.iter()
            .find(|(k, _)| k.to_str() == Some(name))
            .and_then(|(_, v)| v.to_str().map(str::to_string))
    };
    let mut configured = Vec::with_capacity(config.env.len());
    for (k, v) in &config.env {
        let v = crate::config::server_entry::expand(v, &format!("env.{k}"), lookup)?;
        configured.push((OsString::from(k), OsString::from(v)));
    }
    let globs: Vec<WildMatch> = config
        .inherit_env
        .iter()
        .map(|p| WildMatch::new(p))
        .collect();
    let mut out: Vec<(OsString, OsString)> = host
        .iter()
        .filter(|(k, _)| {
            let Some(name) = k.to_str() else {
                return false;
            };
            !config.env.contains_key(name)
                && (DEFAULT_INHERITED.contains(&name) || globs.iter().any(|g| g.matches(name)))
        })
        .cloned()
        .collect();
    out.extend(configured);
    Ok(out)
}

/// Gives `cmd` exactly the server's environment.
pub fn apply(
    cmd: &mut tokio::process::Command,
    config: &ServerConfig,
) -> Result<(), crate::config::server_entry::MissingVar> {
    cmd.env_clear()
        .envs(server_env(config, std::env::vars_os())?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_globs_and_config_env() {
        let config: ServerConfig = serde_json::from_value(serde_json::json!({
            "command": "x", "env": {"PATH": "/only", "EXTRA": "1", "KEY": "k=${NODE_OPTIONS}"}, "inheritEnv": ["AWS_*", "NODE_OPTIONS"]
        }))
        .unwrap();
        let host = [
            ("HOME", "/root"),
            ("PATH", "/usr/bin"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("NODE_OPTIONS", "--x"),
            ("OPENAI_API_KEY", "k"),
            ("NODE_OPTIONS_2", "no"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let mut env: Vec<(String, String)> = server_env(&config, host.clone())
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        env.sort();
        let want = [
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("EXTRA", "1"),
            ("HOME", "/root"),
            ("KEY", "k=--x"),
            ("NODE_OPTIONS", "--x"),
            ("PATH", "/only"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(env, want);
        let missing: ServerConfig = serde_json::from_value(serde_json::json!({
            "command": "x", "env": {"K": "${NOT_SET_HERE}"}
        }))
        .unwrap();
        let err = server_env(&missing, host).unwrap_err();
        assert_eq!(err.var, "NOT_SET_HERE");
    }
}
