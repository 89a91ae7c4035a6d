//! Session state in the store: the JSON values a session's scripts keep with `store(key, value)`,
//! by session scope and key, and when each session was last used.
//!
//! Every operation is one write transaction that first renews the session: a session unused for
//! longer than its TTL loses its values before anything else happens, so an expired value is
//! never read, whether or not the sweeper ([`Store::sweep_state`]) has run yet. The quotas
//! (per value, keys and bytes per session) are checked in the same transaction as the write, so
//! two hosts writing one session at once cannot both pass them.

use super::{Store, StoreError};
use crate::context::flow::LabelSource;
use crate::context::session::{SessionOptions, SessionScope};
use rusqlite::{params, OptionalExtension, Transaction};

/// One kept value, as `list_state` shows it (never the value itself).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StateEntry {
    pub key: String,
    /// Bytes of the value's JSON.
    pub bytes: u64,
    /// When it was stored, milliseconds since the Unix epoch.
    pub stored_at: f64,
    /// The data-flow labels its execution had read when it stored it (by name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Where each label was first read.
    #[serde(skip)]
    pub sources: Vec<LabelSource>,
}

/// Labels as the store keeps them (JSON text); unreadable text reads as none.
pub(super) fn labels_text(labels: &[LabelSource]) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "[]".into())
}

pub(crate) fn labels_of(text: &str) -> Vec<LabelSource> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Why a `store` was refused: which bound, its config key and the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateQuotaError {
    #[error("the value is {bytes} bytes of JSON; one value may be at most {max} bytes (sandbox.session.max_value_bytes)")]
    Value { bytes: u64, max: u64 },
    #[error("the session already holds {keys} keys, the most it may (sandbox.session.max_keys); remove() one first")]
    Keys { keys: u64 },
    #[error("the session would hold {bytes} bytes of keys and values; it may hold at most {max} (sandbox.session.max_bytes); remove() some first")]
    Bytes { bytes: u64, max: u64 },
}

/// A session's placeholder map as the store keeps it: sealed by the execution layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SealedMap {
    /// The next placeholder number (in the clear).
    pub next: u64,
    /// `(nonce, ciphertext)`, when the session has a map.
    pub sealed: Option<(Vec<u8>, Vec<u8>)>,
}

/// A kept value as the store holds it. Which one a row is, is marked (`value_nonce` is set
/// for a sealed one), never guessed from its bytes: rows written before values were sealed are
/// JSON text and still load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredValue {
    /// The value's JSON text in the clear.
    Json(String),
    /// The value's JSON text sealed by the execution layer (`exec::state`): nonce, ciphertext,
    /// and the JSON text's size in bytes, which is what the quotas and `list_state` count.
    Sealed {
        nonce: Vec<u8>,
        sealed: Vec<u8>,
        bytes: u64,
    },
}

impl StoredValue {
    /// Bytes of the value's JSON text (sealed or not).
    pub fn bytes(&self) -> u64 {
        match self {
            StoredValue::Json(text) => text.len() as u64,
            StoredValue::Sealed { bytes, .. } => *bytes,
        }
    }

    /// The row's columns: `(value, value_nonce, value_sealed)` (a sealed row's `value` is '').
    pub(super) fn columns(&self) -> (&str, Option<&[u8]>, Option<&[u8]>) {
        match self {
            StoredValue::Json(text) => (text, None, None),
            StoredValue::Sealed { nonce, sealed, .. } => ("", Some(nonce), Some(sealed)),
        }
    }

    /// The value of a row's columns (`bytes`: its `bytes` column).
    pub(super) fn of_row(
        text: String,
        nonce: Option<Vec<u8>>,
        sealed: Option<Vec<u8>>,
        bytes: i64,
    ) -> StoredValue {
        match (nonce, sealed) {
            (Some(nonce), Some(sealed)) => StoredValue::Sealed {
                nonce,
                sealed,
                bytes: bytes.max(0) as u64,
            },
            _ => StoredValue::Json(text),
        }
    }
}

