//! The state store: one SQLite file (WAL mode) holding the tool graph learned from traces, the
//! saved capabilities and the last execution of the CLI.
//!
//! Where it lives: `--state PATH`, else the config's `sandbox.state`, else
//! `$XDG_DATA_HOME/mcp-sandbox/state.db` (`~/.local/share/mcp-sandbox/state.db`). Nothing else in
//! the host writes files.
//!
//! Several hosts may use the same file at once: every write is one `BEGIN IMMEDIATE` transaction
//! made of UPSERTs (`count = count + 1`), so two writers serialize on SQLite's lock instead of
//! overwriting each other, and a writer that finds the file locked waits up to
//! [`BUSY_TIMEOUT`] before failing with [`StoreError::Sqlite`] (`database is locked`).
//! A host killed in the middle of a write leaves the last committed state: the WAL makes each
//! transaction atomic.

pub mod approvals;
pub mod audit;
pub mod audit_chain;
pub mod audit_checkpoint;
pub mod audit_content;
pub mod audit_export;
pub mod audit_key;
pub mod audit_list;
pub mod audit_options;
pub mod audit_record;
pub mod audit_recording;
pub mod audit_verify;
mod capabilities;
mod capability_parts;
mod capability_record;
mod graph;
pub mod location;
pub mod mcp_sessions;
mod migrations;
pub mod oauth;
mod owner_only;
pub mod pg;
pub mod private_paths;
pub mod rate;
pub mod secrets;
pub mod session_handles;
pub mod session_state;
#[cfg(test)]
pub(crate) mod suites;
pub mod tokens;
pub mod write_key;
mod write_now;
pub mod yielded;

pub use capabilities::{
    capability_id, split_name, CapabilityQuota, CapabilityRecord, LastExecution, NewCapability,
};
pub use graph::{is_aborted, mermaid, Edge, GraphSnapshot, NextTool, ToolStats, P95_WINDOW};

use migrations::MIGRATIONS;
use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a write waits for another host's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A failure of the state store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "cannot find a data directory for the state file; set XDG_DATA_HOME or pass --state PATH"
    )]
    NoDataDir,
    #[error("cannot create the directory of the state file {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make the state file {path} readable by its owner only: {source}")]
    Permissions {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state file {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("state file {path} has schema version {found}, newer than this mcp-sandbox knows ({known}); upgrade mcp-sandbox or use another --state")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("state store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A failure of the PostgreSQL backend (connecting, a query, the pool).
    #[error("state store (PostgreSQL): {0}")]
    Postgres(String),
    /// A PostgreSQL operation got no answer in time (a hung server or network); its connection
    /// was closed.
    #[error("state store (PostgreSQL): the database did not answer within {0} s (a stopped server or a network black hole?); the connection was closed, the next operation opens another")]
    NoAnswer(f64),
    /// A PostgreSQL transaction aborted as a deadlock or serialization failure (run again).
    #[error("state store (PostgreSQL): a concurrent write conflicted; try again ({0})")]
    Conflict(String),
    /// The store refused what was written for its content (PostgreSQL SQLSTATE class 22, say
    /// a value it cannot hold): that write's problem, not the store's.
    #[error("state store: the data was refused for its content: {0}")]
    Refused(String),
    /// An operation this backend does not offer yet.
    #[error("{STORE_UNSUPPORTED}: {0} is not available with a PostgreSQL state store yet; use a SQLite state file (--state PATH) for it")]
    Unsupported(&'static str),
    #[error("state store: stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("state store: a background task failed: {0}")]
    Task(String),
    #[error("{0}")]
    Capability(String),
    /// A capability storage quota (code size, total size) would be exceeded.
    #[error("{0}")]
    QuotaExceeded(String),
}

impl StoreError {
    /// Whether the store refused the data written for its content ([`StoreError::Refused`];
    /// SQLite: `SQLITE_TOOBIG`, `SQLITE_MISMATCH`), rather than failed or could not be reached:
    /// writing other data works, so it is no reason to think the store down.
    pub fn refused_content(&self) -> bool {
        match self {
            StoreError::Refused(_) => true,
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::TooBig | rusqlite::ErrorCode::TypeMismatch
            ),
            _ => false,
        }
    }
}

/// The stable code of an operation the PostgreSQL backend does not offer yet.
pub const STORE_UNSUPPORTED: &str = "STORE_UNSUPPORTED";

/// Where a [`Store`] keeps its data. One interface, two backends: every public method of
/// `Store` checks [`Store::pg`] first and runs the PostgreSQL version when it is one; the
/// SQLite code runs unchanged otherwise (one branch more, no allocation).
#[derive(Clone)]
enum Backend {
    /// A SQLite file: one connection, shared by every clone.
    Sqlite(Arc<Mutex<Connection>>),
    /// A PostgreSQL database: a connection pool.
    Postgres(pg::Pg),
}

/// The state store. Cheap to clone; every clone shares one connection (SQLite) or one pool
/// (PostgreSQL).
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    /// Commits made through this store (see `write_now`: they pace the WAL checkpoints).
    commits: Arc<std::sync::atomic::AtomicU64>,
    path: PathBuf,
    /// The tenant whose capabilities this handle sees (see [`Store::for_tenant`]).
    tenant: Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("tenant", &self.tenant)
            .finish()
    }
}

