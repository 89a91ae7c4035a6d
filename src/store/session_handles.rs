//! The sessions of MCP 2026-07-28 session handles (`front::mcp::handles`) in the store. A
//! handle's session is an ordinary row of `state_sessions`, whose scope names the tenant, the
//! principal and the handle's digest: so its values, labels and placeholders live where a
//! protocol session's do, every gateway on the same database sees it, and it outlives a restart.
//! What a handle adds is that the row must exist: a session is only ever *opened* by minting a
//! handle, and a handle is only *resumed* if its row is there and was used within the TTL.
//! Another principal's handle names a scope of that principal, which the caller's scope never
//! is, so it is not found either.
//!
//! The same module keeps the operator's view of a scope's data-flow labels: read them, clear
//! them.

use super::{Store, StoreError};
use crate::context::flow::LabelSource;
use crate::context::session::{SessionOptions, SessionScope};
use rusqlite::{params, OptionalExtension};

impl Store {
    /// Opens the session of a newly minted handle: its row, used now. When its principal
    /// already holds `options.max_handles` live handle sessions, the least recently used ones
    /// are closed (their values and row deleted) to make room; returns how many.
    pub fn open_handle_session(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<u64, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.open_handle_session(scope, options, now_ms);
        }
        let key = scope.key();
        let prefix = handle_prefix(scope, &key);
        let live_since = now_ms - options.ttl_ms as f64;
        self.write(|tx| {
            let live: Vec<String> = tx
                .prepare_cached(
                    "SELECT scope FROM state_sessions
                     WHERE substr(scope, 1, length(?1)) = ?1 AND used_at >= ?2 AND scope <> ?3
                     ORDER BY used_at ASC",
                )?
                .query_map(params![prefix, live_since, key], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let over = (live.len() as u64 + 1).saturating_sub(options.max_handles);
            for old in live.iter().take(over as usize) {
                tx.prepare_cached("DELETE FROM state_values WHERE scope = ?1")?
                    .execute(params![old])?;
                tx.prepare_cached("DELETE FROM state_sessions WHERE scope = ?1")?
                    .execute(params![old])?;
            }
            tx.prepare_cached(
                "INSERT INTO state_sessions (scope, tenant, used_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope) DO UPDATE SET used_at = excluded.used_at",
            )?
            .execute(params![key, scope.tenant, now_ms])?;
            Ok(over)
        })
    }

    /// Whether `scope` is an open session used within `options`' TTL; if it is, it is renewed.
    /// A session past its TTL is not resumed (the sweeper deletes it), whether or not the
    /// sweeper has run.
    pub fn resume_handle_session(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.resume_handle_session(scope, options, now_ms);
        }
        let key = scope.key();
        self.write(|tx| {
            let used_at: Option<f64> = tx
                .prepare_cached("SELECT used_at FROM state_sessions WHERE scope = ?1")?
                .query_row(params![key], |r| r.get(0))
                .optional()?;
            match used_at {
                Some(t) if now_ms - t <= options.ttl_ms as f64 => {
                    tx.prepare_cached("UPDATE state_sessions SET used_at = ?2 WHERE scope = ?1")?
                        .execute(params![key, now_ms])?;
                    Ok(true)
                }
                _ => Ok(false),
            }
        })
    }

    /// Forgets the data-flow labels `scope`'s executions read (an operator's decision);
    /// whether there were any.
    pub fn clear_session_labels(&self, scope: &SessionScope) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.clear_session_labels(scope);
        }
        let key = scope.key();
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE state_sessions SET labels = '[]' WHERE scope = ?1 AND labels <> '[]'",
                params![key],
            )?;
            Ok(n > 0)
        })
    }

    /// Clears `scope`'s labels and, when it held some, writes the clear to the audit log as a
    /// record of `by` (the operator) through `front`, described as `what`, with the labels
    /// cleared. Returns what was cleared.
    pub fn clear_labels_on_record(
        &self,
        scope: &SessionScope,
        by: &str,
        front: &str,
        what: String,
    ) -> Result<Vec<LabelSource>, StoreError> {
        let labels = self.session_labels(scope)?;
        if labels.is_empty() || !self.clear_session_labels(scope)? {
            return Ok(Vec::new());
        }
        let record = super::audit::AuditRecord {
            id: 0,
            execution_id: None,
            ts: crate::trace::now_ms(),
            principal: by.to_string(),
            tenant: scope.tenant.clone(),
            client: None,
            front: front.to_string(),
            code_sha256: super::audit_options::sha256_hex(what.as_bytes()),
            code_bytes: Some(what.len() as u64),
            code: Some(what),
            outcome: "OK".into(),
            duration_ms: 0.0,
            calls: Vec::new(),
            labels: labels.iter().map(|l| l.label.clone()).collect(),
            detail: None,
            write_key: None,
        };
        self.append_audit(&record)?;
        Ok(labels)
    }

    /// The labels of `scope` if it was used within `options`' TTL (an expired scope's labels
    /// no longer count, swept or not).
    pub fn live_session_labels(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Vec<LabelSource>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.live_session_labels(scope, options, now_ms);
        }
        let key = scope.key();
        let row: Option<(String, f64)> = self.with(|c| {
            Ok(
                c.prepare_cached("SELECT labels, used_at FROM state_sessions WHERE scope = ?1")?
                    .query_row(params![key], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?,
            )
        })?;
        Ok(match row {
            Some((text, used)) if now_ms - used <= options.ttl_ms as f64 => {
                super::session_state::labels_of(&text)
            }
            _ => Vec::new(),
        })
    }
}

