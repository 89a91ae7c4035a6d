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
