//! Checks of a server entry's transport keys, and `${VAR}` expansion of `headers` and `env`.
//!
//! - A server has `command` (stdio) or `url` (streamable HTTP), never both.
//! - `"type"` may be `"stdio"` with `command`, `"http"` or `"streamable-http"` with `url`.
//!   `"sse"` (the older HTTP+SSE transport) is refused: rmcp 3.9, the MCP client of this host,
//!   ships no client for it.
//! - `${NAME}` in a header value or an `env` value is replaced by the host's variable `NAME`
//!   when the server is started; a variable that is not set is a config error naming it (never
//!   its value). `${NAME:-default}` (Claude Code's form) gives `default` when it is not set.
//!   Only `${` followed by a name (and `:-…`) and `}` is special; any other `$` is kept. In
//!   `command`, `args`, `cwd` and `url` they are expanded when the config is read, with VS
//!   Code's forms (`${env:NAME}`, `${workspaceFolder}`): see `vscode`.

use super::server_config::{self, ServerConfig, ServerScope};

/// Header names the MCP client sets itself; a config may not set them.
const RESERVED_HEADERS: [&str; 6] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "last-event-id",
];

pub use super::var_expand::{expand, host_var, references, MissingVar};

/// The checks of one server entry that `Config::parse` runs (see the module docs).
pub fn check(name: &str, server: &ServerConfig) -> Result<(), String> {
    super::openapi_entry::check(name, server)?;
    if server.is_openapi() {
        return check_headers(name, server);
    }
    let has_command = !server.command.trim().is_empty();
    match (&server.url, has_command) {
        (Some(_), true) => {
            return Err(format!(
                "server '{name}': command and url are mutually exclusive: use command (+ args) for a stdio server or url for a remote one"
            ))
        }
        (None, false) => {
            return Err(format!(
                "server '{name}': command is empty: give command (+ args) for a stdio server or url for a remote one"
            ))
        }
        _ => {}
    }
    check_confinement(name, server)?;
    if server.max_instances == Some(0) {
        return Err(format!("server '{name}': maxInstances must be at least 1"));
    }
    for (key, zero) in [
        ("maxTools", server.max_tools == Some(0)),
        ("maxToolListBytes", server.max_tool_list_bytes == Some(0)),
        ("maxToolListPages", server.max_tool_list_pages == Some(0)),
    ] {
        if zero {
            return Err(format!("server '{name}': {key} must be at least 1"));
        }
    }
    if server.idle_timeout_ms == Some(0) {
        return Err(format!("server '{name}': idleTimeoutMs must be at least 1"));
    }
    let kind = server.transport.as_deref();
    if kind == Some("sse") {
        return Err(format!(
            "server '{name}': transport 'sse' (the older HTTP+SSE transport) is not supported: the MCP client of this host (rmcp 3.9) has no SSE client. Use the server's streamable HTTP endpoint with \"url\" (and \"type\": \"http\" or no type)"
        ));
    }
    match (kind, server.is_remote()) {
        (None, _) | (Some("stdio"), false) | (Some("http" | "streamable-http"), true) => {}
        (Some(t), remote) => {
            return Err(format!(
                "server '{name}': transport '{t}' is not supported {}; use \"stdio\" with command, or \"http\" with url",
                if remote { "with url" } else { "with command" }
            ))
        }
    }
    if let Some(url) = &server.url {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| format!("server '{name}': url is not a valid URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "server '{name}': url must start with https:// (or http://), not {}://",
                parsed.scheme()
            ));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(format!(
                "server '{name}': url must not hold credentials; put them in headers with ${{VAR}}"
            ));
        }
        let stdio_only = [
            ("args", !server.args.is_empty()),
            ("env", !server.env.is_empty()),
            ("cwd", server.cwd.is_some()),
            ("inheritEnv", !server.inherit_env.is_empty()),
        ];
        if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "server '{name}': {key} is for stdio servers (command); a url server has headers instead"
            ));
        }
    } else {
        let remote_only = [
            ("headers", !server.headers.is_empty()),
            ("caFile", server.ca_file.is_some()),
            ("oauth", server.oauth.is_some()),
        ];
        if let Some((key, _)) = remote_only.iter().find(|(_, set)| *set) {
            return Err(format!(
                "server '{name}': {key} is for remote servers (url), not stdio ones"
            ));
        }
    }
    check_headers(name, server)?;
    check_env(name, server)
}

