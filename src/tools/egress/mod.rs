//! The egress of a confined stdio server: a host-side proxy per server process (HTTP CONNECT
//! and SOCKS5 on a Unix socket bound into the server's sandbox) that resolves names itself,
//! lets through only the hosts of the entry's `network.allow` list, refuses loopback,
//! link-local, unspecified and the gateway's own ports whatever a name resolves to, and traces
//! and counts every connection; plus the in-sandbox bridge (`mcp-sandbox __egress-bridge`) that
//! relays the server's loopback proxy port to that socket.
//!
//! May import `config`, `store`, `context`, `error`, `trace`, `term`.

pub mod bridge;
pub mod classify;
pub mod events;
pub mod http_connect;
pub mod proxy;
pub mod resolve;
pub mod socks5;

pub use crate::config::network::{AllowEntry, AllowList, HostPattern, NetworkPolicy, Target};

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The proxy socket's file name in its directory.
pub const SOCKET_NAME: &str = "proxy.sock";
/// The loopback port the bridge listens on inside the server's network namespace (its own
/// namespace: the port is always free there). HTTP and SOCKS5 share it (the proxy tells
/// them apart by the first byte).
pub const BRIDGE_PORT: u16 = 3128;

/// What the confinement code needs to give a confined server its proxy.
#[derive(Debug, Clone)]
pub struct EgressPlan {
    /// Host directory holding the proxy's Unix socket: bind it (read-write) at `inner_dir`.
    pub host_dir: PathBuf,
    /// Where that directory appears inside the sandbox.
    pub inner_dir: PathBuf,
    /// Environment to set for the server (the proxy variables, upper- and lower-case).
    pub env: Vec<(String, String)>,
    /// argv to put before the server's own command inside the sandbox (the bridge).
    pub wrapper_argv: Vec<String>,
}

impl EgressPlan {
    /// Where the confinement code bind-mounts the host's own executable (read-only).
    pub const BRIDGE_EXE: &'static str = "/run/mcp-sandbox-bin/mcp-sandbox";
    /// Where `host_dir` appears inside the sandbox.
    pub const INNER_DIR: &'static str = "/run/mcp-sandbox-egress";

    fn new(host_dir: PathBuf) -> EgressPlan {
        let inner_dir = PathBuf::from(Self::INNER_DIR);
        let socket = inner_dir.join(SOCKET_NAME);
        let http = format!("http://127.0.0.1:{BRIDGE_PORT}");
        let mut env = Vec::new();
        for (name, value) in [
            ("HTTP_PROXY", &http),
            ("HTTPS_PROXY", &http),
            // The HTTP proxy too: httpx (the MCP Python SDK's client) refuses to build a
            // client when ALL_PROXY is socks5h:// and the optional socksio is not installed
            // (measured). SOCKS5 is served on the same port for clients configured for it.
            ("ALL_PROXY", &http),
        ] {
            env.push((name.to_string(), value.clone()));
            env.push((name.to_ascii_lowercase(), value.clone()));
        }
        env.push(("NO_PROXY".into(), String::new()));
        env.push(("no_proxy".into(), String::new()));
        // Node >= 24 (and 22.21+) honours the variables above for fetch and http(s) with it.
        env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        let wrapper_argv = vec![
            Self::BRIDGE_EXE.to_string(),
            bridge::SUBCOMMAND.to_string(),
            "--socket".to_string(),
            socket.display().to_string(),
            "--listen".to_string(),
            format!("127.0.0.1:{BRIDGE_PORT}"),
            "--".to_string(),
        ];
        EgressPlan {
            host_dir,
            inner_dir,
            env,
            wrapper_argv,
        }
    }
}

/// Who the server process serves (for the trace, the metrics and the web view).
#[derive(Debug, Clone, Copy)]
pub struct EgressScope<'a> {
    pub server: &'a str,
    pub tenant: Option<&'a str>,
    pub principal: Option<&'a str>,
}

