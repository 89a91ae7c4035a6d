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

pub mod audit;
pub mod audit_options;
mod capabilities;
mod graph;
pub mod location;
mod owner_only;
pub mod session_state;
pub mod tokens;
mod write_now;

pub use capabilities::{
    capability_id, split_name, CapabilityQuota, CapabilityRecord, LastExecution, NewCapability,
};
pub use graph::{is_aborted, mermaid, Edge, GraphSnapshot, NextTool, ToolStats, P95_WINDOW};

use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a write waits for another host's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Schema migrations, applied in order; `PRAGMA user_version` is the number applied so far.
/// Append only: never edit a migration that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: tool graph, capabilities, key/value state.
    "CREATE TABLE tool_stats (
        tool TEXT PRIMARY KEY,
        calls INTEGER NOT NULL DEFAULT 0,
        successes INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        total_ms REAL NOT NULL DEFAULT 0,
        last_seen REAL NOT NULL DEFAULT 0
     );
     CREATE TABLE tool_durations (
        tool TEXT NOT NULL,
        slot INTEGER NOT NULL,
        duration_ms REAL NOT NULL,
        PRIMARY KEY (tool, slot)
     ) WITHOUT ROWID;
     CREATE TABLE edges (
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 0,
        last_seen REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (source, target)
     ) WITHOUT ROWID;
     CREATE INDEX edges_by_target ON edges (target);
     CREATE TABLE capabilities (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        code TEXT NOT NULL,
        code_sha256 TEXT NOT NULL,
        description TEXT,
        input_schema TEXT,
        created_at REAL NOT NULL,
        UNIQUE (name, version)
     );
     CREATE TABLE kv (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
     );",
    // 2: API tokens of `serve --http` (hashes only) and the audit log (see `tokens`, `audit`).
    "CREATE TABLE api_tokens (
        name TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL UNIQUE,
        policy TEXT,
        tenant TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL,
        revoked_at REAL
     );
     CREATE TABLE audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts REAL NOT NULL,
        principal TEXT NOT NULL,
        tenant TEXT NOT NULL,
        client TEXT,
        front TEXT NOT NULL,
        code TEXT,
        code_sha256 TEXT NOT NULL,
        outcome TEXT NOT NULL,
        duration_ms REAL NOT NULL
     );
     CREATE INDEX audit_by_ts ON audit (ts);
     CREATE INDEX audit_by_principal ON audit (principal);
     CREATE TABLE audit_calls (
        audit_id INTEGER NOT NULL REFERENCES audit (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        tool TEXT NOT NULL,
        args_sha256 TEXT,
        args TEXT,
        error TEXT,
        duration_ms REAL,
        PRIMARY KEY (audit_id, seq)
     ) WITHOUT ROWID;
     CREATE INDEX audit_calls_by_tool ON audit_calls (tool);
     CREATE INDEX audit_calls_by_error ON audit_calls (error);",
    // 3: capabilities per tenant: the same name may exist once per tenant.
    "CREATE TABLE capabilities_by_tenant (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        code TEXT NOT NULL,
        code_sha256 TEXT NOT NULL,
        description TEXT,
        input_schema TEXT,
        created_at REAL NOT NULL,
        UNIQUE (tenant, name, version)
     );
     INSERT INTO capabilities_by_tenant
        SELECT id, 'default', name, version, code, code_sha256, description, input_schema, created_at
        FROM capabilities;
     DROP TABLE capabilities;
     ALTER TABLE capabilities_by_tenant RENAME TO capabilities;
     CREATE TABLE tool_stats_by_tenant (
        tenant TEXT NOT NULL,
        tool TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        successes INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        total_ms REAL NOT NULL DEFAULT 0,
        last_seen REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, tool)
     ) WITHOUT ROWID;
     INSERT INTO tool_stats_by_tenant
        SELECT 'default', tool, calls, successes, failures, total_ms, last_seen FROM tool_stats;
     DROP TABLE tool_stats;
     ALTER TABLE tool_stats_by_tenant RENAME TO tool_stats;
     CREATE TABLE tool_durations_by_tenant (
        tenant TEXT NOT NULL,
        tool TEXT NOT NULL,
        slot INTEGER NOT NULL,
        duration_ms REAL NOT NULL,
        PRIMARY KEY (tenant, tool, slot)
     ) WITHOUT ROWID;
     INSERT INTO tool_durations_by_tenant
        SELECT 'default', tool, slot, duration_ms FROM tool_durations;
     DROP TABLE tool_durations;
     ALTER TABLE tool_durations_by_tenant RENAME TO tool_durations;
     CREATE TABLE edges_by_tenant (
        tenant TEXT NOT NULL,
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 0,
        last_seen REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, source, target)
     ) WITHOUT ROWID;
     INSERT INTO edges_by_tenant SELECT 'default', source, target, count, last_seen FROM edges;
     DROP TABLE edges;
     ALTER TABLE edges_by_tenant RENAME TO edges;
     CREATE INDEX edges_by_target ON edges (tenant, target);",
    // 4: the approval decision of each audited call (policy `ask`).
    "ALTER TABLE audit_calls ADD COLUMN approval TEXT;",
    // 5: the code's size in each audit record (a refused or hash-only record keeps no code).
    "ALTER TABLE audit ADD COLUMN code_bytes INTEGER;",
    // 6: who saved each capability version (its author principal) and the policies it had
    // then (a JSON array of names); NULL for versions saved before authors were recorded.
    "ALTER TABLE capabilities ADD COLUMN author TEXT;
     ALTER TABLE capabilities ADD COLUMN author_policies TEXT;",
    // 7: session state (`store`/`load` in scripts): values by session scope and key, and when
    // each session was last used (its idle TTL runs from there).
    "CREATE TABLE state_sessions (
        scope TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        used_at REAL NOT NULL
     );
     CREATE INDEX state_sessions_by_use ON state_sessions (used_at);
     CREATE TABLE state_values (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        stored_at REAL NOT NULL,
        PRIMARY KEY (scope, key)
     ) WITHOUT ROWID;",
    // 8: data-flow labels (JSON arrays of `context::flow::LabelSource`): what a session's
    // executions read, what each kept value was stored after, and what each audited execution
    // read.
    "ALTER TABLE state_sessions ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE state_values ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
     ALTER TABLE audit ADD COLUMN labels TEXT;",
    // 9: each session's placeholder map (context::sensitive), sealed under the operator's key
    // (exec/placeholders.rs); `placeholders_next` is the next number, kept in the clear so a
    // map that no longer opens is replaced by one that never reuses its numbers.
    "ALTER TABLE state_sessions ADD COLUMN placeholders_nonce BLOB;
     ALTER TABLE state_sessions ADD COLUMN placeholders BLOB;
     ALTER TABLE state_sessions ADD COLUMN placeholders_next INTEGER NOT NULL DEFAULT 1;",
    // 10: what the web view (front/ui) shows of one execution: its trace events, logs and
    // error as the client saw them (redacted), bounded; a JSON object (`audit::AuditDetail`).
    "ALTER TABLE audit ADD COLUMN detail TEXT;",
];

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

/// The state store. Cheap to clone; every clone shares one connection.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
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
    /// Opens (creating if needed) the state file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
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
            conn: Arc::new(Mutex::new(conn)),
            commits: Arc::default(),
            path: path.to_path_buf(),
            tenant: Arc::from(crate::context::principal::DEFAULT_TENANT),
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

    /// The file this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the connection (blocking; use [`Store::run`] from async code).
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back any
        // open transaction when the `Transaction` guard is dropped.
        let mut conn = match self.conn.lock() {
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

    /// `PRAGMA integrity_check`: `Ok(())` when it answers `ok`.
    pub fn integrity_check(&self) -> Result<(), StoreError> {
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
        code: Option<&str>,
    ) -> Result<(), StoreError> {
        let aborted = outcome.error_code().is_some_and(graph::is_aborted);
        let last = code.map(|code| {
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
        self.write(|tx| {
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