/// The entry's `headers`: names that may be set, values whose `${VAR}`s are set.
fn check_headers(name: &str, server: &ServerConfig) -> Result<(), String> {
    for (header, value) in &server.headers {
        let lower = header.to_ascii_lowercase();
        if server.oauth.is_some() && lower == "authorization" {
            return Err(format!(
                "server '{name}': an oauth server gets its Authorization header from `mcp-sandbox auth login {name}`; remove it from headers"
            ));
        }
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(format!(
                "server '{name}': header {header:?} is set by the MCP client itself and cannot be configured"
            ));
        }
        if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
            return Err(format!(
                "server '{name}': {header:?} is not a valid HTTP header name"
            ));
        }
        // The value is checked after expansion, at start; here only its variables.
        expand(
            value,
            &format!("server '{name}': headers.{header}"),
            host_var,
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `${MCP_SANDBOX_TENANT}` / `${MCP_SANDBOX_PRINCIPAL}` in `value` (at `place` of the entry)
/// only where the scope has them.
fn check_scope_vars(
    name: &str,
    scope: ServerScope,
    place: &str,
    value: &str,
) -> Result<(), String> {
    for scoped in references(value)
        .into_iter()
        .filter(|v| SCOPE_VARS.contains(v))
    {
        let defined = match scope {
            ServerScope::Shared => false,
            ServerScope::Tenant => scoped == TENANT_VAR,
            ServerScope::Principal => true,
        };
        if !defined {
            return Err(format!(
                "server '{name}': {place} uses ${{{scoped}}}, which only a server with \"scope\": \"{}\" has; set that scope or remove it",
                if scoped == TENANT_VAR { "tenant\" or \"principal" } else { "principal" }
            ));
        }
    }
    Ok(())
}

/// The confinement keys: limits above zero, scope variables in `files` only where the scope
/// has them.
fn check_confinement(name: &str, server: &ServerConfig) -> Result<(), String> {
    server.limits.check(name)?;
    let scope = server.scope();
    let files = &server.files;
    for (kind, paths) in [("read", &files.read), ("write", &files.write)] {
        for p in paths {
            check_scope_vars(name, scope, &format!("files.{kind}"), p)?;
            if p.trim().is_empty() {
                return Err(format!("server '{name}': files.{kind} has an empty path"));
            }
        }
    }
    Ok(())
}

/// The entry's `env`: scope variables only where the scope has them, other variables set.
fn check_env(name: &str, server: &ServerConfig) -> Result<(), String> {
    let scope = server.scope();
    for (var, value) in &server.env {
        check_scope_vars(name, scope, &format!("env.{var}"), value)?;
        let lookup = |v: &str| {
            if SCOPE_VARS.contains(&v) {
                Some(String::new())
            } else {
                host_var(v)
            }
        };
        expand(value, &format!("server '{name}': env.{var}"), lookup).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// In a scoped server's `env` values, the tenant its process serves (a tenant name: letters,
/// digits, `-`, `_`); also set in the process's environment.
pub const TENANT_VAR: &str = "MCP_SANDBOX_TENANT";
/// In a principal-scoped server's `env` values, the principal its process serves, made safe
/// for a file name (see [`principal_slug`]); also set in the process's environment.
pub const PRINCIPAL_VAR: &str = "MCP_SANDBOX_PRINCIPAL";
const SCOPE_VARS: [&str; 2] = [TENANT_VAR, PRINCIPAL_VAR];

/// A principal name as a file-name-safe word: its letters, digits, `-` and `_` (others become
/// `_`, at most 40 of them), then `-` and 16 hex digits of its SHA-256, so two principals never
/// share one (`jwt:a/b` and `jwt:a_b` differ) and no `/` or `..` reaches a path.
pub fn principal_slug(principal: &str) -> String {
    use sha2::Digest;
    let readable: String = principal
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = sha2::Sha256::digest(principal.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{readable}-{hex}")
}

/// The entry one scoped process of `server` starts with: `${MCP_SANDBOX_TENANT}` and
/// `${MCP_SANDBOX_PRINCIPAL}` in its `env` values replaced by the caller's, and both set as
/// variables of the process (a principal only under `"scope": "principal"`).
pub fn for_scope(server: &ServerConfig, tenant: &str, principal: Option<&str>) -> ServerConfig {
    let mut out = server.clone();
    let slug = principal.map(principal_slug);
    for value in out.env.values_mut() {
        *value = value.replace(&format!("${{{TENANT_VAR}}}"), tenant);
        if let Some(slug) = &slug {
            *value = value.replace(&format!("${{{PRINCIPAL_VAR}}}"), slug);
        }
    }
    for path in out.files.read.iter_mut().chain(out.files.write.iter_mut()) {
        *path = path.replace(&format!("${{{TENANT_VAR}}}"), tenant);
        if let Some(slug) = &slug {
            *path = path.replace(&format!("${{{PRINCIPAL_VAR}}}"), slug);
        }
    }
    out.scope_key = Some(match &slug {
        Some(slug) => format!("{tenant}/{slug}"),
        None => tenant.to_string(),
    });
    out.env.insert(TENANT_VAR.to_string(), tenant.to_string());
    if let Some(slug) = slug {
        out.env.insert(PRINCIPAL_VAR.to_string(), slug);
    }
    out
}

impl ServerConfig {
    /// Whether this is a remote (`url`) server.
    pub fn is_remote(&self) -> bool {
        self.url.is_some()
    }

    /// Whether this stdio server starts confined (`confine`, default `true`).
    pub fn is_confined(&self) -> bool {
        !self.is_remote() && !self.is_openapi() && self.confine.unwrap_or(true)
    }

    /// Whether this is an OpenAPI server (`openapi`: its operations are its tools).
    pub fn is_openapi(&self) -> bool {
        self.openapi.is_some()
    }

    /// The transport, as traces and `tools` name it: `"stdio"` or `"http"`.
    pub fn transport_name(&self) -> &'static str {
        if self.is_openapi() {
            "openapi"
        } else if self.is_remote() {
            "http"
        } else {
            "stdio"
        }
    }

    /// Who shares one process of this server: the entry's `scope`, else `tenant` for a stdio
    /// server (one tenant never sees what another left in a stateful server) and `shared` for a
    /// remote one (its state lives behind one credential, whatever the connection).
    pub fn scope(&self) -> ServerScope {
        self.scope
            .unwrap_or(if self.is_remote() || self.is_openapi() {
                ServerScope::Shared
            } else {
                ServerScope::Tenant
            })
    }

    /// How long a scoped server's process may sit unused.
    pub fn idle_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.idle_timeout_ms
                .unwrap_or(server_config::DEFAULT_IDLE_TIMEOUT_MS),
        )
    }

    /// Most processes of a scoped server at once.
    pub fn max_instances(&self) -> usize {
        self.max_instances
            .unwrap_or(server_config::DEFAULT_MAX_INSTANCES)
    }

    /// The bounds on this server's tool list: (tools, bytes, pages per listing).
    pub fn tool_list_bounds(&self) -> (usize, u64, usize) {
        (
            self.max_tools.unwrap_or(server_config::DEFAULT_MAX_TOOLS),
            self.max_tool_list_bytes
                .unwrap_or(server_config::DEFAULT_MAX_TOOL_LIST_BYTES),
            self.max_tool_list_pages
                .unwrap_or(server_config::DEFAULT_MAX_TOOL_LIST_PAGES),
        )
    }

    /// The server's start-up timeout.
    pub fn startup_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.startup_timeout_ms
                .unwrap_or(server_config::DEFAULT_STARTUP_TIMEOUT_MS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_names_and_keeps_other_dollars() {
        let e = |t: &str| expand(t, "x", vars);
        assert_eq!(e("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(e("${TOKEN}${EMPTY}-${TOKEN}").unwrap(), "s3cret-s3cret");
        assert_eq!(
            e("$TOKEN ${} ${1A} ${A-B} $").unwrap(),
            "$TOKEN ${} ${1A} ${A-B} $"
        );
        assert_eq!(e("${TOKEN").unwrap(), "${TOKEN");
        let err = e("a ${NOPE} b").unwrap_err();
        assert_eq!(err.var, "NOPE");
        assert!(err.to_string().contains("x uses ${NOPE}, which is not set"));
        assert_eq!(references("${A} ${B_2} ${-} ${C:-x}"), ["A", "B_2", "C"]);
        // Claude Code's default form.
        assert_eq!(e("${NOPE:-/tmp/x}").unwrap(), "/tmp/x");
        assert_eq!(e("${TOKEN:-d}").unwrap(), "s3cret");
        assert_eq!(e("${NOPE:-}").unwrap(), "");
    }
}
