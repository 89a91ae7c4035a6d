//! The audit chain on PostgreSQL (see `store::audit_chain`): each gateway process appends to a
//! chain of its own, so gateways never wait on each other; within one, an append locks its
//! chain's row in `audit_chains` until the transaction ends (the next append of the same
//! gateway waits for it). Also the reads of `audit verify` and retention's checkpoints.

use super::super::audit::AuditCall;
use super::super::audit_chain::{extend, Link, Part, Parts, GENESIS};
use super::super::audit_checkpoint::{Checkpoint, Retention};
use super::super::audit_key::AuditKey;
use super::super::audit_verify::{ChainHead, Row, Snapshot, ROW_COLUMNS};
use super::super::StoreError;
use super::{big, pipelined, Params, Pg, Transaction};
use std::collections::HashMap;

/// Appends `parts` to `chain` in the open transaction.
pub(super) async fn append(
    tx: &Transaction<'_>,
    chain: &str,
    parts: Parts<'_, '_>,
) -> Result<(), StoreError> {
    // Takes (and creates) the chain's row lock: the head read here stays the head until commit.
    let st = tx
        .prepare_cached(
            "INSERT INTO audit_chains (chain, seq, hash, started_at) VALUES ($1, 0, $2, $3)
             ON CONFLICT (chain) DO UPDATE SET chain = excluded.chain RETURNING seq, hash",
        )
        .await?;
    let row = tx
        .query_one(&st, &[&chain, &GENESIS, &crate::trace::now_ms()])
        .await?;
    let (links, (seq, hash)) = extend(chain, (row.get(0), row.get(1)), parts);
    let insert = tx
        .prepare_cached(
            "INSERT INTO audit_links (chain, seq, audit_id, part, hash) VALUES ($1, $2, $3, $4, $5)",
        )
        .await?;
    let update = tx
        .prepare_cached("UPDATE audit_chains SET seq = $2, hash = $3 WHERE chain = $1")
        .await?;
    let parts: Vec<&str> = links.iter().map(|l| l.part.as_str()).collect();
    let mut writes = Vec::new();
    for (l, part) in links.iter().zip(&parts) {
        let p: Params<'_> = vec![&l.chain, &l.seq, &l.audit_id, part, &l.hash];
        writes.push(tx.execute_raw(&insert, p));
    }
    let p: Params<'_> = vec![&chain, &seq, &hash];
    writes.push(tx.execute_raw(&update, p));
    pipelined(writes).await
}

fn checkpoint_of(r: &tokio_postgres::Row) -> Checkpoint {
    Checkpoint {
        chain: r.get(0),
        seq: r.get(1),
        prev: r.get(2),
        at: r.get(3),
        pruned: r.get(4),
        public_key: r.get(5),
        signature: r.get(6),
    }
}

const CHECKPOINT_COLUMNS: &str = "chain, seq, prev, at, pruned, public_key, signature";

