//! Retention without a broken chain: pruning deletes the oldest records and the links before a
//! position, then leaves a checkpoint per chain saying where it now starts (the position and the
//! hash of the link before it), signed with the operator's audit key when one is set.
//!
//! A chain is only ever cut at one position: a record the rule would delete but which has a
//! link at or after the cut (a long execution that completed after newer ones) stays until a
//! later pruning, so every link that remains refers to a record that remains.

use super::audit_chain::{GENESIS, LOCAL_CHAIN};
use super::audit_key::{AuditKey, PublicKey};
use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Which records a retention rule deletes.
#[derive(Debug, Clone, Copy)]
pub enum Retention {
    /// Records admitted before this time (ms since the epoch).
    Before(f64),
    /// Records with at most this id (the newest `keep` have higher ones).
    UpTo(i64),
}

impl Retention {
    /// The rule as an SQL condition on table alias `a`, its value bound to parameter `p`.
    pub(super) fn condition(self, p: &str) -> String {
        match self {
            Retention::Before(_) => format!("a.ts < {p}"),
            Retention::UpTo(_) => format!("a.id <= {p}"),
        }
    }
}

/// Where a chain starts after pruning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub chain: String,
    /// The first position kept.
    pub seq: i64,
    /// The hash of the link before it.
    pub prev: String,
    /// When it was written (ms since the epoch).
    pub at: f64,
    /// Records pruned from this chain so far.
    pub pruned: i64,
    /// The key that signed it (`ed25519:…`), none when pruned without a key.
    pub public_key: Option<String>,
    pub signature: Option<String>,
}

impl Checkpoint {
    /// The bytes its signature covers.
    pub fn message(&self) -> Vec<u8> {
        serde_json::to_vec(&(
            "mcp-sandbox-audit-checkpoint-v1",
            &self.chain,
            self.seq,
            &self.prev,
            format!("{}", self.at),
            self.pruned,
        ))
        .unwrap_or_default()
    }

    /// A checkpoint signed with `key` (or unsigned without one).
    pub fn signed(mut self, key: Option<&AuditKey>) -> Checkpoint {
        if let Some(key) = key {
            self.public_key = Some(key.public().line());
            self.signature = Some(key.sign(&self.message()));
        }
        self
    }

    /// Whether `key` signed it.
    pub fn signed_by(&self, key: &PublicKey) -> bool {
        self.signature
            .as_deref()
            .is_some_and(|s| key.verifies(&self.message(), s))
    }
}

impl Store {
    /// Deletes records older than `before_ms` (signing the checkpoint with `key`); returns how
    /// many.
    pub fn prune_audit(&self, before_ms: f64, key: Option<&AuditKey>) -> Result<usize, StoreError> {
        self.prune_by(Retention::Before(before_ms), key)
    }

    /// Keeps the newest `keep` records, deleting older ones; returns how many were deleted.
    pub fn prune_audit_to(&self, keep: u64, key: Option<&AuditKey>) -> Result<usize, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.prune_audit_to(keep, key);
        }
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let cut: Option<i64> = self.with(|c| {
            Ok(c.query_row(
                "SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?1",
                params![keep],
                |r| r.get(0),
            )
            .optional()?)
        })?;
        match cut {
            Some(cut) => self.prune_by(Retention::UpTo(cut), key),
            None => Ok(0),
        }
    }

    fn prune_by(&self, rule: Retention, key: Option<&AuditKey>) -> Result<usize, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.prune_audit_by(rule, key);
        }
        let value: rusqlite::types::Value = match rule {
            Retention::Before(t) => t.into(),
            Retention::UpTo(id) => id.into(),
        };
        let cond = rule.condition("?1");
        self.write(|tx| {
            let head: Option<(i64, String)> = tx
                .query_row(
                    "SELECT seq, hash FROM audit_chains WHERE chain = ?1",
                    params![LOCAL_CHAIN],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            // Records never chained (written before the chain existed) go by the rule alone.
            let unchained = format!(
                "SELECT a.id FROM audit a WHERE {cond} AND NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id)"
            );
            tx.execute(
                &format!("DELETE FROM audit_calls WHERE audit_id IN ({unchained})"),
                params![value],
            )?;
            let mut n = tx.execute(
                &format!("DELETE FROM audit WHERE id IN ({unchained})"),
                params![value],
            )?;
            let Some((last, last_hash)) = head else {
                return Ok(n);
            };
            // The chain starts again at its first link of a record the rule keeps.
            let start: i64 = tx
                .query_row(
                    &format!(
                        "SELECT MIN(l.seq) FROM audit_links l JOIN audit a ON a.id = l.audit_id WHERE l.chain = ?2 AND NOT ({cond})"
                    ),
                    params![value, LOCAL_CHAIN],
                    |r| r.get::<_, Option<i64>>(0),
                )?
                .unwrap_or(last + 1);
            let doomed = format!(
                "SELECT a.id FROM audit a WHERE {cond}
                   AND EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id AND l.chain = ?2)
                   AND NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id AND l.seq >= ?3)"
            );
            tx.execute(
                &format!("DELETE FROM audit_calls WHERE audit_id IN ({doomed})"),
                params![value, LOCAL_CHAIN, start],
            )?;
            let chained = tx.execute(
                &format!("DELETE FROM audit WHERE id IN ({doomed})"),
                params![value, LOCAL_CHAIN, start],
            )?;
            n += chained;
            let old: Option<Checkpoint> = checkpoint_of(tx, LOCAL_CHAIN)?;
            if start <= old.as_ref().map_or(1, |c| c.seq) {
                return Ok(n);
            }
            let prev: String = if start == last + 1 {
                last_hash
            } else {
                tx.query_row(
                    "SELECT hash FROM audit_links WHERE chain = ?1 AND seq = ?2",
                    params![LOCAL_CHAIN, start - 1],
                    |r| r.get(0),
                )
                .optional()?
                .unwrap_or_else(|| GENESIS.to_string())
            };
            tx.execute(
                "DELETE FROM audit_links WHERE chain = ?1 AND seq < ?2",
                params![LOCAL_CHAIN, start],
            )?;
            let cp = Checkpoint {
                chain: LOCAL_CHAIN.to_string(),
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
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, prev = excluded.prev, at = excluded.at,
                   pruned = excluded.pruned, public_key = excluded.public_key, signature = excluded.signature",
                params![cp.chain, cp.seq, cp.prev, cp.at, cp.pruned, cp.public_key, cp.signature],
            )?;
            Ok(n)
        })
    }
}

/// The checkpoint of `chain`, if it was ever pruned.
pub(super) fn checkpoint_of(
    c: &rusqlite::Connection,
    chain: &str,
) -> Result<Option<Checkpoint>, StoreError> {
    Ok(c.query_row(
        "SELECT chain, seq, prev, at, pruned, public_key, signature FROM audit_checkpoints WHERE chain = ?1",
        params![chain],
        |r| {
            Ok(Checkpoint {
                chain: r.get(0)?,
                seq: r.get(1)?,
                prev: r.get(2)?,
                at: r.get(3)?,
                pruned: r.get(4)?,
                public_key: r.get(5)?,
                signature: r.get(6)?,
            })
        },
    )
    .optional()?)
}