/// What a `store` did: the value was kept, or a quota refused it.
pub type Stored = Result<(), StateQuotaError>;

impl Store {
    /// Keeps `value` under `key` in `scope`'s state, within `options`' quotas (which count
    /// the size of its JSON text, sealed or not).
    pub fn store_state(
        &self,
        scope: &SessionScope,
        key: &str,
        value: &StoredValue,
        labels: &[LabelSource],
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Stored, StoreError> {
        let labels = labels_text(labels);
        let bytes = value.bytes();
        if bytes > options.max_value_bytes {
            return Ok(Err(StateQuotaError::Value {
                bytes,
                max: options.max_value_bytes,
            }));
        }
        if let Some(pg) = self.pg() {
            return pg.store_state(scope, key, value, &labels, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            let (keys, held): (u64, u64) = tx.query_row(
                "SELECT count(*), coalesce(sum(bytes + length(CAST(key AS BLOB))), 0)
                 FROM state_values WHERE scope = ?1 AND key <> ?2",
                params![scope_key, key],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )?;
            if keys >= options.max_keys {
                return Ok(Err(StateQuotaError::Keys { keys }));
            }
            let total = held + bytes + key.len() as u64;
            if total > options.max_bytes {
                return Ok(Err(StateQuotaError::Bytes {
                    bytes: total,
                    max: options.max_bytes,
                }));
            }
            let (text, nonce, sealed) = value.columns();
            tx.prepare_cached(
                "INSERT INTO state_values
                    (scope, key, value, bytes, stored_at, labels, value_nonce, value_sealed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (scope, key) DO UPDATE SET
                    value = excluded.value, bytes = excluded.bytes, stored_at = excluded.stored_at,
                    labels = excluded.labels, value_nonce = excluded.value_nonce,
                    value_sealed = excluded.value_sealed",
            )?
            .execute(params![
                scope_key,
                key,
                text,
                bytes as i64,
                now_ms,
                labels,
                nonce,
                sealed
            ])?;
            Ok(Ok(()))
        })
    }

    /// The value kept under `key` in `scope`'s state, with the labels it was stored after.
    pub fn load_state(
        &self,
        scope: &SessionScope,
        key: &str,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Option<(StoredValue, Vec<LabelSource>)>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.load_state(scope, key, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            Ok(tx
                .prepare_cached(
                    "SELECT value, labels, value_nonce, value_sealed, bytes FROM state_values
                     WHERE scope = ?1 AND key = ?2",
                )?
                .query_row(params![scope_key, key], |r| {
                    let value = StoredValue::of_row(r.get(0)?, r.get(2)?, r.get(3)?, r.get(4)?);
                    Ok((value, labels_of(&r.get::<_, String>(1)?)))
                })
                .optional()?)
        })
    }

    /// The labels `scope`'s earlier executions read (empty for a new or expired session).
    pub fn session_labels(&self, scope: &SessionScope) -> Result<Vec<LabelSource>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.session_labels(scope);
        }
        let scope_key = scope.key();
        let text: Option<String> = self.with(|c| {
            Ok(
                c.prepare_cached("SELECT labels FROM state_sessions WHERE scope = ?1")?
                    .query_row(params![scope_key], |r| r.get(0))
                    .optional()?,
            )
        })?;
        Ok(text.map(|t| labels_of(&t)).unwrap_or_default())
    }

    /// Adds `labels` to what `scope`'s executions have read (each label once, the first
    /// source kept), renewing the session.
    pub fn add_session_labels(
        &self,
        scope: &SessionScope,
        labels: &[LabelSource],
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.add_session_labels(scope, labels, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            let text: String = tx
                .prepare_cached("SELECT labels FROM state_sessions WHERE scope = ?1")?
                .query_row(params![scope_key], |r| r.get(0))?;
            let mut held = labels_of(&text);
            for l in labels {
                crate::context::flow::join(&mut held, l.clone());
            }
            tx.execute(
                "UPDATE state_sessions SET labels = ?2 WHERE scope = ?1",
                params![scope_key, labels_text(&held)],
            )?;
            Ok(())
        })
    }

    /// Removes `key` from `scope`'s state; whether it was there.
    pub fn remove_state(
        &self,
        scope: &SessionScope,
        key: &str,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.remove_state(scope, key, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            let n = tx.execute(
                "DELETE FROM state_values WHERE scope = ?1 AND key = ?2",
                params![scope_key, key],
            )?;
            Ok(n > 0)
        })
    }

    /// Every key of `scope`'s state with its size and age, by key.
    pub fn list_state(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Vec<StateEntry>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.list_state(scope, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            let mut stmt = tx.prepare_cached(
                "SELECT key, bytes, stored_at, labels FROM state_values WHERE scope = ?1 ORDER BY key",
            )?;
            let rows = stmt.query_map(params![scope_key], |r| {
                let sources = labels_of(&r.get::<_, String>(3)?);
                Ok(StateEntry {
                    key: r.get(0)?,
                    bytes: r.get::<_, i64>(1)? as u64,
                    stored_at: r.get(2)?,
                    labels: sources.iter().map(|s| s.label.clone()).collect(),
                    sources,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// `scope`'s sealed placeholder map: its next number, and `(nonce, sealed)` when it has one.
    pub fn load_placeholders(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<SealedMap, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.load_placeholders(scope, options, now_ms);
        }
        let scope_key = scope.key();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            Ok(tx
                .prepare_cached(
                    "SELECT placeholders_next, placeholders_nonce, placeholders FROM state_sessions WHERE scope = ?1",
                )?
                .query_row(params![scope_key], |r| {
                    let next: i64 = r.get(0)?;
                    let nonce: Option<Vec<u8>> = r.get(1)?;
                    let sealed: Option<Vec<u8>> = r.get(2)?;
                    Ok(SealedMap {
                        next: next.max(1) as u64,
                        sealed: nonce.zip(sealed),
                    })
                })?)
        })
    }

    /// Keeps `scope`'s sealed placeholder map, renewing the session.
    pub fn save_placeholders(
        &self,
        scope: &SessionScope,
        map: &SealedMap,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.save_placeholders(scope, map, options, now_ms);
        }
        let scope_key = scope.key();
        let (nonce, sealed) = map.sealed.clone().unzip();
        self.write(|tx| {
            renew(tx, scope, &scope_key, options, now_ms)?;
            tx.execute(
                "UPDATE state_sessions SET placeholders_next = ?2, placeholders_nonce = ?3, placeholders = ?4 WHERE scope = ?1",
                params![scope_key, map.next.min(i64::MAX as u64) as i64, nonce, sealed],
            )?;
            Ok(())
        })
    }

    /// Deletes every session unused for longer than `options`' TTL, with its values. Returns
    /// how many sessions were deleted.
    pub fn sweep_state(&self, options: &SessionOptions, now_ms: f64) -> Result<u64, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.sweep_state(options, now_ms);
        }
        let cutoff = now_ms - options.ttl_ms as f64;
        self.write(|tx| {
            tx.execute(
                "DELETE FROM state_values WHERE scope IN
                    (SELECT scope FROM state_sessions WHERE used_at < ?1)",
                params![cutoff],
            )?;
            let n = tx.execute(
                "DELETE FROM state_sessions WHERE used_at < ?1",
                params![cutoff],
            )?;
            Ok(n as u64)
        })
    }
}

