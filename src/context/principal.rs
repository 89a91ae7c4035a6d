//! Who an execution runs for: the principal (an API token, a JWT subject, or `local` for the
//! CLI and stdio), its tenant, the MCP client's name and the front it came through. The front
//! sets it; the audit log records it; per-principal policy and limits narrow the config's.

/// The tenant of the CLI, of stdio and of callers without one.
pub const DEFAULT_TENANT: &str = "default";

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// `token:NAME`, `jwt:SUBJECT`, `local` (CLI, stdio) or `anonymous` (HTTP without
    /// authentication, loopback only).
    pub name: String,
    /// What the principal is, where its name may be reused: `token#<SHA-256 of the token>`
    /// for an API token (a new token with a revoked one's name is another principal), else the
    /// name. Sessions belong to it.
    pub id: String,
    pub tenant: String,
    /// Names of policies in the config's `sandbox.policies` that apply (all of them narrow).
    pub policies: Vec<String>,
}

impl Principal {
    pub fn local() -> Self {
        Principal {
            name: "local".into(),
            id: "local".into(),
            tenant: DEFAULT_TENANT.into(),
            policies: Vec::new(),
        }
    }

    pub fn anonymous() -> Self {
        Principal {
            name: "anonymous".into(),
            id: "anonymous".into(),
            ..Principal::local()
        }
    }
}

/// What an execution records about its caller (a field of `ExecRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub principal: String,
    pub tenant: String,
    /// `clientInfo.name` of the MCP client, when it sent one.
    pub client: Option<String>,
    /// `run`, `stdio`, `http` or `library`.
    pub front: &'static str,
}

impl Default for Caller {
    fn default() -> Self {
        Caller {
            principal: "local".into(),
            tenant: DEFAULT_TENANT.into(),
            client: None,
            front: "library",
        }
    }
}

impl Caller {
    pub fn of(principal: &Principal, client: Option<String>, front: &'static str) -> Self {
        Caller {
            principal: principal.name.clone(),
            tenant: principal.tenant.clone(),
            client,
            front,
        }
    }
}

/// Tenant names: 1 to 64 letters, digits, `-` or `_` (they appear in capability ids, which
/// are dot-separated).
pub fn valid_tenant_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}