/// The start every handle session key of `scope`'s principal shares: the key without the
/// handle's digest (every digest has the same length, so no other scope matches it).
pub(crate) fn handle_prefix<'a>(scope: &SessionScope, key: &'a str) -> &'a str {
    let digest = scope.session.strip_prefix("handle:").map_or(0, str::len);
    &key[..key.len() - digest]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Suite: a handle's session is resumed only once opened, by its own scope, within the TTL;
    /// labels are cleared on request.
    pub(crate) fn handle_sessions_open_resume_and_expire(s: &Store) {
        let options = SessionOptions {
            ttl_ms: 1000,
            ..SessionOptions::default()
        };
        let mine = SessionScope::new("t", "token:a", "handle:1");
        let theirs = SessionScope::new("t", "token:b", "handle:1");
        assert!(!s.resume_handle_session(&mine, &options, 10.0).unwrap());
        assert_eq!(s.open_handle_session(&mine, &options, 10.0).unwrap(), 0);
        assert!(s.resume_handle_session(&mine, &options, 900.0).unwrap());
        assert!(!s.resume_handle_session(&theirs, &options, 900.0).unwrap());
        // Renewed at 900: alive at 1800, gone after 1900 idle.
        assert!(s.resume_handle_session(&mine, &options, 1800.0).unwrap());
        assert!(!s.resume_handle_session(&mine, &options, 2801.0).unwrap());
        let label = LabelSource {
            label: "private".into(),
            tool: "crm:get".into(),
            at_ms: 1.0,
            earlier: false,
            execution: None,
        };
        s.add_session_labels(&mine, &[label], &options, 3000.0)
            .unwrap();
        assert_eq!(
            s.live_session_labels(&mine, &options, 3500.0)
                .unwrap()
                .len(),
            1
        );
        assert!(s
            .live_session_labels(&mine, &options, 4001.0)
            .unwrap()
            .is_empty());
        assert!(s.clear_session_labels(&mine).unwrap());
        assert!(!s.clear_session_labels(&mine).unwrap());
        assert!(s.session_labels(&mine).unwrap().is_empty());
        // At most `max_handles` live handle sessions per principal: the least recently used
        // closes first; another principal's and a protocol session do not count.
        let capped = SessionOptions {
            max_handles: 2,
            ..options
        };
        let digest = |c: char| format!("handle:{}", c.to_string().repeat(64));
        let h = |c: char| SessionScope::new("t", "token:c", digest(c));
        let other = SessionScope::new("t", "token:c2", digest('e'));
        s.open_handle_session(&other, &capped, 5000.0).unwrap();
        let protocol = SessionScope::new("t", "token:c", "mcp-session");
        s.open_handle_session(&protocol, &capped, 5000.0).unwrap();
        assert_eq!(s.open_handle_session(&h('a'), &capped, 5001.0).unwrap(), 0);
        assert_eq!(s.open_handle_session(&h('b'), &capped, 5002.0).unwrap(), 0);
        assert!(s.resume_handle_session(&h('a'), &capped, 5003.0).unwrap());
        assert_eq!(s.open_handle_session(&h('c'), &capped, 5004.0).unwrap(), 1);
        assert!(
            !s.resume_handle_session(&h('b'), &capped, 5005.0).unwrap(),
            "the least recently used"
        );
        assert!(s.resume_handle_session(&h('a'), &capped, 5005.0).unwrap());
        assert!(s.resume_handle_session(&h('c'), &capped, 5005.0).unwrap());
        assert!(s.resume_handle_session(&other, &capped, 5005.0).unwrap());
        assert!(s.resume_handle_session(&protocol, &capped, 5005.0).unwrap());
    }
}
