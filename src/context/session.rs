//! The client session an execution belongs to: what session state (`store`/`load`) and
//! yielded executions are owned by. `serve` over stdio: the connection; over HTTP: the
//! `Mcp-Session-Id`, which the HTTP front already binds to the principal that opened it;
//! `run --session NAME`: the name. The tenant and the principal are part of the scope, so a
//! session id guessed or reused by another principal or tenant names nothing of theirs.

/// Who owns a session's state and its executions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionScope {
    pub tenant: String,
    /// The principal's id (`Principal::id`: a token's hash, not its reusable name).
    pub principal: String,
    /// The MCP session id, the stdio connection's id, or `run --session`'s name.
    pub session: String,
}

impl SessionScope {
    pub fn new(
        tenant: impl Into<String>,
        principal: impl Into<String>,
        session: impl Into<String>,
    ) -> Self {
        SessionScope {
            tenant: tenant.into(),
            principal: principal.into(),
            session: session.into(),
        }
    }

    /// Where the data-flow labels of principal `name`'s requests without a protocol session
    /// (MCP 2026-07-28) stay, in `tenant`. Keyed by the principal's *name* (`token:ci`), not its
    /// id: an operator names it so, and a new token with a revoked one's name inherits its
    /// labels (fail closed). No protocol session id or handle digest has this session part.
    pub fn labels_of_principal(tenant: &str, name: &str) -> Self {
        SessionScope::new(tenant, name, "labels-of-principal")
    }

    /// One string naming the scope, unambiguous whatever its parts hold (each part is
    /// length-prefixed), for use as a key in a table.
    pub fn key(&self) -> String {
        let mut k = String::new();
        for part in [&self.tenant, &self.principal, &self.session] {
            k.push_str(&part.len().to_string());
            k.push(':');
            k.push_str(part);
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_be_forged_by_moving_a_separator() {
        let a = SessionScope::new("t", "p:1", "s");
        let b = SessionScope::new("t", "p", "1:s");
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key(), "1:t3:p:11:s");
    }
}

/// The `sandbox.session` section: how long a session's state and finished executions are kept,
/// and how much it may hold. Every field is optional in the config; [`SessionOptions::default`]
/// holds the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionOptions {
    /// A session unused for this long loses its state and the outcomes nobody read.
    pub ttl_ms: u64,
    /// Largest value `store()` takes, in bytes of JSON.
    pub max_value_bytes: u64,
    /// Keys one session may hold.
    pub max_keys: u64,
    /// Bytes of JSON (keys and values) one session may hold.
    pub max_bytes: u64,
    /// Yielded executions of one session still running at once (`yield_after_ms`).
    pub max_running: u64,
    /// Live sessions one principal may hold through session handles (MCP 2026-07-28); minting
    /// one more closes its least recently used one (the answer says so).
    pub max_handles: u64,
}

/// Default live handle sessions per principal.
pub const DEFAULT_MAX_HANDLES: u64 = 100;

/// One hour.
pub const DEFAULT_SESSION_TTL_MS: u64 = 3_600_000;

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            ttl_ms: DEFAULT_SESSION_TTL_MS,
            max_value_bytes: 1024 * 1024,
            max_keys: 1000,
            max_bytes: 16 * 1024 * 1024,
            max_running: 4,
            max_handles: DEFAULT_MAX_HANDLES,
        }
    }
}

impl SessionOptions {
    /// The session's idle time-to-live.
    pub fn ttl(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.ttl_ms)
    }

    /// The TTL for people and models: "60 minutes", "90 seconds".
    pub fn ttl_text(&self) -> String {
        if self.ttl_ms >= 60_000 && self.ttl_ms.is_multiple_of(60_000) {
            format!("{} minutes", self.ttl_ms / 60_000)
        } else if self.ttl_ms >= 1000 {
            format!("{} seconds", self.ttl_ms / 1000)
        } else {
            format!("{} ms", self.ttl_ms)
        }
    }

    /// Refuses zero values, which would make every session useless; names the field.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("ttl_ms", self.ttl_ms),
            ("max_value_bytes", self.max_value_bytes),
            ("max_keys", self.max_keys),
            ("max_bytes", self.max_bytes),
            ("max_running", self.max_running),
            ("max_handles", self.max_handles),
        ] {
            if v == 0 {
                return Err(format!("sandbox.session.{name} must be at least 1"));
            }
        }
        Ok(())
    }
}
