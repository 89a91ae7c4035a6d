//! The audit log: one record per execution (who, from where, which code, what came out) and one
//! row per tool or capability call in it. Written only by the host, in one transaction per
//! execution, before the execution's outcome is handed back; scripts have no way to reach it.

use super::audit_chain::{self, Part, Stored};
use super::audit_content::{storable, write_storable};
use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};

pub use super::audit_record::{
    AuditCall, AuditDetail, AuditRecord, DetailLog, MAX_DETAIL_LOGS, MAX_DETAIL_LOG_BYTES,
    MAX_DETAIL_TRACES,
};

/// What `audit` selects; every given filter must hold.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Records at or after this time (ms since the epoch).
    pub since_ms: Option<f64>,
    /// Records before this time (ms since the epoch).
    pub until_ms: Option<f64>,
    pub principal: Option<String>,
    pub tenant: Option<String>,
    /// Records with at least one call of this `server:tool`.
    pub tool: Option<String>,
    /// Records whose outcome, or one of whose calls, has this error code.
    pub error: Option<String>,
    /// The record of this execution (`replay EXECUTION_ID`).
    pub execution_id: Option<String>,
    /// At most this many records, newest last.
    pub limit: usize,
}

/// The outcome of a write-ahead record whose execution has not ended.
pub const RUNNING: &str = "RUNNING";

/// The columns of a record computed from it once per write: what is bound and what the
/// chain hashes are the same text.
pub(super) struct Columns {
    pub labels: Option<String>,
    pub detail: Option<String>,
    pub code_bytes: Option<i64>,
}

impl Columns {
    pub(super) fn of(r: &AuditRecord) -> Columns {
        Columns {
            labels: labels_column(&r.labels),
            detail: detail_column(r.detail.as_ref()),
            code_bytes: r.code_bytes.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
        }
    }

    /// Record `r`, stored as row `id`, as the chain covers it.
    pub(super) fn stored<'a>(&'a self, id: i64, r: &'a AuditRecord) -> Stored<'a> {
        Stored {
            id,
            execution_id: r.execution_id.as_deref(),
            ts: r.ts,
            principal: &r.principal,
            tenant: &r.tenant,
            client: r.client.as_deref(),
            front: &r.front,
            code: r.code.as_deref(),
            code_sha256: &r.code_sha256,
            code_bytes: self.code_bytes,
            outcome: &r.outcome,
            duration_ms: r.duration_ms,
            labels: self.labels.as_deref(),
            detail: self.detail.as_deref(),
            calls: &r.calls,
        }
    }
}

/// Inserts a record's head; `None` when a record with its write key is there already.
fn insert_head(
    tx: &rusqlite::Transaction<'_>,
    r: &AuditRecord,
    c: &Columns,
) -> Result<Option<i64>, StoreError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO audit (ts, principal, tenant, client, front, code, code_sha256, code_bytes, outcome, duration_ms, labels, detail, write_key, execution_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) ON CONFLICT (write_key) DO NOTHING",
    )?;
    let added = stmt.execute(params![
        r.ts,
        r.principal,
        r.tenant,
        r.client,
        r.front,
        r.code,
        r.code_sha256,
        c.code_bytes,
        r.outcome,
        r.duration_ms,
        c.labels,
        c.detail,
        r.write_key,
        r.execution_id
    ])?;
    Ok((added == 1).then(|| tx.last_insert_rowid()))
}

/// The head of record `r`: inserted (and its head linked into the chain), or the one already
/// written with its write key.
fn head(
    tx: &rusqlite::Transaction<'_>,
    r: &AuditRecord,
    c: &Columns,
) -> Result<(i64, bool), StoreError> {
    if let Some(id) = insert_head(tx, r, c)? {
        return Ok((id, true));
    }
    let id = tx
        .prepare_cached("SELECT id FROM audit WHERE write_key = ?1")?
        .query_row(params![r.write_key], |row| row.get(0))?;
    Ok((id, false))
}

/// The detail as the `detail` column keeps it: JSON, or NULL for none.
pub(super) fn detail_column(detail: Option<&AuditDetail>) -> Option<String> {
    detail.and_then(|d| serde_json::to_string(d).ok())
}

/// The labels as the `labels` column keeps them: a JSON array, or NULL for none.
pub(super) fn labels_column(labels: &[String]) -> Option<String> {
    (!labels.is_empty()).then(|| serde_json::to_string(labels).unwrap_or_default())
}

