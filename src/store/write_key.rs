//! Writes applied at most once. A write whose commit reached the database but whose answer was
//! lost (PostgreSQL stopped or hung at that instant, the connection dropped after the store's
//! bound) is retried from a queue (`exec::retry_queue`); without a key it would then be applied
//! twice. Each learning write and each execution's audit record carries a random key, and the
//! transaction that applies it records the key beside it:
//!
//! - a learning write (`Store::record_execution_once`) inserts its key into `learning_writes`;
//!   a retry whose key is there already changes nothing. Keys older than [`KEY_RETENTION_MS`]
//!   are deleted by later writes, a few at a time ([`PRUNE_BATCH`]): a record retried more
//!   than that after its first try (an outage of a day, the host up all along) may be counted
//!   twice again.
//! - an audit record keeps its key in `audit.write_key` (unique): appending a record whose key
//!   is there completes that row instead (its head updated, its calls inserted idempotently),
//!   so a whole record retried after a lost answer, and a write-ahead record committed without
//!   its answer and then queued whole, each leave one record. The key lives as long as the row.

use super::StoreError;
use rusqlite::params;

/// How long a learning write's key is kept after its write: longer than any retry waits in
/// practice (the queue retries at least every 5 s while the database answers).
pub const KEY_RETENTION_MS: f64 = 24.0 * 3600.0 * 1000.0;
/// Expired keys one write deletes at most (each write adds one, so they cannot pile up).
pub const PRUNE_BATCH: i64 = 64;

/// One write's key, and whether this is a retry (a write tried before, whose outcome is not
/// known). A first try cannot find its key already written; only a retry has to ask first.
#[derive(Debug, Clone, Copy)]
pub struct WriteKey<'a> {
    pub id: &'a str,
    pub retry: bool,
}

/// A fresh key (a random UUID).
pub fn new_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Records `key` in an open SQLite transaction and deletes expired keys; `false` when the key
/// was there already (the write it stands for is applied: apply nothing).
pub(super) fn claim_sqlite(
    tx: &rusqlite::Transaction<'_>,
    key: &str,
    now_ms: f64,
) -> Result<bool, StoreError> {
    let added = tx
        .prepare_cached(
            "INSERT INTO learning_writes (key, at) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
        )?
        .execute(params![key, now_ms])?;
    if added == 0 {
        return Ok(false);
    }
    tx.prepare_cached(
        "DELETE FROM learning_writes WHERE key IN
            (SELECT key FROM learning_writes WHERE at < ?1 ORDER BY at LIMIT ?2)",
    )?
    .execute(params![now_ms - KEY_RETENTION_MS, PRUNE_BATCH])?;
    Ok(true)
}

/// PostgreSQL's statements: the claim (its row count says whether the key was new) and the
/// pruning, which skips keys another transaction is deleting rather than waiting for it.
pub(super) const CLAIM_PG: &str =
    "INSERT INTO learning_writes (key, at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
pub(super) const PRUNE_PG: &str = "DELETE FROM learning_writes WHERE key IN
        (SELECT key FROM learning_writes WHERE at < $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)";

#[cfg(test)]
#[path = "write_key_tests.rs"]
pub(super) mod tests;