/// `$XDG_DATA_HOME/mcp-sandbox/state.db`, or `~/.local/share/mcp-sandbox/state.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    dirs::data_dir()
        .map(|d| d.join("mcp-sandbox").join("state.db"))
        .ok_or(StoreError::NoDataDir)
}

impl Store {
    /// Opens (creating if needed) the state file, or connects to the PostgreSQL database when
    /// `path` is a `postgres://` URL, and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(url) = path.to_str().filter(|p| pg::url::is_postgres(p)) {
            let pg = pg::Pg::open(url)?;
            return Ok(Store {
                path: PathBuf::from(pg.shown()),
                backend: Backend::Postgres(pg),
                commits: Arc::default(),
                tenant: Arc::from(crate::context::principal::DEFAULT_TENANT),
            });
        }
        private_paths::hide_state_file(path);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private_paths::record_state_dir(dir);
            owner_only::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // Audit data (arguments, code) lives here: the file, its WAL and SHM (SQLite gives
        // them the database file's mode) are readable by their owner only.
        owner_only::restrict(path).map_err(|source| StoreError::Permissions {
            path: path.to_path_buf(),
            source,
        })?;
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // WAL: readers never block the writer, and a killed writer leaves the last commit.
        // Switching a new file to WAL takes an exclusive lock and SQLite does not wait for it
        // (no busy handler): two hosts opening a new file at once retry here, within the busy
        // timeout, instead of one of them running without its state.
        let since = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && since.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => break other.map_err(open_err)?,
            }
        }
        // NORMAL is crash-safe in WAL mode (a power loss may drop the last commits, never
        // corrupt the file).
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        // Checkpoints run off the committing thread, paced by `write_now::note_commit`.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(open_err)?;
        migrate(&mut conn, path)?;
        // The WAL and SHM files exist now (journal mode WAL); ones made by an older build
        // may still be world-readable.
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            owner_only::restrict_existing(Path::new(&side)).map_err(|source| {
                StoreError::Permissions {
                    path: PathBuf::from(&side),
                    source,
                }
            })?;
        }
        Ok(Store {
            backend: Backend::Sqlite(Arc::new(Mutex::new(conn))),
            commits: Arc::default(),
            path: path.to_path_buf(),
            tenant: Arc::from(crate::context::principal::DEFAULT_TENANT),
        })
    }

    /// A handle for reads that must not wait behind the execution path's writes (the web
    /// view): on SQLite a connection of its own to the same file (WAL: a reader never blocks
    /// the writer, nor the writer it), which refuses writes (`query_only`); on PostgreSQL a
    /// pool of its own ([`pg::READ_POOL_SIZE`] connections). The main handle's connection
    /// (or pool) is never the one it uses.
    pub fn reader(&self) -> Result<Store, StoreError> {
        let backend = match &self.backend {
            Backend::Postgres(pg) => Backend::Postgres(pg.reader()?),
            Backend::Sqlite(_) => {
                let open_err = |source| StoreError::Open {
                    path: self.path.clone(),
                    source,
                };
                let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = Connection::open_with_flags(&self.path, flags).map_err(open_err)?;
                conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
                conn.pragma_update(None, "query_only", "ON")
                    .map_err(open_err)?;
                Backend::Sqlite(Arc::new(Mutex::new(conn)))
            }
        };
        Ok(Store {
            backend,
            commits: Arc::default(),
            path: self.path.clone(),
            tenant: self.tenant.clone(),
        })
    }

    /// A handle on the same file that sees (lists, resolves, saves, removes) only `tenant`'s
    /// capabilities; a fresh handle sees the `default` tenant's.
    pub fn for_tenant(&self, tenant: &str) -> Store {
        Store {
            tenant: Arc::from(tenant),
            ..self.clone()
        }
    }

    /// The tenant this handle sees.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The file this store uses (for PostgreSQL: its URL, without a password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The PostgreSQL backend, when this store is one.
    pub fn pg(&self) -> Option<&pg::Pg> {
        match &self.backend {
            Backend::Postgres(pg) => Some(pg),
            Backend::Sqlite(_) => None,
        }
    }

    /// The SQLite connection, when this store is a file.
    fn sqlite(&self) -> Option<&Arc<Mutex<Connection>>> {
        match &self.backend {
            Backend::Sqlite(conn) => Some(conn),
            Backend::Postgres(_) => None,
        }
    }

    /// Runs `f` with the SQLite connection (blocking; use [`Store::run`] from async code).
    /// On PostgreSQL: [`StoreError::Unsupported`] (each operation there has its own code).
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(conn) = self.sqlite() else {
            return Err(StoreError::Unsupported("this operation"));
        };
        // A panic while holding the lock leaves the connection usable: SQLite rolls back any
        // open transaction when the `Transaction` guard is dropped.
        let mut conn = match conn.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut conn)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction: it takes the write lock first, so two
    /// hosts never both read a value and write it back.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.with(|conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })
        .inspect(|_| self.note_commit())
    }

    /// Runs blocking store work off the async runtime's worker threads.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// `PRAGMA integrity_check`: `Ok(())` when it answers `ok` (on PostgreSQL: the database
    /// answers a query).
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.schema_version().map(|_| ());
        }
        self.with(|conn| {
            let answer: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
            if answer == "ok" {
                Ok(())
            } else {
                Err(StoreError::Corrupt(answer))
            }
        })
    }

    /// The schema version of the file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.schema_version();
        }
        self.with(|conn| Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?))
    }
}

