//! The SQLite schema: its migrations, in order (PostgreSQL has its own, `pg/schema.rs`).

/// Schema migrations, applied in order; `PRAGMA user_version` is the number applied so far.
/// Append only: never edit a migration that has shipped.
pub(super) const MIGRATIONS: &[&str] = &[
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
    // 11: OAuth credentials of remote MCP servers (`store::oauth`). The OAuth code created this
    // table itself on first use before: IF NOT EXISTS keeps the logins an older file holds.
    "CREATE TABLE IF NOT EXISTS oauth_credentials (
        server TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        nonce BLOB NOT NULL,
        sealed BLOB NOT NULL,
        updated_at REAL NOT NULL
     );",
    // 12: a kept session value sealed under the operator's key (exec/state.rs): its nonce and
    // ciphertext, `value` then ''. A row without them is JSON text in the clear (written before
    // values were sealed, or with nothing to seal with), and loads as such.
    "ALTER TABLE state_values ADD COLUMN value_nonce BLOB;
     ALTER TABLE state_values ADD COLUMN value_sealed BLOB;",
    // 13: MCP sessions of `serve --http`, kept so that they go on after a restart (or through
    // another gateway on PostgreSQL): `store::mcp_sessions`.
    "CREATE TABLE mcp_sessions (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        init TEXT NOT NULL,
        seen_ms INTEGER NOT NULL
     );
     CREATE INDEX mcp_sessions_by_seen ON mcp_sessions (seen_ms);",
    // 14: yielded executions (`store::yielded`): which gateway runs each one, a cancel asked
    // for through another gateway, and its outcome once it ended (JSON text, or sealed: nonce
    // and ciphertext, `outcome` then ''); `outcome_bytes` is set exactly when it ended.
    "CREATE TABLE yielded_executions (
        id TEXT PRIMARY KEY,
        scope TEXT NOT NULL,
        gateway TEXT NOT NULL,
        started_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        outcome TEXT,
        outcome_nonce BLOB,
        outcome_sealed BLOB,
        outcome_bytes INTEGER
     ) WITHOUT ROWID;
     CREATE INDEX yielded_by_gateway ON yielded_executions (gateway);
     CREATE INDEX yielded_by_update ON yielded_executions (updated_at);",
    // 15: pending approvals (`store::approvals`): the questions waiting on a gateway's web view,
    // so any gateway's web view lists and answers them; `answer` is set by the first answer.
    "CREATE TABLE pending_approvals (
        id TEXT PRIMARY KEY,
        gateway TEXT NOT NULL,
        tenant TEXT NOT NULL,
        principal TEXT NOT NULL,
        execution_id TEXT,
        tool TEXT NOT NULL,
        rule TEXT NOT NULL,
        arguments TEXT NOT NULL,
        arguments_bytes INTEGER NOT NULL,
        truncated INTEGER NOT NULL,
        asked_at REAL NOT NULL,
        answer TEXT,
        reason TEXT,
        answered_by TEXT
     ) WITHOUT ROWID;
     CREATE INDEX pending_approvals_by_gateway ON pending_approvals (gateway);",
    // 19: the language of a capability's code (`python` runs on the runner's Python engine);
    // every capability saved before is JavaScript.
    "ALTER TABLE capabilities ADD COLUMN language TEXT NOT NULL DEFAULT 'javascript';",
    // 20: writes applied at most once (`store::write_key`): the keys of recent learning writes,
    // and each audit record's key.
    "CREATE TABLE learning_writes (key TEXT PRIMARY KEY, at REAL NOT NULL) WITHOUT ROWID;
     CREATE INDEX learning_writes_by_time ON learning_writes (at);
     ALTER TABLE audit ADD COLUMN write_key TEXT;
     CREATE UNIQUE INDEX audit_by_write_key ON audit (write_key);",
    // 21: the audit chain (`store::audit_chain`): each record's execution id; its links (a
    // head when written ahead, an end when completed), each chain's last link, the signed
    // checkpoint retention leaves where a chain now starts; and the last record written
    // before the chain existed (those are not in it).
    "ALTER TABLE audit ADD COLUMN execution_id TEXT;
     CREATE TABLE audit_links (
        chain TEXT NOT NULL,
        seq INTEGER NOT NULL,
        audit_id INTEGER NOT NULL,
        part TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (chain, seq)
     ) WITHOUT ROWID;
     CREATE INDEX audit_links_by_record ON audit_links (audit_id);
     CREATE TABLE audit_chains (
        chain TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        started_at REAL NOT NULL
     );
     CREATE TABLE audit_checkpoints (
        chain TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        prev TEXT NOT NULL,
        at REAL NOT NULL,
        pruned INTEGER NOT NULL,
        public_key TEXT,
        signature TEXT
     );
     CREATE TABLE audit_unchained AS SELECT COALESCE(MAX(id), 0) AS last_id FROM audit;",
];
