//! The environment of a spawned stdio MCP server: never the host's whole environment (API keys,
//! cloud credentials). Like the official MCP SDKs, a server gets only [`DEFAULT_INHERITED`]
//! from the host, plus the host variables its config's `inheritEnv` names or globs match, plus
//! its config's `env` (which wins).

use crate::config::ServerConfig;
use std::ffi::OsString;
use wildmatch::WildMatch;

/// Host variables every server inherits (when the host has them).
pub const DEFAULT_INHERITED: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables a server starts with, from the host's `host` environment.
pub fn server_env(
    config: &ServerConfig,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let globs: Vec<WildMatch> = config
        .inherit_env
        .iter()
        .map(|p| WildMatch::new(p))
        .collect();
    let mut out: Vec<(OsString, OsString)> = host
        .into_iter()
        .filter(|(k, _)| {
            let Some(name) = k.to_str() else {
                return false;
            };
            !config.env.contains_key(name)
                && (DEFAULT_INHERITED.contains(&name) || globs.iter().any(|g| g.matches(name)))
        })
        .collect();
    out.extend(
        config
            .env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    out
}

/// Gives `cmd` exactly the server's environment.
pub fn apply(cmd: &mut tokio::process::Command, config: &ServerConfig) {
    cmd.env_clear()
        .envs(server_env(config, std::env::vars_os()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_globs_and_config_env() {
        let config: ServerConfig = serde_json::from_value(serde_json::json!({
            "command": "x", "env": {"PATH": "/only", "EXTRA": "1"}, "inheritEnv": ["AWS_*", "NODE_OPTIONS"]
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
        let mut env: Vec<(String, String)> = server_env(&config, host)
            .into_iter()
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        env.sort();
        let want = [
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("EXTRA", "1"),
            ("HOME", "/root"),
            ("NODE_OPTIONS", "--x"),
            ("PATH", "/only"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(env, want);
    }
}
