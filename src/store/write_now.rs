//! Writes that cannot wait, made on the caller's thread, and the WAL checkpoints that keep them
//! short (issue 33).
//!
//! The audit record of an execution is committed before its answer leaves the host. Sent to a
//! blocking thread and back, a small record waited ~55 µs for the two hand-offs on top of its
//! ~45 µs of SQLite work. [`Store::try_write_now`] commits it on the calling thread instead —
//! only when that cannot block: the connection is free, and the file's write lock is taken at
//! once (a busy timeout of zero; another process writing means `None`, and the caller takes the
//! blocking path with the normal busy timeout).
//!
//! What could still make a commit long is SQLite's automatic checkpoint, which runs in the
//! committing connection once the WAL passes 1,000 pages (measured here: 1 commit in ~80 took
//! over 1 ms, the longest 16 ms). The store's connection therefore does not checkpoint on
//! commit (`wal_autocheckpoint = 0`); every [`CHECKPOINT_EVERY`] commits a passive checkpoint
//! runs on a blocking thread ([`Store::note_commit`]), and SQLite checkpoints when the last
//! connection closes, as before.

use super::{Store, StoreError, BUSY_TIMEOUT};
use rusqlite::TransactionBehavior;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Commits between two checkpoints: about 1,000 WAL pages at the ~4 pages of an audit record,
/// SQLite's own default.
pub const CHECKPOINT_EVERY: u64 = 256;

impl Store {
    /// Runs `f` in one `BEGIN IMMEDIATE` transaction on this thread if that cannot wait: `None`
    /// (nothing written) when the connection is in use or another connection holds the file's
    /// write lock.
    pub fn try_write_now<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Option<Result<T, StoreError>> {
        let mut conn = self.conn.try_lock().ok()?;
        conn.busy_timeout(Duration::ZERO).ok()?;
        let result = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) =>
            {
                None
            }
            Err(e) => Some(Err(e.into())),
            Ok(tx) => Some(f(&tx).and_then(|v| {
                tx.commit()?;
                Ok(v)
            })),
        };
        let restored = conn.busy_timeout(BUSY_TIMEOUT);
        drop(conn);
        if let Some(Ok(_)) = result {
            self.note_commit();
        }
        match (result, restored) {
            (Some(Ok(v)), Err(e)) => {
                tracing::warn!("could not restore the state file's busy timeout: {e}");
                Some(Ok(v))
            }
            (r, _) => r,
        }
    }

    /// Counts a commit; every [`CHECKPOINT_EVERY`]th starts a passive checkpoint off the
    /// async workers (inline when there is no runtime: the CLI's own threads).
    pub(super) fn note_commit(&self) {
        let n = self.commits.fetch_add(1, Ordering::Relaxed) + 1;
        if !n.is_multiple_of(CHECKPOINT_EVERY) {
            return;
        }
        let store = self.clone();
        let checkpoint = move || {
            let done = store.with(|c| {
                c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
                Ok(())
            });
            if let Err(e) = done {
                tracing::warn!("WAL checkpoint of the state file failed: {e}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(checkpoint);
            }
            Err(_) => checkpoint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn put(store: &Store, now: bool, n: i64) -> Option<Result<(), StoreError>> {
        let f = move |tx: &rusqlite::Transaction<'_>| {
            tx.execute(
                "INSERT INTO t (n, pad) VALUES (?1, ?2)",
                rusqlite::params![n, "x".repeat(3000)],
            )?;
            Ok(())
        };
        if now {
            store.try_write_now(f)
        } else {
            Some(store.write(f))
        }
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        store
            .with(|c| Ok(c.execute_batch("CREATE TABLE t (n INTEGER, pad TEXT)")?))
            .unwrap();
        (dir, store)
    }

    #[test]
    fn a_write_that_would_wait_is_not_made_now() {
        let (dir, store) = store();
        assert!(matches!(put(&store, true, 1), Some(Ok(()))));
        // Another connection (another gateway on the same file) holds the write lock.
        let mut other = Connection::open(dir.path().join("state.db")).unwrap();
        let held = other
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        assert!(put(&store, true, 2).is_none(), "must not wait for the lock");
        // The connection in use by this process: not now either.
        {
            let _busy = store.conn.lock().unwrap();
            assert!(put(&store, true, 3).is_none());
        }
        held.rollback().unwrap();
        assert!(matches!(put(&store, true, 4), Some(Ok(()))));
        let rows: Vec<i64> = store
            .with(|c| {
                let mut s = c.prepare("SELECT n FROM t ORDER BY n")?;
                let rows = s.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .unwrap();
        assert_eq!(rows, vec![1, 4], "nothing of the refused writes was kept");
        // The normal busy timeout is back for the blocking path.
        let ms: i64 = store
            .with(|c| Ok(c.pragma_query_value(None, "busy_timeout", |r| r.get(0))?))
            .unwrap();
        assert_eq!(ms as u128, BUSY_TIMEOUT.as_millis());
    }

    #[test]
    fn checkpoints_keep_the_wal_bounded_without_autocheckpoint() {
        let (dir, store) = store();
        let wal = dir.path().join("state.db-wal");
        let commits = |from: i64, n: u64| {
            for i in from..from + n as i64 {
                assert!(matches!(put(&store, i % 2 == 0, i), Some(Ok(()))));
            }
            std::fs::metadata(&wal).unwrap().len()
        };
        // A checkpoint lets the WAL start over: its file stops growing at about what
        // CHECKPOINT_EVERY commits write (~3 pages each here). Unchecked, 8 x CHECKPOINT_EVERY
        // commits would make it four times what 2 x CHECKPOINT_EVERY made.
        let after_two = commits(0, 2 * CHECKPOINT_EVERY);
        let after_eight = commits(10_000, 6 * CHECKPOINT_EVERY);
        assert!(
            after_eight <= after_two + after_two / 2,
            "the WAL grew from {after_two} to {after_eight} bytes"
        );
    }
}
