//! The PostgreSQL backend of the state store (`--state postgres://…`): several gateways share
//! one database.
//!
//! The store's interface is synchronous (callers run it on blocking threads through
//! [`Store::run`](super::Store::run), like SQLite). This backend keeps its own small tokio
//! runtime, which drives the connections of a `deadpool-postgres` pool; a call enters that
//! runtime and blocks the calling thread on the query's future, so it works from any thread,
//! inside another runtime or not.
//!
//! Every write is one transaction. One that fails with a serialization failure or a deadlock
//! (two gateways updating the same rows in another order) is run again, up to
//! [`WRITE_ATTEMPTS`] times: counters are `INSERT … ON CONFLICT DO UPDATE SET n = n + 1`, which
//! PostgreSQL applies atomically per row, so no increment is lost.
//!
//! Every operation is bounded in time as a whole ([`OPERATION_TIMEOUT`]: waiting for a pooled
//! connection, every query, every attempt): a server that accepts but never answers (its
//! processes stopped, a network black hole) cannot apply a `statement_timeout`, so the bound is
//! the client's. On a timeout the connection is taken out of the pool and closed (a connection
//! whose answer is half read is never reused) and the caller gets [`StoreError::NoAnswer`].

mod approvals;
mod audit;
mod audit_chain;
mod audit_list;
mod capabilities;
mod graph;
pub mod liveness;
mod mcp_sessions;
mod oauth;
mod rate;
mod schema;
mod secrets;
mod session_handles;
mod session_state;
pub mod tls;
mod tokens;
pub mod url;
mod yielded;

use super::StoreError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::ops::AsyncFn;
use std::sync::Arc;
use std::time::Duration;

pub use deadpool_postgres::Transaction;

/// Connections per gateway.
pub const POOL_SIZE: usize = 16;
/// Connections of the web view's reads ([`Pg::reader`]), beside [`POOL_SIZE`].
pub const READ_POOL_SIZE: usize = 4;
/// How long a query waits for a free connection, or a new connection for the server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one store operation may take, from waiting for a connection to its last answer.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);
/// The bound of the long operations: the migrations at open (another gateway may hold their
/// lock while it migrates) and the audit log's prunes (a large `DELETE`).
pub const LONG_OPERATION_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times a write transaction runs when PostgreSQL aborts it as a deadlock or a
/// serialization failure.
pub const WRITE_ATTEMPTS: u32 = 5;

/// The tokio runtime that drives the pool's connections (shut down in the background when the
/// last store handle goes, so dropping a store inside another runtime never panics).
struct Driver(Option<tokio::runtime::Runtime>);

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A PostgreSQL state store: a pool and the runtime that drives it. Cheap to clone.
#[derive(Clone)]
pub struct Pg {
    pool: Pool,
    driver: Arc<Driver>,
    /// The URL without its password (for messages).
    shown: Arc<str>,
    /// The URL as given (to open [`Pg::reader`]'s pool).
    url: Arc<str>,
    /// The audit chain this handle appends to (`store::audit_chain`): one per gateway process.
    chain: Arc<str>,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg").field("url", &self.shown).finish()
    }
}

fn pg_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Postgres(e.to_string())
}

/// A failure to get a connection; one of TLS says so with its code.
fn connect_err(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Postgres(tls::failure(&e).unwrap_or_else(|| e.to_string()))
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        // The server's own message (`db error` alone says nothing).
        use tokio_postgres::error::SqlState;
        match e.as_db_error() {
            Some(db)
                if *db.code() == SqlState::T_R_SERIALIZATION_FAILURE
                    || *db.code() == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                StoreError::Conflict(db.message().to_string())
            }
            // Class 22 (data exception): the value written, not the database.
            Some(db) if db.code().code().starts_with("22") => {
                StoreError::Refused(format!("{} ({})", db.message(), db.code().code()))
            }
            Some(db) => StoreError::Postgres(format!("{} ({})", db.message(), db.code().code())),
            None => pg_err(e),
        }
    }
}

