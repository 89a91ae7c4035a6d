//! The egress of a confined stdio server: a host-side proxy per server process (HTTP CONNECT
//! and SOCKS5 on a Unix socket bound into the server's sandbox) that resolves names itself,
//! lets through only the hosts of the entry's `network.allow` list, refuses loopback,
//! link-local, unspecified and the gateway's own ports whatever a name resolves to, and traces
//! and counts every connection; plus the in-sandbox bridge (`mcp-sandbox __egress-bridge`) that
//! relays the server's loopback proxy port to that socket.
//!
//! May import `config`, `store`, `context`, `error`, `trace`, `term`.

pub use crate::config::network::{AllowEntry, AllowList, HostPattern, NetworkPolicy, Target};

use std::path::{Path, PathBuf};

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
#[derive(Debug)]
pub struct EgressGuard {
    _dir: PathBuf,
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
    #[error("the egress proxy is not built yet")]
    NotBuilt,
}

/// Starts a proxy for one server process (called only for [`NetworkPolicy::Allow`]).
pub async fn start(
    scope: EgressScope<'_>,
    allow: &AllowList,
    state_dir: &Path,
) -> Result<(EgressPlan, EgressGuard), EgressError> {
    let _ = (scope, allow, state_dir);
    Err(EgressError::NotBuilt)
}

/// `serve` calls this at start-up with its own listening ports, so the proxy refuses them.
pub fn refuse_gateway_ports(ports: &[u16]) {
    let _ = ports;
}