/// Marks `scope` used now; first drops its values if it had been idle past the TTL.
fn renew(
    tx: &Transaction<'_>,
    scope: &SessionScope,
    scope_key: &str,
    options: &SessionOptions,
    now_ms: f64,
) -> Result<(), StoreError> {
    let used_at: Option<f64> = tx
        .prepare_cached("SELECT used_at FROM state_sessions WHERE scope = ?1")?
        .query_row(params![scope_key], |r| r.get(0))
        .optional()?;
    if used_at.is_some_and(|t| now_ms - t > options.ttl_ms as f64) {
        tx.execute(
            "DELETE FROM state_values WHERE scope = ?1",
            params![scope_key],
        )?;
        // The placeholder map goes with the session; its next number stays, so a placeholder
        // from before never names a value seen after.
        tx.execute(
            "UPDATE state_sessions SET placeholders_nonce = NULL, placeholders = NULL WHERE scope = ?1",
            params![scope_key],
        )?;
    }
    tx.prepare_cached(
        "INSERT INTO state_sessions (scope, tenant, used_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope) DO UPDATE SET used_at = excluded.used_at",
    )?
    .execute(params![scope_key, scope.tenant, now_ms])?;
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn json(text: &str) -> StoredValue {
        StoredValue::Json(text.into())
    }

    pub(crate) fn values_are_kept_per_scope(s: &Store) {
        let o = SessionOptions::default();
        let a = SessionScope::new("t1", "p1", "s1");
        s.store_state(&a, "k", &json("[1,2]"), &[], &o, 1.0)
            .unwrap()
            .unwrap();
        assert_eq!(
            s.load_state(&a, "k", &o, 2.0).unwrap().map(|v| v.0),
            Some(json("[1,2]"))
        );
        for other in [
            SessionScope::new("t2", "p1", "s1"),
            SessionScope::new("t1", "p2", "s1"),
            SessionScope::new("t1", "p1", "s2"),
        ] {
            assert_eq!(s.load_state(&other, "k", &o, 3.0).unwrap(), None);
            assert!(s.list_state(&other, &o, 3.0).unwrap().is_empty());
        }
        let listed = s.list_state(&a, &o, 4.0).unwrap();
        assert_eq!(
            listed,
            vec![StateEntry {
                key: "k".into(),
                bytes: 5,
                stored_at: 1.0,
                labels: vec![],
                sources: vec![],
            }]
        );
        assert!(s.remove_state(&a, "k", &o, 5.0).unwrap());
        assert!(!s.remove_state(&a, "k", &o, 6.0).unwrap());
    }

    pub(crate) fn quotas_name_their_bound(s: &Store) {
        let o = SessionOptions {
            max_value_bytes: 10,
            max_keys: 2,
            max_bytes: 20,
            ..SessionOptions::default()
        };
        let a = SessionScope::new("t", "p", "s");
        assert_eq!(
            s.store_state(&a, "k", &json("12345678901"), &[], &o, 1.0)
                .unwrap(),
            Err(StateQuotaError::Value { bytes: 11, max: 10 })
        );
        s.store_state(&a, "a", &json("1234567890"), &[], &o, 1.0)
            .unwrap()
            .unwrap();
        assert_eq!(
            s.store_state(&a, "b", &json("1234567890"), &[], &o, 1.0)
                .unwrap(),
            Err(StateQuotaError::Bytes { bytes: 22, max: 20 })
        );
        s.store_state(&a, "b", &json("1"), &[], &o, 1.0)
            .unwrap()
            .unwrap();
        assert_eq!(
            s.store_state(&a, "c", &json("1"), &[], &o, 1.0).unwrap(),
            Err(StateQuotaError::Keys { keys: 2 })
        );
        // Replacing a key does not count it twice.
        s.store_state(&a, "b", &json("123456"), &[], &o, 1.0)
            .unwrap()
            .unwrap();
    }

    /// A sealed value keeps its mark, bytes and size (the JSON text's, for the quotas and
    /// `list_state`); a clear row (as an older build wrote it) loads as JSON text.
    pub(crate) fn sealed_values_keep_their_mark_and_size(s: &Store) {
        let o = SessionOptions {
            max_bytes: 40,
            ..SessionOptions::default()
        };
        let a = SessionScope::new("t", "p", "s");
        let sealed = StoredValue::Sealed {
            nonce: vec![7; 24],
            sealed: vec![0, 1, 2, 255],
            bytes: 30,
        };
        s.store_state(&a, "k", &sealed, &[], &o, 1.0)
            .unwrap()
            .unwrap();
        let clear = StoredValue::Json("[1]".into());
        s.store_state(&a, "c", &clear, &[], &o, 1.0)
            .unwrap()
            .unwrap();
        assert_eq!(s.load_state(&a, "k", &o, 2.0).unwrap().unwrap().0, sealed);
        assert_eq!(s.load_state(&a, "c", &o, 2.0).unwrap().unwrap().0, clear);
        let sizes: Vec<u64> = s
            .list_state(&a, &o, 2.0)
            .unwrap()
            .iter()
            .map(|e| e.bytes)
            .collect();
        assert_eq!(sizes, [3, 30]);
        // 30 + 1 (key) + 3 + 1 held, 6 + 1 more: over 40, counted on the JSON text's size.
        let more = StoredValue::Sealed {
            nonce: vec![7; 24],
            sealed: vec![1],
            bytes: 6,
        };
        assert_eq!(
            s.store_state(&a, "m", &more, &[], &o, 3.0).unwrap(),
            Err(StateQuotaError::Bytes { bytes: 42, max: 40 })
        );
        // Sealed again in the clear: the mark goes with the row.
        s.store_state(&a, "k", &clear, &[], &o, 4.0)
            .unwrap()
            .unwrap();
        assert_eq!(s.load_state(&a, "k", &o, 5.0).unwrap().unwrap().0, clear);
    }

    /// A file an older build wrote (schema 11, values as JSON text) is migrated; its values load.
    #[test]
    fn values_an_older_build_wrote_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let s = Store::open(&path).unwrap();
        s.with(|c| {
            Ok(c.execute_batch(
                "ALTER TABLE state_values DROP COLUMN value_nonce;
                 ALTER TABLE state_values DROP COLUMN value_sealed;
                 DROP TABLE mcp_sessions; DROP TABLE yielded_executions; DROP TABLE pending_approvals;
                 ALTER TABLE capabilities DROP COLUMN language;
                 DROP TABLE learning_writes; DROP INDEX audit_by_write_key;
                 ALTER TABLE audit DROP COLUMN write_key;
                 DROP TABLE audit_links; DROP TABLE audit_chains; DROP TABLE audit_checkpoints;
                 DROP TABLE audit_unchained; ALTER TABLE audit DROP COLUMN execution_id;
                 PRAGMA user_version = 11;
                 INSERT INTO state_sessions (scope, tenant, used_at) VALUES ('1:t1:p1:s', 't', 1);
                 INSERT INTO state_values (scope, key, value, bytes, stored_at, labels)
                    VALUES ('1:t1:p1:s', 'k', '{\"a\":1}', 7, 1, '[]');",
            )?)
        })
        .unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let (o, a) = (SessionOptions::default(), SessionScope::new("t", "p", "s"));
        assert_eq!(
            s.load_state(&a, "k", &o, 2.0).unwrap().unwrap().0,
            json(r#"{"a":1}"#)
        );
    }

    pub(crate) fn an_idle_session_loses_its_values(s: &Store) {
        let o = SessionOptions {
            ttl_ms: 1000,
            ..SessionOptions::default()
        };
        let a = SessionScope::new("t", "p", "s");
        let b = SessionScope::new("t", "p", "b");
        s.store_state(&a, "k", &json("1"), &[], &o, 0.0)
            .unwrap()
            .unwrap();
        s.store_state(&b, "k", &json("1"), &[], &o, 0.0)
            .unwrap()
            .unwrap();
        // Used within the TTL: kept, and the TTL runs from the last use.
        assert!(s.load_state(&a, "k", &o, 900.0).unwrap().is_some());
        assert!(s.load_state(&a, "k", &o, 1800.0).unwrap().is_some());
        // Idle past it: gone, before and without a sweep.
        assert_eq!(s.load_state(&a, "k", &o, 3000.0).unwrap(), None);
        assert_eq!(
            s.sweep_state(&o, 3000.0).unwrap(),
            1,
            "b expired; a was just used"
        );
        assert_eq!(s.load_state(&b, "k", &o, 3000.0).unwrap(), None);
    }
}
