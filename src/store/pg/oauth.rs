//! OAuth credentials of remote servers on PostgreSQL (see `store::oauth`): sealed bytes only.

use super::super::oauth::{now_secs, RefreshLock, SealedRow};
use super::super::StoreError;
use super::Pg;

/// Second argument of `hashtextextended` for refresh locks ("oauth").
const LOCK_SEED: i64 = 0x006f_6175_7468;

/// How long a gateway waits for another one's refresh of the same server (the server's
/// `lock_timeout`; the whole call is bounded by this and [`super::OPERATION_TIMEOUT`]).
pub const REFRESH_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Pg {
    /// A session advisory lock on `server`, held by a connection taken out of the pool: dropping
    /// the lock closes that connection, and PostgreSQL releases the lock with it (also when this
    /// process dies mid-refresh).
    pub fn oauth_refresh_lock(&self, server: &str) -> Result<RefreshLock, StoreError> {
        // The wait for the lock, and the operation's bound for the rest.
        let within = REFRESH_LOCK_WAIT + super::OPERATION_TIMEOUT;
        self.block(async {
            let deadline = tokio::time::Instant::now() + within;
            let client = tokio::time::timeout_at(deadline, self.pool.get())
                .await
                .map_err(|_| StoreError::NoAnswer(within.as_secs_f64()))?
                .map_err(super::connect_err)?;
            let client = deadpool_postgres::Object::take(client);
            let locked = async {
                client
                    .batch_execute(&format!(
                        "SET lock_timeout = '{}s'",
                        REFRESH_LOCK_WAIT.as_secs()
                    ))
                    .await?;
                client
                    .execute(
                        "SELECT pg_advisory_lock(hashtextextended($1, $2))",
                        &[&server, &LOCK_SEED],
                    )
                    .await?;
                Ok::<_, StoreError>(())
            };
            // On a timeout `client` is dropped here: closed, never back in the pool.
            tokio::time::timeout_at(deadline, locked)
                .await
                .map_err(|_| StoreError::NoAnswer(within.as_secs_f64()))??;
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
