//! OAuth credentials of remote MCP servers, one row per server: the store keeps the bytes
//! `tools::catalog::oauth_store` sealed under the operator's key (a nonce and a ciphertext) and
//! the URL they were made for; nothing in a row is readable without the key.
//!
//! SQLite: the `oauth_credentials` table the OAuth code used to create on first use (migration
//! 11 creates it only when it is missing, so a state file's stored logins still load).
//! PostgreSQL: the same table (its migration 3), shared by every gateway.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// One server's sealed credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedRow {
    /// The server's URL when the row was written (the sealing binds it too).
    pub url: String,
    pub nonce: Vec<u8>,
    pub sealed: Vec<u8>,
}

/// Seconds since the Unix epoch (the row's `updated_at`).
pub(super) fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Held while this process refreshes a server's tokens: other gateways on the same database
/// wait for it, then read the tokens it saved. Dropping it releases the lock.
pub struct RefreshLock(#[allow(dead_code)] Box<dyn Send>);

impl RefreshLock {
    pub(super) fn new(held: impl Send + 'static) -> Self {
        RefreshLock(Box::new(held))
    }
}

impl Store {
    /// Waits (at most 10 s, then an error) until no other gateway
    /// refreshes `server`'s tokens, and holds that until the lock is dropped. `None` on SQLite:
    /// its file belongs to one gateway, which coordinates its own refreshes.
    pub fn oauth_refresh_lock(&self, server: &str) -> Result<Option<RefreshLock>, StoreError> {
        match self.pg() {
            Some(pg) => pg.oauth_refresh_lock(server).map(Some),
            None => Ok(None),
        }
    }

    /// The sealed credentials of `server`, if any.
    pub fn oauth_credentials(&self, server: &str) -> Result<Option<SealedRow>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.oauth_credentials(server);
        }
        self.with(|conn| {
            Ok(conn
                .query_row(
                    "SELECT url, nonce, sealed FROM oauth_credentials WHERE server = ?1",
                    [server],
                    |r| {
                        Ok(SealedRow {
                            url: r.get(0)?,
                            nonce: r.get(1)?,
                            sealed: r.get(2)?,
                        })
                    },
                )
                .optional()?)
        })
    }

    /// Stores (or replaces) the sealed credentials of `server`.
    pub fn put_oauth_credentials(&self, server: &str, row: &SealedRow) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.put_oauth_credentials(server, row);
        }
        self.write(|tx| {
            tx.execute(
                "INSERT INTO oauth_credentials (server, url, nonce, sealed, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(server) DO UPDATE SET url = ?2, nonce = ?3, sealed = ?4, updated_at = ?5",
                params![server, row.url, row.nonce, row.sealed, now_secs()],
            )?;
            Ok(())
        })
    }

    /// Forgets the credentials of `server`; whether there were any.
    pub fn remove_oauth_credentials(&self, server: &str) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.remove_oauth_credentials(server);
        }
        self.write(|tx| {
            Ok(tx.execute("DELETE FROM oauth_credentials WHERE server = ?1", [server])? > 0)
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn row(url: &str, byte: u8) -> SealedRow {
        SealedRow {
            url: url.into(),
            nonce: vec![byte; 24],
            sealed: vec![byte, 0, 255, byte],
        }
    }

    /// Rows are kept per server, replaced whole, and removed.
    pub(crate) fn rows_per_server(s: &Store) {
        assert_eq!(s.oauth_credentials("a").unwrap(), None);
        s.put_oauth_credentials("a", &row("https://a/mcp", 1))
            .unwrap();
        s.put_oauth_credentials("b", &row("https://b/mcp", 2))
            .unwrap();
        s.put_oauth_credentials("a", &row("https://a2/mcp", 3))
            .unwrap();
        assert_eq!(
            s.oauth_credentials("a").unwrap(),
            Some(row("https://a2/mcp", 3))
        );
        assert_eq!(
            s.oauth_credentials("b").unwrap(),
            Some(row("https://b/mcp", 2))
        );
        assert!(s.remove_oauth_credentials("a").unwrap());
        assert!(!s.remove_oauth_credentials("a").unwrap());
        assert_eq!(s.oauth_credentials("a").unwrap(), None);
        assert_eq!(
            crate::store::suites::count(s, "SELECT COUNT(*) FROM oauth_credentials"),
            1
        );
    }
}
