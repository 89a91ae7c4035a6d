//! The audit log on PostgreSQL (see `store::audit`): the same write-ahead record and
//! completion, one transaction each; ids come from an identity column, so gateways appending
//! at once never share one.

use super::super::audit::{AuditCall, AuditFilter, AuditRecord, Columns, HEAD_COLUMNS};
use super::super::audit_chain::Part;
use super::super::StoreError;
use super::audit_chain::append;
use super::{pipelined, Params, Pg, Transaction};
use deadpool_postgres::GenericClient;

/// The write-ahead head of a record (also a whole record's first row); no row when a record
/// with its write key is there already.
const INSERT_HEAD: &str = "INSERT INTO audit (ts, principal, tenant, client, front, code, code_sha256, code_bytes, outcome, duration_ms, labels, detail, write_key, execution_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (write_key) DO NOTHING RETURNING id";
/// The completion of a write-ahead record.
const COMPLETE_HEAD: &str =
    "UPDATE audit SET outcome = $2, duration_ms = $3, labels = $4, detail = $5 WHERE id = $1";

/// The head of record `r`, inserted (`true`) or, when a record with its write key is there
/// already, that one. The statements are prepared once per connection.
async fn head(
    c: &impl GenericClient,
    r: &AuditRecord,
    cols: &Columns,
) -> Result<(i64, bool), StoreError> {
    let st = c.prepare_cached(INSERT_HEAD).await?;
    let added = c
        .query_opt(
            &st,
            &[
                &r.ts,
                &r.principal,
                &r.tenant,
                &r.client,
                &r.front,
                &r.code,
                &r.code_sha256,
                &cols.code_bytes,
                &r.outcome,
                &r.duration_ms,
                &cols.labels,
                &cols.detail,
                &r.write_key,
                &r.execution_id,
            ],
        )
        .await?;
    if let Some(row) = added {
        return Ok((row.get(0), true));
    }
    let st = c
        .prepare_cached("SELECT id FROM audit WHERE write_key = $1")
        .await?;
    Ok((c.query_one(&st, &[&r.write_key]).await?.get(0), false))
}

/// Sets what the end of the execution tells of record `id`; how many rows that changed.
async fn update_head(
    tx: &Transaction<'_>,
    id: i64,
    r: &AuditRecord,
    cols: &Columns,
) -> Result<u64, StoreError> {
    let st = tx.prepare_cached(COMPLETE_HEAD).await?;
    Ok(tx
        .execute(
            &st,
            &[&id, &r.outcome, &r.duration_ms, &cols.labels, &cols.detail],
        )
        .await?)
}

async fn insert_calls(tx: &Transaction<'_>, id: i64, r: &AuditRecord) -> Result<(), StoreError> {
    if r.calls.is_empty() {
        return Ok(());
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO audit_calls (audit_id, seq, kind, tool, args_sha256, args, error, duration_ms, approval)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (audit_id, seq) DO NOTHING",
        )
        .await?;
    let seqs: Vec<i64> = (0..r.calls.len() as i64).collect();
    let writes = r.calls.iter().zip(&seqs).map(|(c, seq)| {
        let p: Params<'_> = vec![
            &id,
            seq,
            &c.kind,
            &c.tool,
            &c.args_sha256,
            &c.args,
            &c.error,
            &c.duration_ms,
            &c.approval,
        ];
        tx.execute_raw(&stmt, p)
    });
    pipelined(writes).await
}

/// One audit record and its calls, in an open transaction. A record whose write key is there
/// already (its first try was committed but its answer lost, or it is the write-ahead record of
/// the same execution) completes that record instead.
///
/// Its links are appended to this gateway's chain: head and end for a new record, end for one
/// completed.
pub(super) async fn insert(
    tx: &Transaction<'_>,
    chain: &str,
    r: &AuditRecord,
) -> Result<i64, StoreError> {
    let cols = Columns::of(r);
    let (id, added) = head(tx, r, &cols).await?;
    if !added {
        update_head(tx, id, r, &cols).await?;
    }
    insert_calls(tx, id, r).await?;
    let stored = cols.stored(id, r);
    if added {
        append(tx, chain, &[(Part::Head, stored), (Part::End, stored)]).await?;
    } else {
        append(tx, chain, &[(Part::End, stored)]).await?;
    }
    Ok(id)
}

impl Pg {
    /// The head row and its link, in one transaction.
    pub fn begin_audit(&self, r: &AuditRecord) -> Result<i64, StoreError> {
        self.write(async |tx| {
            let cols = Columns::of(r);
            let (id, added) = head(tx, r, &cols).await?;
            if added {
                append(tx, &self.chain, &[(Part::Head, cols.stored(id, r))]).await?;
            }
            Ok(id)
        })
    }