impl Store {
    /// The write-ahead record of an execution (`r` without its calls, outcome [`RUNNING`]),
    /// committed before its first tool call; returns its id for [`Store::complete_audit`].
    /// Every record is written [`storable`](super::audit_content) (a NUL as `␀`), and reduced
    /// when the store refuses its content.
    pub fn begin_audit(&self, r: &AuditRecord) -> Result<i64, StoreError> {
        write_storable(r, |r| {
            if let Some(pg) = self.pg() {
                return pg.begin_audit(r);
            }
            self.write(|tx| {
                let c = Columns::of(r);
                let (id, added) = head(tx, r, &c)?;
                if added {
                    audit_chain::append(tx, &[(Part::Head, c.stored(id, r))])?;
                }
                Ok(id)
            })
        })
    }

    /// Completes the write-ahead record `id` with the outcome, duration and calls of `r`, in
    /// one transaction.
    pub fn complete_audit(&self, id: i64, r: &AuditRecord) -> Result<(), StoreError> {
        write_storable(r, |r| {
            if let Some(pg) = self.pg() {
                return pg.complete_audit(id, r);
            }
            self.write(|tx| complete(tx, id, r))
        })
    }

    /// Appends one record (and its calls) in one transaction; returns its id.
    pub fn append_audit(&self, r: &AuditRecord) -> Result<i64, StoreError> {
        write_storable(r, |r| {
            if let Some(pg) = self.pg() {
                return pg.append_audit(r);
            }
            self.write(|tx| insert(tx, r))
        })
    }

    /// Commits `r` — completing the write-ahead record `ahead`, else appending it — on this
    /// thread when that cannot wait ([`Store::try_write_now`]); `None` (nothing written) when
    /// it would, and then [`Store::complete_audit`] or [`Store::append_audit`] does it.
    pub fn try_commit_audit_now(
        &self,
        ahead: Option<i64>,
        r: &AuditRecord,
    ) -> Option<Result<(), StoreError>> {
        let r = storable(r);
        let done = self.try_write_now(|tx| match ahead {
            Some(id) => complete(tx, id, &r),
            None => insert(tx, &r).map(|_| ()),
        });
        match done {
            // Written reduced by the caller's blocking write ([`write_storable`]).
            Some(Err(e)) if e.refused_content() => None,
            done => done,
        }
    }
}

fn complete(tx: &rusqlite::Transaction<'_>, id: i64, r: &AuditRecord) -> Result<(), StoreError> {
    let c = Columns::of(r);
    if update_head(tx, id, r, &c)? == 0 {
        // Pruned meanwhile (retention): the record is written whole again.
        return insert(tx, r).map(|_| ());
    }
    insert_calls(tx, id, r)?;
    audit_chain::append(tx, &[(Part::End, c.stored(id, r))])
}

/// Sets what the end of the execution tells of record `id`; how many rows that changed.
fn update_head(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    r: &AuditRecord,
    c: &Columns,
) -> Result<usize, StoreError> {
    Ok(tx
        .prepare_cached(
            "UPDATE audit SET outcome = ?2, duration_ms = ?3, labels = ?4, detail = ?5 WHERE id = ?1",
        )?
        .execute(params![id, r.outcome, r.duration_ms, c.labels, c.detail])?)
}

/// The calls of record `id`; a call already there is left as it is, so a completion retried
/// after a commit whose answer was lost writes none twice.
fn insert_calls(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    r: &AuditRecord,
) -> Result<(), StoreError> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO audit_calls (audit_id, seq, kind, tool, args_sha256, args, error, duration_ms, approval)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (audit_id, seq) DO NOTHING",
    )?;
    for (seq, c) in r.calls.iter().enumerate() {
        stmt.execute(params![
            id,
            seq as i64,
            c.kind,
            c.tool,
            c.args_sha256,
            c.args,
            c.error,
            c.duration_ms,
            c.approval
        ])?;
    }
    Ok(())
}

