//! Checks of an OpenAPI server entry (`"openapi": "spec.yaml"`): its options, its `baseUrl` and
//! its credentials, when the config is loaded. The spec itself is read when the server starts
//! (`tools::openapi`).
//!
//! Config errors about an OpenAPI entry start with `CONFIG_OPENAPI`; no message ever holds a
//! header value, a key or a secret (only the `${VAR}` names).

use super::server_config::ServerConfig;
use super::var_expand::{expand, host_var};

/// Code of a config or spec problem of an OpenAPI server.
pub const CONFIG_OPENAPI: &str = "CONFIG_OPENAPI";

/// Default per-call timeout of an OpenAPI request.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default cap on one answer's body.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 * 1024 * 1024;
/// Default cap on requests in flight to one API.
pub const DEFAULT_MAX_CONCURRENCY: usize = 8;

pub use super::openapi_values::{
    ApiAuth, OAuth2ClientCredentials, SpecBudget, DEFAULT_SPEC_DEPTH, DEFAULT_SPEC_PARSED_BYTES,
    DEFAULT_SPEC_RESOLVED_BYTES, MAX_SPEC_DEPTH,
};

/// Whether `url` may be used for an OpenAPI server's spec, API or token endpoint: https, or
/// plain http to the loopback host only (a local test service, a sidecar).
pub fn allowed_url(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => false,
    }
}

/// Checks an entry with `openapi` (see the module docs).
pub fn check(name: &str, server: &ServerConfig) -> Result<(), String> {
    let e = |m: String| format!("{CONFIG_OPENAPI}: server '{name}': {m}");
    let Some(spec) = &server.openapi else {
        let set = [
            ("baseUrl", server.base_url.is_some()),
            ("operations", !server.operations.is_empty()),
            ("tags", !server.tags.is_empty()),
            ("timeoutMs", server.timeout_ms.is_some()),
            ("maxResponseBytes", server.max_response_bytes.is_some()),
            ("maxConcurrency", server.max_concurrency.is_some()),
            ("auth", server.auth.is_some()),
            ("specBudget", server.spec_budget.is_some()),
        ];
        if let Some((key, _)) = set.iter().find(|(_, s)| *s) {
            return Err(e(format!(
                "{key} is for OpenAPI servers (an entry with \"openapi\")"
            )));
        }
        return Ok(());
    };
    if !server.command.trim().is_empty() || server.url.is_some() {
        return Err(e(
            "\"openapi\" cannot be combined with command or url: an entry is one kind of server"
                .into(),
        ));
    }
    let not_for = [
        ("args", !server.args.is_empty()),
        ("env", !server.env.is_empty()),
        ("cwd", server.cwd.is_some()),
        ("inheritEnv", !server.inherit_env.is_empty()),
        ("oauth", server.oauth.is_some()),
        ("type", server.transport.is_some()),
        ("idleTimeoutMs", server.idle_timeout_ms.is_some()),
        ("maxInstances", server.max_instances.is_some()),
    ];
    if let Some((key, _)) = not_for.iter().find(|(_, s)| *s) {
        return Err(e(format!(
            "{key} is not an option of an OpenAPI server (see docs/openapi.md)"
        )));
    }
    if server
        .scope
        .is_some_and(|s| s != super::server_config::ServerScope::Shared)
    {
        return Err(e(
            "an OpenAPI server has no process to scope: remove \"scope\" (its requests carry the entry's credentials for every caller)".into(),
        ));
    }
    if spec.trim().is_empty() {
        return Err(e(
            "\"openapi\" is empty: give the spec's path or https URL".into()
        ));
    }
    if spec.contains("://") {
        let url =
            reqwest::Url::parse(spec).map_err(|x| e(format!("openapi URL is not valid: {x}")))?;
        if !allowed_url(&url) {
            return Err(e(
                "the spec URL must be https:// (plain http only to 127.0.0.1 or localhost)".into(),
            ));
        }
    }
    let Some(base) = &server.base_url else {
        return Err(e(
            "baseUrl is missing: give the URL every request of this API goes under (e.g. \"https://api.example.com/v1\")".into(),
        ));
    };
    let url =
        reqwest::Url::parse(base).map_err(|x| e(format!("baseUrl is not a valid URL: {x}")))?;
    if !allowed_url(&url) {
        return Err(e(
            "baseUrl must be https:// (plain http only to 127.0.0.1 or localhost)".into(),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(e(
            "baseUrl must not hold credentials; put them in headers or auth with ${VAR}".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(e("baseUrl must not have a query or a fragment".into()));
    }
    for (key, zero) in [
        ("timeoutMs", server.timeout_ms == Some(0)),
        ("maxResponseBytes", server.max_response_bytes == Some(0)),
        ("maxConcurrency", server.max_concurrency == Some(0)),
        (
            "specBudget.parsedBytes",
            server.spec_budget.is_some_and(|b| b.parsed_bytes == 0),
        ),
        (
            "specBudget.resolvedBytes",
            server.spec_budget.is_some_and(|b| b.resolved_bytes == 0),
        ),
        (
            "specBudget.depth",
            server.spec_budget.is_some_and(|b| b.depth == 0),
        ),
    ] {
        if zero {
            return Err(e(format!("{key} must be at least 1")));
        }
    }
    if let Some(b) = server.spec_budget.filter(|b| b.depth > MAX_SPEC_DEPTH) {
        return Err(e(format!(
            "specBudget.depth must be at most {MAX_SPEC_DEPTH} (the host's stack bounds it), got {}",
            b.depth
        )));
    }
    if let Some(auth) = &server.auth {
        let values = [
            ("auth.apiKey", auth.api_key.as_deref()),
            ("auth.bearer", auth.bearer.as_deref()),
            (
                "auth.oauth2.clientId",
                auth.oauth2.as_ref().map(|o| o.client_id.as_str()),
            ),
            (
                "auth.oauth2.clientSecret",
                auth.oauth2.as_ref().map(|o| o.client_secret.as_str()),
            ),
        ];
        for (place, value) in values {
            if let Some(v) = value {
                expand(v, &format!("server '{name}': {place}"), host_var)
                    .map_err(|x| format!("{CONFIG_OPENAPI}: {x}"))?;
            }
        }
        if let Some(token_url) = auth.oauth2.as_ref().and_then(|o| o.token_url.as_ref()) {
            let u = reqwest::Url::parse(token_url)
                .map_err(|x| e(format!("auth.oauth2.tokenUrl is not a valid URL: {x}")))?;
            if !allowed_url(&u) {
                return Err(e("auth.oauth2.tokenUrl must be https:// (plain http only to 127.0.0.1 or localhost)".into()));
            }
        }
    }
    Ok(())
}

/// An OpenAPI server's bounds: (timeout, response bytes, concurrency).
pub fn bounds(server: &ServerConfig) -> (std::time::Duration, u64, usize) {
    (
        std::time::Duration::from_millis(server.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
        server
            .max_response_bytes
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES),
        server.max_concurrency.unwrap_or(DEFAULT_MAX_CONCURRENCY),
    )
}