    pub fn complete_audit(&self, id: i64, r: &AuditRecord) -> Result<(), StoreError> {
        self.write(async |tx| {
            let cols = Columns::of(r);
            if update_head(tx, id, r, &cols).await? == 0 {
                // Pruned meanwhile (retention): the record is written whole again.
                return insert(tx, &self.chain, r).await.map(|_| ());
            }
            insert_calls(tx, id, r).await?;
            append(tx, &self.chain, &[(Part::End, cols.stored(id, r))]).await
        })
    }

    pub fn append_audit(&self, r: &AuditRecord) -> Result<i64, StoreError> {
        self.write(async |tx| insert(tx, &self.chain, r).await)
    }

    pub fn query_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        self.read(async |c| {
            let mut sql = format!("SELECT {HEAD_COLUMNS} FROM audit a WHERE true");
            let mut args: Vec<Box<dyn tokio_postgres::types::ToSql + Sync + Send>> = Vec::new();
            if let Some(since) = filter.since_ms {
                args.push(Box::new(since));
                sql.push_str(&format!(" AND a.ts >= ${}", args.len()));
            }
            if let Some(until) = filter.until_ms {
                args.push(Box::new(until));
                sql.push_str(&format!(" AND a.ts < ${}", args.len()));
            }
            if let Some(p) = &filter.principal {
                args.push(Box::new(p.clone()));
                sql.push_str(&format!(" AND a.principal = ${}", args.len()));
            }
            if let Some(t) = &filter.tenant {
                args.push(Box::new(t.clone()));
                sql.push_str(&format!(" AND a.tenant = ${}", args.len()));
            }
            if let Some(tool) = &filter.tool {
                args.push(Box::new(tool.clone()));
                sql.push_str(&format!(
                    " AND EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.tool = ${})",
                    args.len()
                ));
            }
            if let Some(e) = &filter.execution_id {
                args.push(Box::new(e.clone()));
                sql.push_str(&format!(" AND a.execution_id = ${}", args.len()));
            }
            if let Some(code) = &filter.error {
                args.push(Box::new(code.clone()));
                let n = args.len();
                sql.push_str(&format!(
                    " AND (a.outcome = ${n} OR EXISTS (SELECT 1 FROM audit_calls c WHERE c.audit_id = a.id AND c.error = ${n}))"
                ));
            }
            args.push(Box::new(filter.limit.max(1) as i64));
            sql.push_str(&format!(" ORDER BY a.id DESC LIMIT ${}", args.len()));
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a.as_ref() as _).collect();
            let mut records: Vec<AuditRecord> =
                c.query(&sql, &params).await?.iter().map(head_of).collect();
            records.reverse();
            for rec in &mut records {
                rec.calls = calls_of(c, rec.id).await?;
            }
            Ok(records)
        })
    }

    pub fn audit_record(&self, id: i64) -> Result<Option<AuditRecord>, StoreError> {
        self.read(async |c| {
            let sql = format!("SELECT {HEAD_COLUMNS}, detail FROM audit WHERE id = $1");
            let Some(row) = c.query_opt(&sql, &[&id]).await? else {
                return Ok(None);
            };
            let mut rec = head_of(&row);
            rec.detail = row
                .get::<_, Option<String>>(13)
                .and_then(|t| serde_json::from_str(&t).ok());
            rec.calls = calls_of(c, id).await?;
            Ok(Some(rec))
        })
    }

    pub fn audit_tenants(&self) -> Result<Vec<String>, StoreError> {
        self.read(async |c| {
            Ok(
                c.query("SELECT DISTINCT tenant FROM audit ORDER BY tenant", &[])
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect(),
            )
        })
    }
}

/// A record without its calls and detail, from a row of `HEAD_COLUMNS` (as SQLite's).
fn head_of(r: &tokio_postgres::Row) -> AuditRecord {
    AuditRecord {
        id: r.get(0),
        ts: r.get(1),
        principal: r.get(2),
        tenant: r.get(3),
        client: r.get(4),
        front: r.get(5),
        code: r.get(6),
        code_sha256: r.get(7),
        outcome: r.get(8),
        duration_ms: r.get(9),
        code_bytes: r.get::<_, Option<i64>>(10).map(|n| n.max(0) as u64),
        execution_id: r.get(12),
        labels: r
            .get::<_, Option<String>>(11)
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        calls: Vec::new(),
        detail: None,
        write_key: None,
    }
}

/// The calls of record `id`, in start order.
async fn calls_of(c: &deadpool_postgres::Client, id: i64) -> Result<Vec<AuditCall>, StoreError> {
    Ok(c.query(
        "SELECT kind, tool, args_sha256, args, error, duration_ms, approval FROM audit_calls
         WHERE audit_id = $1 ORDER BY seq",
        &[&id],
    )
    .await?
    .iter()
    .map(|r| AuditCall {
        kind: r.get(0),
        tool: r.get(1),
        args_sha256: r.get(2),
        args: r.get(3),
        error: r.get(4),
        duration_ms: r.get(5),
        approval: r.get(6),
    })
    .collect())
}