impl Store {
    /// The records matching `filter`, oldest first (the newest `limit` of them).
    pub fn query_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.query_audit(filter);
        }
        self.with(|conn| {
            let mut sql = format!("SELECT {HEAD_COLUMNS} FROM audit a WHERE 1 = 1");
            let mut args: Vec<rusqlite::types::Value> = Vec::new();
            if let Some(since) = filter.since_ms {
                args.push(since.into());
                sql.push_str(&format!(" AND a.ts >= ?{}", args.len()));
            }
            if let Some(until) = filter.until_ms {
                args.push(until.into());
                sql.push_str(&format!(" AND a.ts < ?{}", args.len()));
            }
            if let Some(p) = &filter.principal {
                args.push(p.clone().into());
                sql.push_str(&format!(" AND a.principal = ?{}", args.len()));
            }
            if let Some(t) = &filter.tenant {
                args.push(t.clone().into());
                sql.push_str(&format!(" AND a.tenant = ?{}", args.len()));
            }
            if let Some(tool) = &filter.tool {
                args.push(tool.clone().into());
                sql.push_str(&format!(
                    " AND EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.tool = ?{})",
                    args.len()
                ));
            }
            if let Some(e) = &filter.execution_id {
                args.push(e.clone().into());
                sql.push_str(&format!(" AND a.execution_id = ?{}", args.len()));
            }
            if let Some(code) = &filter.error {
                args.push(code.clone().into());
                let n = args.len();
                sql.push_str(&format!(
                    " AND (a.outcome = ?{n} OR EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.error = ?{n}))"
                ));
            }
            args.push((filter.limit.max(1) as i64).into());
            sql.push_str(&format!(" ORDER BY a.id DESC LIMIT ?{}", args.len()));
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(args), head_of)?;
            let mut records = rows.collect::<Result<Vec<_>, _>>()?;
            records.reverse();
            for rec in &mut records {
                rec.calls = calls_of(conn, rec.id)?;
            }
            Ok(records)
        })
    }

    /// Record `id` with its calls and its [`AuditDetail`], or `None` when there is none.
    pub fn audit_record(&self, id: i64) -> Result<Option<AuditRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.audit_record(id);
        }
        self.with(|conn| {
            let found = conn
                .query_row(
                    &format!("SELECT {HEAD_COLUMNS}, detail FROM audit WHERE id = ?1"),
                    params![id],
                    |r| {
                        let mut rec = head_of(r)?;
                        rec.detail = r
                            .get::<_, Option<String>>(13)?
                            .and_then(|t| serde_json::from_str(&t).ok());
                        Ok(rec)
                    },
                )
                .optional()?;
            let Some(mut rec) = found else {
                return Ok(None);
            };
            rec.calls = calls_of(conn, id)?;
            Ok(Some(rec))
        })
    }

    /// The tenants the audit log names, sorted.
    pub fn audit_tenants(&self) -> Result<Vec<String>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.audit_tenants();
        }
        self.with(|conn| {
            let mut stmt = conn.prepare("SELECT DISTINCT tenant FROM audit ORDER BY tenant")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<String>, _>>()?)
        })
    }
}

/// The columns [`head_of`] reads, in its order.
pub(super) const HEAD_COLUMNS: &str = "id, ts, principal, tenant, client, front, code, code_sha256, outcome, duration_ms, code_bytes, labels, execution_id";

/// A record without its calls and detail, from a row of [`HEAD_COLUMNS`].
fn head_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRecord> {
    Ok(AuditRecord {
        id: r.get(0)?,
        ts: r.get(1)?,
        principal: r.get(2)?,
        tenant: r.get(3)?,
        client: r.get(4)?,
        front: r.get(5)?,
        code: r.get(6)?,
        code_sha256: r.get(7)?,
        code_bytes: r.get::<_, Option<i64>>(10)?.map(|n| n.max(0) as u64),
        labels: r
            .get::<_, Option<String>>(11)?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        outcome: r.get(8)?,
        duration_ms: r.get(9)?,
        execution_id: r.get(12)?,
        calls: Vec::new(),
        detail: None,
        write_key: None,
    })
}

/// The calls of record `id`, in start order.
fn calls_of(conn: &rusqlite::Connection, id: i64) -> Result<Vec<AuditCall>, StoreError> {
    let mut calls = conn.prepare_cached(
        "SELECT kind, tool, args_sha256, args, error, duration_ms, approval FROM audit_calls
         WHERE audit_id = ?1 ORDER BY seq",
    )?;
    let rows = calls.query_map(params![id], |r| {
        Ok(AuditCall {
            kind: r.get(0)?,
            tool: r.get(1)?,
            args_sha256: r.get(2)?,
            args: r.get(3)?,
            error: r.get(4)?,
            duration_ms: r.get(5)?,
            approval: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Inserts one record (and its calls) in the open transaction `tx`; returns its id. Other
/// writes that must be audited (saving a capability) commit their record in their own
/// transaction with it.
///
/// A record whose write key is there already (its first try was committed but its answer lost,
/// or it is the write-ahead record of the same execution) completes that record instead.
///
/// Its links are appended to the chain: head and end for a new record, end for one completed.
pub(super) fn insert(tx: &rusqlite::Transaction<'_>, r: &AuditRecord) -> Result<i64, StoreError> {
    let c = Columns::of(r);
    let (id, added) = head(tx, r, &c)?;
    if !added {
        update_head(tx, id, r, &c)?;
    }
    insert_calls(tx, id, r)?;
    let stored = c.stored(id, r);
    if added {
        audit_chain::append(tx, &[(Part::Head, stored), (Part::End, stored)])?;
    } else {
        audit_chain::append(tx, &[(Part::End, stored)])?;
    }
    Ok(id)
}

#[cfg(test)]
#[path = "audit_tests.rs"]
pub(super) mod tests;
