//! Secrets every gateway on one store shares, kept in `kv` under `secret:NAME`: made once, by
//! whichever gateway asks first (a second maker's insert loses and it reads the first one's), so
//! a value one gateway signs another verifies (`front::mcp::input_required`'s `requestState`
//! key). Who can read the state store can read them: the store is already trusted with the
//! sessions, tokens' digests and pending approvals it holds.

use super::{Store, StoreError};
use rusqlite::params;

/// The `kv` key of secret `name`.
pub(super) fn key_of(name: &str) -> String {
    format!("secret:{name}")
}

/// A new secret: 32 random bytes as hex.
pub(super) fn fresh() -> Result<String, StoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Task(format!("no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Store {
    /// Shared secret `name` (hex), made now if no gateway made it before.
    pub fn shared_secret(&self, name: &str) -> Result<String, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.shared_secret(name);
        }
        let (key, value) = (key_of(name), fresh()?);
        self.write(|tx| {
            tx.execute(
                "INSERT INTO kv (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
                params![key, value],
            )?;
            Ok(
                tx.query_row("SELECT value FROM kv WHERE key = ?1", params![key], |r| {
                    r.get(0)
                })?,
            )
        })
    }
}