impl Pg {
    /// Connects to `url` (its password from the environment, see [`url`]) and brings the
    /// schema up to date under an advisory lock.
    pub fn open(url: &str) -> Result<Pg, StoreError> {
        let pg = Pg::connect(url, POOL_SIZE)?;
        pg.bounded(LONG_OPERATION_TIMEOUT, async |c| schema::migrate(c).await)?;
        Ok(pg)
    }

    /// Another pool of [`READ_POOL_SIZE`] connections to the same database, with its own
    /// runtime, for reads that must not take the execution path's connections (the web view).
    pub fn reader(&self) -> Result<Pg, StoreError> {
        Pg::connect(&self.url, READ_POOL_SIZE)
    }

    /// A pool of at most `size` connections to `url` (none opened yet).
    fn connect(url: &str, size: usize) -> Result<Pg, StoreError> {
        let (config, mode) = url::config(url)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("store-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Task(e.to_string()))?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &mode {
            tls::Mode::Clear => Manager::from_config(config, tokio_postgres::NoTls, manager_config),
            tls::Mode::Verified { roots } => Manager::from_config(
                config,
                tls::connector(roots.as_ref()).map_err(StoreError::Postgres)?,
                manager_config,
            ),
        };
        let pool = {
            let _in = rt.enter();
            Pool::builder(manager)
                .max_size(size)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_TIMEOUT))
                .create_timeout(Some(CONNECT_TIMEOUT))
                .recycle_timeout(Some(CONNECT_TIMEOUT))
                .build()
                .map_err(pg_err)?
        };
        Ok(Pg {
            pool,
            driver: Arc::new(Driver(Some(rt))),
            shown: Arc::from(url::shown(url)),
            url: Arc::from(url),
            chain: Arc::from(format!("gateway-{}", uuid::Uuid::new_v4())),
        })
    }

    /// The URL, without a password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.read(async |c| schema::version(c).await)
    }

    /// This handle appending to chain `name` (measurement only).
    #[cfg(test)]
    pub(crate) fn with_chain(mut self, name: &str) -> Pg {
        self.chain = Arc::from(name);
        self
    }

    /// Runs `sql` (for tests that edit the store by hand).
    #[cfg(test)]
    pub(crate) fn exec(&self, sql: &str) {
        self.read(async |c| Ok(c.batch_execute(sql).await?))
            .expect("statements run")
    }

    /// The first column of the one row `sql` answers, as a number (for tests).
    #[cfg(test)]
    pub(crate) fn count(&self, sql: &str) -> i64 {
        self.read(async |c| Ok(c.query_one(sql, &[]).await?.get::<_, i64>(0)))
            .expect("count query")
    }

    /// Runs `fut` to completion on this thread, inside the pool's runtime.
    fn block<T>(&self, fut: impl std::future::Future<Output = T>) -> T {
        let _in = self.driver.0.as_ref().map(|rt| rt.enter());
        futures::executor::block_on(fut)
    }

    /// Runs `op` with a pooled connection, all of it (the wait for the connection included)
    /// within `within`. On a timeout the connection is taken out of the pool and closed, and
    /// the answer is [`StoreError::NoAnswer`].
    pub(crate) fn bounded<T>(
        &self,
        within: Duration,
        op: impl AsyncFnOnce(&mut deadpool_postgres::Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let no_answer = || StoreError::NoAnswer(within.as_secs_f64());
        self.block(async {
            let deadline = tokio::time::Instant::now() + within;
            let mut client = match tokio::time::timeout_at(deadline, self.pool.get()).await {
                Ok(Ok(client)) => client,
                // The pool's own bounds (no free connection, no new one in time) say the same.
                Err(_) | Ok(Err(deadpool_postgres::PoolError::Timeout(_))) => {
                    return Err(no_answer())
                }
                Ok(Err(e)) => return Err(connect_err(e)),
            };
            match tokio::time::timeout_at(deadline, op(&mut client)).await {
                Ok(done) => done,
                Err(_) => {
                    // Closed (its task aborted) rather than given back half read.
                    drop(deadpool_postgres::Object::take(client));
                    Err(no_answer())
                }
            }
        })
    }

    /// Runs `f` with a pooled connection (reads), within [`OPERATION_TIMEOUT`].
    pub(crate) fn read<T>(
        &self,
        f: impl AsyncFn(&deadpool_postgres::Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.bounded(OPERATION_TIMEOUT, async |c| f(c).await)
    }

    /// Runs `f` in one transaction, again when PostgreSQL aborts it as a deadlock or a
    /// serialization failure (so `f` must only touch the database); every attempt within one
    /// [`OPERATION_TIMEOUT`].
    pub(crate) fn write<T>(
        &self,
        f: impl AsyncFn(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_within(OPERATION_TIMEOUT, f)
    }

    /// [`Pg::write`] within `within`.
    pub(crate) fn write_within<T>(
        &self,
        within: Duration,
        f: impl AsyncFn(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.bounded(within, async |client| {
            let mut attempt = 1;
            loop {
                let tx = client.transaction().await?;
                let done = match f(&tx).await {
                    Ok(v) => tx.commit().await.map(|_| v).map_err(StoreError::from),
                    Err(e) => Err(e),
                };
                match done {
                    Err(StoreError::Conflict(e)) if attempt < WRITE_ATTEMPTS => {
                        tracing::debug!("state store: transaction run again: {e}");
                        attempt += 1;
                    }
                    other => return other,
                }
            }
        })
    }
}

/// Statements of one pipeline sent before the first answer is awaited.
pub const PIPELINE_DEPTH: usize = 256;

/// One statement's parameters, borrowed.
pub(crate) type Params<'a> = Vec<&'a (dyn tokio_postgres::types::ToSql + Sync)>;

/// Runs `writes` (statements of one transaction) pipelined: up to [`PIPELINE_DEPTH`] are sent
/// before their answers are read, in the order given, which is the order PostgreSQL runs them
/// in; the first that fails aborts the transaction and is the answer. One round trip for a
/// batch instead of one per statement.
pub(crate) async fn pipelined<F>(writes: impl IntoIterator<Item = F>) -> Result<(), StoreError>
where
    F: std::future::Future<Output = Result<u64, tokio_postgres::Error>>,
{
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(writes)
        .buffered(PIPELINE_DEPTH)
        .try_for_each(|_| async { Ok(()) })
        .await?;
    Ok(())
}

/// A `u64` count or size as PostgreSQL's `BIGINT`.
pub(crate) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A server that accepts but never answers (every process SIGSTOPped): an operation ends
    /// with `NoAnswer` after the bound, its connection is taken out of the pool, and once the
    /// server runs again the same store reads and writes (no reopen).
    #[test]
    fn a_hung_server_is_bounded_and_its_connection_dropped() {
        let server = crate::store::suites::pg_support::PgServer::start();
        let store = crate::store::Store::open(std::path::Path::new(&server.database())).unwrap();
        let pg = store.pg().unwrap().clone();
        assert_eq!(pg.schema_version().unwrap(), schema::known());
        assert_eq!(pg.pool.status().size, 1);

        let hung = server.hang();
        let t = Instant::now();
        let e = pg.schema_version().unwrap_err();
        let took = t.elapsed();
        assert!(matches!(e, StoreError::NoAnswer(s) if s == 5.0), "{e}");
        assert!(
            e.to_string()
                .contains("the database did not answer within 5 s"),
            "{e}"
        );
        assert!(
            took >= OPERATION_TIMEOUT && took < OPERATION_TIMEOUT + Duration::from_secs(2),
            "{took:?}"
        );
        // Taken out, not given back half read.
        assert_eq!(pg.pool.status().size, 0);
        hung.resume();

        let t = Instant::now();
        assert_eq!(pg.schema_version().unwrap(), schema::known());
        store
            .start_execution_counted("p", 10)
            .expect("a write after the resume");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
}