/// What the store learns from a finished execution (the execution layer's outcome implements
/// it; the store does not depend on that layer).
pub trait FinishedExecution {
    fn success(&self) -> bool;
    fn error_code(&self) -> Option<crate::error::ErrorCode>;
    fn traces(&self) -> &[crate::trace::TraceEvent];
}

impl Store {
    /// Learns from one finished execution, in one transaction: the tool graph (see
    /// [`graph`](self) for exactly what is recorded) and, when `code` is given, the last
    /// execution (for `capability save --from-last`).
    pub fn record_execution(
        &self,
        outcome: &impl FinishedExecution,
        code: Option<(&str, sandbox_runner::protocol::Language)>,
    ) -> Result<(), StoreError> {
        self.record_execution_keyed(outcome, code, None)
    }

    /// [`Store::record_execution`], applied at most once per `key` (see [`write_key`]): a
    /// retry whose first try was committed changes nothing.
    pub fn record_execution_once(
        &self,
        outcome: &impl FinishedExecution,
        code: Option<(&str, sandbox_runner::protocol::Language)>,
        key: write_key::WriteKey<'_>,
    ) -> Result<(), StoreError> {
        self.record_execution_keyed(outcome, code, Some(key))
    }

    fn record_execution_keyed(
        &self,
        outcome: &impl FinishedExecution,
        code: Option<(&str, sandbox_runner::protocol::Language)>,
        key: Option<write_key::WriteKey<'_>>,
    ) -> Result<(), StoreError> {
        let aborted = outcome.error_code().is_some_and(graph::is_aborted);
        let last = code.map(|(code, language)| {
            let ends = outcome.traces().iter().filter(|e| {
                e.parent_trace_id.is_none()
                    && matches!(
                        e.kind,
                        crate::trace::TraceKind::ToolEnd | crate::trace::TraceKind::CapabilityEnd
                    )
            });
            let (mut calls, mut failed) = (0u64, 0u64);
            for e in ends {
                calls += 1;
                if e.success != Some(true) {
                    failed += 1;
                }
            }
            LastExecution {
                code: code.to_string(),
                language,
                success: outcome.success(),
                tool_calls: calls,
                failed_calls: failed,
                ts: crate::trace::now_ms(),
            }
        });
        let last = match last {
            Some(l) => {
                Some(serde_json::to_string(&l).map_err(|e| StoreError::Task(e.to_string()))?)
            }
            None => None,
        };
        if let Some(pg) = self.pg() {
            let traces = outcome.traces();
            return pg.record_execution(&self.tenant, traces, aborted, last.as_deref(), key);
        }
        self.write(|tx| {
            if let Some(k) = key {
                if !write_key::claim_sqlite(tx, k.id, crate::trace::now_ms())? {
                    return Ok(());
                }
            }
            graph::record(tx, &self.tenant, outcome.traces(), aborted)?;
            if let Some(text) = &last {
                capabilities::set_kv(tx, capabilities::LAST_EXECUTION_KEY, text)?;
            }
            Ok(())
        })
    }
}

/// The schema version this build writes.
pub fn schema_version() -> i64 {
    MIGRATIONS.len() as i64
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let known = schema_version();
    // The version is read inside the write transaction, so two hosts opening a new file at once
    // do not both run the same migration.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > known {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_migrates_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/state.db");
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), schema_version());
        let mode: String = s
            .with(|c| Ok(c.pragma_query_value(None, "journal_mode", |r| r.get(0))?))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(s);
        let s = Store::open(&path).unwrap();
        s.integrity_check().unwrap();
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
    }
}
