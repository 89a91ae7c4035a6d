//! OAuth credentials of remote servers on PostgreSQL (see `store::oauth`): sealed bytes only.

use super::super::oauth::{now_secs, RefreshLock, SealedRow};
use super::super::StoreError;
use super::Pg;

/// Second argument of `hashtextextended` for refresh locks ("oauth").
const LOCK_SEED: i64 = 0x006f_6175_7468;

/// How long a gateway waits for another one's refresh of the same server.
pub const REFRESH_LOCK_WAIT: &str = "10s";

impl Pg {
    /// A session advisory lock on `server`, held by a connection taken out of the pool: dropping
    /// the lock closes that connection, and PostgreSQL releases the lock with it (also when this
    /// process dies mid-refresh).
    pub fn oauth_refresh_lock(&self, server: &str) -> Result<RefreshLock, StoreError> {
        self.block(async {
            let client = self.pool.get().await.map_err(super::connect_err)?;
            let client = deadpool_postgres::Object::take(client);
            client
                .batch_execute(&format!("SET lock_timeout = '{REFRESH_LOCK_WAIT}'"))
                .await?;
            client
                .execute(
                    "SELECT pg_advisory_lock(hashtextextended($1, $2))",
                    &[&server, &LOCK_SEED],
                )
                .await?;
            Ok(RefreshLock::new(client))
        })
    }

    pub fn oauth_credentials(&self, server: &str) -> Result<Option<SealedRow>, StoreError> {
        self.read(async |c| {
            Ok(c.query_opt(
                "SELECT url, nonce, sealed FROM oauth_credentials WHERE server = $1",
                &[&server],
            )
            .await?
            .map(|r| SealedRow {
                url: r.get(0),
                nonce: r.get(1),
                sealed: r.get(2),
            }))
        })
    }

    pub fn put_oauth_credentials(&self, server: &str, row: &SealedRow) -> Result<(), StoreError> {
        let now = now_secs();
        self.write(async |tx| {
            tx.execute(
                "INSERT INTO oauth_credentials (server, url, nonce, sealed, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (server) DO UPDATE
                 SET url = EXCLUDED.url, nonce = EXCLUDED.nonce, sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at",
                &[&server, &row.url, &row.nonce, &row.sealed, &now],
            )
            .await?;
            Ok(())
        })
    }

    pub fn remove_oauth_credentials(&self, server: &str) -> Result<bool, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "DELETE FROM oauth_credentials WHERE server = $1",
                    &[&server],
                )
                .await?
                > 0)
        })
    }
}