/// Keeps the proxy for one server process running; dropping it stops the proxy and removes
/// the socket directory.
pub struct EgressGuard {
    dir: PathBuf,
    stop: CancellationToken,
    ctx: Arc<proxy::Context>,
}

impl std::fmt::Debug for EgressGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressGuard")
            .field("dir", &self.dir)
            .finish()
    }
}

impl EgressGuard {
    /// Also report each refused connection to the execution that has a call open to this
    /// server (a `warn` log line `[server] mcp-sandbox egress: connection to HOST:PORT refused
    /// (REASON)` in its logs, so in its audit record), through the server connection's
    /// passthrough routes. When callers of several owners have calls open, the line goes to
    /// none of them (`passthrough::Routes` drops it, counted). The first call wins.
    pub fn report_to(&self, routes: Arc<crate::tools::passthrough::Routes>) {
        let _ = self.ctx.report.set(routes);
    }

    /// The host path of the proxy's socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join(SOCKET_NAME)
    }
}

impl Drop for EgressGuard {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(target: "mcp_sandbox::egress", dir = %self.dir.display(), error = %e, "cannot remove the egress socket directory");
        }
    }
}

/// Why the proxy of a server process could not start.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("cannot create the egress socket directory {path}: {source}")]
    SocketDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on the egress socket {path}: {source}")]
    Listen {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no directory for the egress socket: every candidate ({tried}) failed or gives a socket path longer than 107 bytes")]
    NoSocketDir { tried: String },
}

/// Starts a proxy for one server process (called only for [`NetworkPolicy::Allow`]). Needs a
/// Tokio runtime (the proxy runs as a task of it until the guard is dropped).
pub async fn start(
    scope: EgressScope<'_>,
    allow: &AllowList,
    state_dir: &Path,
) -> Result<(EgressPlan, EgressGuard), EgressError> {
    let dir = socket_dir(state_dir)?;
    let socket = dir.join(SOCKET_NAME);
    let listener = match tokio::net::UnixListener::bind(&socket) {
        Ok(l) => l,
        Err(source) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(EgressError::Listen {
                path: socket,
                source,
            });
        }
    };
    let stop = CancellationToken::new();
    let ctx = Arc::new(proxy::Context {
        server: scope.server.to_string(),
        tenant: scope.tenant.map(str::to_string),
        principal: scope.principal.map(str::to_string),
        allow: allow.clone(),
        report: std::sync::OnceLock::new(),
    });
    tokio::spawn(proxy::serve(listener, ctx.clone(), stop.clone()));
    Ok((EgressPlan::new(dir.clone()), EgressGuard { dir, stop, ctx }))
}

/// A fresh 0700 directory for one proxy's socket: under `$XDG_RUNTIME_DIR`, else the temp
/// directory, else `state_dir/egress` (the first whose socket path fits in `sun_path`).
fn socket_dir(state_dir: &Path) -> Result<PathBuf, EgressError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(rt) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        candidates.push(PathBuf::from(rt));
    }
    candidates.push(std::env::temp_dir());
    candidates.push(state_dir.join("egress"));
    let mut tried = Vec::new();
    for base in candidates {
        let mut id = [0u8; 8];
        if getrandom::fill(&mut id).is_err() {
            tried.push(format!("{}: no randomness", base.display()));
            continue;
        }
        let name: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let dir = base.join(format!("mcp-sandbox-egress-{name}"));
        if dir.join(SOCKET_NAME).as_os_str().len() > 107 {
            tried.push(format!("{}: path too long", base.display()));
            continue;
        }
        let _ = std::fs::create_dir_all(&base);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => tried.push(format!("{}: {e}", base.display())),
        }
    }
    Err(EgressError::NoSocketDir {
        tried: tried.join("; "),
    })
}

/// `serve` calls this at start-up with its own listening ports, so the proxy refuses them (on
/// this machine's addresses; loopback is refused whatever the port).
pub fn refuse_gateway_ports(ports: &[u16]) {
    classify::add_gateway_ports(ports);
}
