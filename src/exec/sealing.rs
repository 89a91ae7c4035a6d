//! The key session data is sealed with at rest — the placeholder maps (`exec::placeholders`)
//! and the values scripts keep with `store()` (`exec::state`): the operator's key
//! (`MCP_SANDBOX_KEY_FILE` / `MCP_SANDBOX_KEY`, the OAuth tokens' [`SealKey`]), or, without
//! one, a random key for this process (what it sealed does not open after a restart).

use crate::tools::catalog::oauth_store::{SealError, SealKey};
use std::sync::OnceLock;

/// The operator's key, when one is set (and readable).
pub fn operator_key() -> Option<&'static SealKey> {
    static KEY: OnceLock<Option<SealKey>> = OnceLock::new();
    KEY.get_or_init(|| match SealKey::from_env() {
        Ok(k) => Some(k),
        Err(SealError::NoKey) => None,
        Err(e) => {
            tracing::warn!("session data at rest: {e}; it is sealed as without a key");
            None
        }
    })
    .as_ref()
}

/// The key to seal and open with: the operator's, or one for this process.
pub fn key() -> &'static SealKey {
    static EPHEMERAL: OnceLock<SealKey> = OnceLock::new();
    operator_key().unwrap_or_else(|| {
        EPHEMERAL.get_or_init(|| {
            tracing::warn!(
                "sensitive values: no key is set ({}), so placeholder maps and the session values of executions with sandbox.sensitive are sealed with a key for this process only: they do not outlive it",
                crate::tools::catalog::oauth_store::KEY_HOWTO
            );
            SealKey::ephemeral()
        })
    })
}
