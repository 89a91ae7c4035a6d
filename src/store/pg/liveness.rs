//! Which gateways are alive, on PostgreSQL: each gateway holds a session advisory lock on a key
//! derived from its id (`hashtextextended(id, LIVENESS_SEED)`), on one connection taken out of
//! the pool for it. A gateway that dies (even by SIGKILL) closes that socket, and PostgreSQL
//! frees the lock at once. Other gateways test liveness by looking the lock up in `pg_locks`,
//! never by taking it.
//!
//! The holder checks its connection every [`CHECK_EVERY`]; when it is lost (the database
//! restarted, the network dropped it) it takes a new connection and the lock again, every
//! [`RETAKE_EVERY`] until it succeeds. Meanwhile the lock is free: readers judge a gateway
//! stopped only when its lock has been missing for [`DEAD_AFTER`] (see `front::mcp::remote`),
//! so a gateway whose connection dropped while the database stayed up is not judged stopped.

use super::super::StoreError;
use super::Pg;
use deadpool_postgres::Pool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Second argument of `hashtextextended` for liveness locks ("gate").
const LIVENESS_SEED: i64 = 0x6761_7465;
/// How often the holder checks its connection.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How often the holder tries again to take its lock when it does not hold it.
pub const RETAKE_EVERY: Duration = Duration::from_millis(500);
/// How long a gateway's lock must be missing before others judge it stopped: longer than the
/// holder takes to notice a lost connection and take the lock again on a database that is up.
pub const DEAD_AFTER: Duration = Duration::from_secs(3);

/// Holds this gateway's liveness lock until dropped.
#[derive(Debug)]
pub struct Liveness {
    stop: CancellationToken,
    held: Arc<AtomicBool>,
}

impl Liveness {
    /// Whether the lock is held now.
    pub fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Pg {
    /// Starts holding gateway `id`'s liveness lock (in the background: it is taken again
    /// whenever its connection is lost); waits up to [`super::CONNECT_TIMEOUT`] for the first
    /// take, and fails if it did not happen by then.
    pub fn hold_liveness(&self, id: &str) -> Result<Liveness, StoreError> {
        let (stop, held) = (CancellationToken::new(), Arc::new(AtomicBool::new(false)));
        let Some(rt) = self.driver.0.as_ref() else {
            return Err(StoreError::Task("the store's runtime is gone".into()));
        };
        rt.spawn(hold(
            self.pool.clone(),
            id.to_string(),
            stop.clone(),
            held.clone(),
        ));
        let live = Liveness { stop, held };
        let since = Instant::now();
        while !live.held() {
            if since.elapsed() > super::CONNECT_TIMEOUT {
                return Err(StoreError::Postgres(format!(
                    "could not take this gateway's liveness lock within {:?}",
                    super::CONNECT_TIMEOUT
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(live)
    }

    /// Whether gateway `id` holds its liveness lock now.
    pub fn gateway_alive(&self, id: &str) -> Result<bool, StoreError> {
        self.read(async |c| {
            Ok(c.query_one(
                "SELECT EXISTS (
                    SELECT 1 FROM pg_locks l, (SELECT hashtextextended($1, $2) AS k) h
                    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND l.classid::bigint = ((h.k >> 32) & 4294967295)
                      AND l.objid::bigint = (h.k & 4294967295))",
                &[&id, &LIVENESS_SEED],
            )
            .await?
            .get(0))
        })
    }
}

/// A connection out of the pool holding `id`'s lock.
async fn take(pool: &Pool, id: &str) -> Result<deadpool_postgres::ClientWrapper, StoreError> {
    let client = pool.get().await.map_err(super::connect_err)?;
    let client = deadpool_postgres::Object::take(client);
    let got: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtextextended($1, $2))",
            &[&id, &LIVENESS_SEED],
        )
        .await?
        .get(0);
    if !got {
        // Still held by this gateway's previous connection, which the server has not yet
        // seen closed.
        return Err(StoreError::Postgres("the lock is still held".into()));
    }
    Ok(client)
}

async fn hold(pool: Pool, id: String, stop: CancellationToken, held: Arc<AtomicBool>) {
    let mut lost: Option<Instant> = None;
    let mut warned: Option<Instant> = None;
    loop {
        match take(&pool, &id).await {
            Ok(client) => {
                held.store(true, Ordering::SeqCst);
                if let Some(at) = lost.take() {
                    tracing::info!(
                        "this gateway's liveness lock is held again (it was lost for {:?})",
                        at.elapsed()
                    );
                }
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(CHECK_EVERY) => {}
                    }
                    if client.is_closed() || client.simple_query("SELECT 1").await.is_err() {
                        break;
                    }
                }
                held.store(false, Ordering::SeqCst);
                lost = Some(Instant::now());
                tracing::warn!(
                    "this gateway lost its liveness connection to the state store; taking it again every {RETAKE_EVERY:?} (other gateways judge it stopped after {DEAD_AFTER:?} without it)"
                );
            }
            Err(e) => {
                if warned.is_none_or(|w| w.elapsed() > Duration::from_secs(60)) {
                    warned = Some(Instant::now());
                    tracing::warn!("cannot take this gateway's liveness lock yet: {e}");
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RETAKE_EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::store::suites::pg_support::PgServer;
    use crate::store::Store;
    use std::path::Path;

    /// A held lock reads alive from another pool; a dropped one (its connection closed) reads
    /// stopped at once; a gateway whose connections are all killed by the server takes its lock
    /// again within a few seconds.
    #[test]
    fn liveness_follows_the_holder() {
        let server = PgServer::start();
        let url = server.database();
        let a = Store::open(Path::new(&url)).unwrap();
        let b = Store::open(Path::new(&url)).unwrap();
        let (a, b) = (a.pg().unwrap(), b.pg().unwrap());
        assert!(!b.gateway_alive("ga").unwrap());
        let held = a.hold_liveness("ga").unwrap();
        assert!(held.held());
        assert!(b.gateway_alive("ga").unwrap());
        assert!(!b.gateway_alive("gb").unwrap());
        // The server ends every other connection (as a restart would).
        b.read(async |c| {
            c.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE pid <> pg_backend_pid() AND datname = current_database()",
                &[],
            )
            .await?;
            Ok(())
        })
        .unwrap();
        let since = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(200));
        while !(held.held() && b.gateway_alive("ga").unwrap()) {
            assert!(
                since.elapsed() < super::DEAD_AFTER,
                "not taken again within {:?}",
                super::DEAD_AFTER
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        drop(held);
        let since = std::time::Instant::now();
        while b.gateway_alive("ga").unwrap() {
            assert!(since.elapsed() < std::time::Duration::from_secs(2));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