impl Pg {
    /// The links, heads and checkpoints of every chain, in one repeatable-read snapshot.
    pub fn audit_snapshot(&self) -> Result<Snapshot, StoreError> {
        self.bounded(super::LONG_OPERATION_TIMEOUT, async |c| {
            let tx = c
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let chains = tx
                .query("SELECT chain, seq, hash FROM audit_chains ORDER BY chain", &[])
                .await?
                .iter()
                .map(|r| ChainHead {
                    chain: r.get(0),
                    seq: r.get(1),
                    hash: r.get(2),
                })
                .collect();
            let mut snap = Snapshot {
                chains,
                ..Snapshot::default()
            };
            for r in tx
                .query(&format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints"), &[])
                .await?
            {
                let cp = checkpoint_of(&r);
                snap.checkpoints.insert(cp.chain.clone(), cp);
            }
            snap.links = tx
                .query(
                    "SELECT chain, seq, audit_id, part, hash FROM audit_links ORDER BY chain, seq",
                    &[],
                )
                .await?
                .iter()
                .map(|r| Link {
                    chain: r.get(0),
                    seq: r.get(1),
                    audit_id: r.get(2),
                    part: Part::parse(r.get(3)).unwrap_or(Part::End),
                    hash: r.get(4),
                })
                .collect();
            snap.unchained_last_id = tx
                .query_one("SELECT COALESCE(MAX(last_id), 0)::BIGINT FROM audit_unchained", &[])
                .await?
                .get(0);
            let unlinked =
                "FROM audit a WHERE NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id)";
            let n: i64 = tx
                .query_one(
                    &format!("SELECT COUNT(*) {unlinked} AND a.id <= $1"),
                    &[&snap.unchained_last_id],
                )
                .await?
                .get(0);
            snap.unchained = n.max(0) as u64;
            snap.inserted = tx
                .query(
                    &format!("SELECT a.id {unlinked} AND a.id > $1 ORDER BY a.id LIMIT 10"),
                    &[&snap.unchained_last_id],
                )
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            tx.commit().await?;
            Ok(snap)
        })
    }

    /// Records `ids` with their calls, as their rows hold them.
    pub fn audit_rows(&self, ids: &[i64]) -> Result<HashMap<i64, Row>, StoreError> {
        self.read(async |c| {
            let ids: Vec<i64> = ids.to_vec();
            let mut out: HashMap<i64, Row> = c
                .query(
                    &format!("SELECT {ROW_COLUMNS} FROM audit WHERE id = ANY($1)"),
                    &[&ids],
                )
                .await?
                .iter()
                .map(|r| {
                    let row = Row {
                        id: r.get(0),
                        execution_id: r.get(1),
                        ts: r.get(2),
                        principal: r.get(3),
                        tenant: r.get(4),
                        client: r.get(5),
                        front: r.get(6),
                        code: r.get(7),
                        code_sha256: r.get(8),
                        code_bytes: r.get(9),
                        outcome: r.get(10),
                        duration_ms: r.get(11),
                        labels: r.get(12),
                        detail: r.get(13),
                        calls: Vec::new(),
                    };
                    (row.id, row)
                })
                .collect();
            for r in c
                .query(
                    "SELECT audit_id, kind, tool, args_sha256, args, error, duration_ms, approval FROM audit_calls
                     WHERE audit_id = ANY($1) ORDER BY audit_id, seq",
                    &[&ids],
                )
                .await?
            {
                if let Some(row) = out.get_mut(&r.get::<_, i64>(0)) {
                    row.calls.push(AuditCall {
                        kind: r.get(1),
                        tool: r.get(2),
                        args_sha256: r.get(3),
                        args: r.get(4),
                        error: r.get(5),
                        duration_ms: r.get(6),
                        approval: r.get(7),
                    });
                }
            }
            Ok(out)
        })
    }

    pub fn prune_audit_to(&self, keep: u64, key: Option<&AuditKey>) -> Result<usize, StoreError> {
        let keep = big(keep);
        let cut: Option<i64> = self.read(async |c| {
            Ok(c.query_opt(
                "SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET $1",
                &[&keep],
            )
            .await?
            .map(|r| r.get(0)))
        })?;
        match cut {
            Some(cut) => self.prune_audit_by(Retention::UpTo(cut), key),
            None => Ok(0),
        }
    }

    /// Retention on every chain (see `store::audit_checkpoint`), in one transaction; each
    /// chain's row is locked first, so no gateway appends to it meanwhile.
    pub fn prune_audit_by(
        &self,
        rule: Retention,
        key: Option<&AuditKey>,
    ) -> Result<usize, StoreError> {
        let cond = rule.condition("$1");
        self.write_within(super::LONG_OPERATION_TIMEOUT, async |tx| {
            let value: Box<dyn tokio_postgres::types::ToSql + Sync + Send> = match rule {
                Retention::Before(t) => Box::new(t),
                Retention::UpTo(id) => Box::new(id),
            };
            let value = value.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync);
            // audit_calls go with their record (ON DELETE CASCADE).
            let mut n = tx
                .execute(
                    &format!(
                        "DELETE FROM audit a WHERE {cond} AND NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id)"
                    ),
                    &[value],
                )
                .await? as usize;
            let chains: Vec<(String, i64, String)> = tx
                .query(
                    "SELECT chain, seq, hash FROM audit_chains ORDER BY chain FOR UPDATE",
                    &[],
                )
                .await?
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect();
            for (chain, last, last_hash) in chains {
                let start: i64 = tx
                    .query_one(
                        &format!(
                            "SELECT MIN(l.seq) FROM audit_links l JOIN audit a ON a.id = l.audit_id WHERE l.chain = $2 AND NOT ({cond})"
                        ),
                        &[value, &chain],
                    )
                    .await?
                    .get::<_, Option<i64>>(0)
                    .unwrap_or(last + 1);
                let old = tx
                    .query_opt(
                        &format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE chain = $1"),
                        &[&chain],
                    )
                    .await?
                    .map(|r| checkpoint_of(&r));
                if start <= old.as_ref().map_or(1, |c| c.seq) {
                    continue;
                }
                let chained = tx
                    .execute(
                        &format!(
                            "DELETE FROM audit a WHERE {cond}
                               AND EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id AND l.chain = $2)
                               AND NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id AND l.seq >= $3)"
                        ),
                        &[value, &chain, &start],
                    )
                    .await? as usize;
                n += chained;
                let prev: String = if start == last + 1 {
                    last_hash
                } else {
                    tx.query_opt(
                        "SELECT hash FROM audit_links WHERE chain = $1 AND seq = $2",
                        &[&chain, &(start - 1)],
                    )
                    .await?
                    .map(|r| r.get(0))
                    .unwrap_or_else(|| GENESIS.to_string())
                };
                tx.execute(
                    "DELETE FROM audit_links WHERE chain = $1 AND seq < $2",
                    &[&chain, &start],
                )
                .await?;
                let cp = Checkpoint {
                    chain: chain.clone(),
                    seq: start,
                    prev,
                    at: crate::trace::now_ms(),
                    pruned: old.map_or(0, |c| c.pruned) + chained as i64,
                    public_key: None,
                    signature: None,
                }
                .signed(key);
                tx.execute(
                    "INSERT INTO audit_checkpoints (chain, seq, prev, at, pruned, public_key, signature)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, prev = excluded.prev, at = excluded.at,
                       pruned = excluded.pruned, public_key = excluded.public_key, signature = excluded.signature",
                    &[&cp.chain, &cp.seq, &cp.prev, &cp.at, &cp.pruned, &cp.public_key, &cp.signature],
                )
                .await?;
            }
            Ok(n)
        })
    }
}
