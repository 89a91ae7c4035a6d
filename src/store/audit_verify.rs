//! `mcp-sandbox audit verify`: walks every audit chain of the store from its start (genesis, or
//! the checkpoint retention left) to its last link, recomputing each link's hash from the
//! record's row as it is now, and names the first record changed, removed, inserted or
//! reordered.
//!
//! The links, chain heads and checkpoints are read in one consistent snapshot; the records are
//! then read in batches by id.

use super::audit::AuditCall;
use super::audit_chain::{canonical, link_hash, Link, Part, Stored, GENESIS};
use super::audit_checkpoint::Checkpoint;
use super::audit_key::PublicKey;
use super::{Store, StoreError};
use rusqlite::params;
use std::collections::{HashMap, HashSet};

/// Records read at once.
const ROWS_PER_READ: usize = 500;

/// A chain's last link, as the store keeps it.
#[derive(Debug, Clone)]
pub struct ChainHead {
    pub chain: String,
    pub seq: i64,
    pub hash: String,
}

/// What `verify` reads in one snapshot.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub chains: Vec<ChainHead>,
    pub checkpoints: HashMap<String, Checkpoint>,
    /// Every link, by chain then position.
    pub links: Vec<Link>,
    /// The last record written before the chain existed (such records are not in it).
    pub unchained_last_id: i64,
    /// Records written before the chain existed, still kept.
    pub unchained: u64,
    /// Records in no chain, written after it existed: inserted by hand (the first ones).
    pub inserted: Vec<i64>,
}

/// A record's row, owned.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: i64,
    pub execution_id: Option<String>,
    pub ts: f64,
    pub principal: String,
    pub tenant: String,
    pub client: Option<String>,
    pub front: String,
    pub code: Option<String>,
    pub code_sha256: String,
    pub code_bytes: Option<i64>,
    pub outcome: String,
    pub duration_ms: f64,
    pub labels: Option<String>,
    pub detail: Option<String>,
    pub calls: Vec<AuditCall>,
}

impl Row {
    /// The row as the chain covers it, under id `id` (its own, or another's when testing
    /// whether two records were swapped).
    pub fn stored(&self, id: i64) -> Stored<'_> {
        Stored {
            id,
            execution_id: self.execution_id.as_deref(),
            ts: self.ts,
            principal: &self.principal,
            tenant: &self.tenant,
            client: self.client.as_deref(),
            front: &self.front,
            code: self.code.as_deref(),
            code_sha256: &self.code_sha256,
            code_bytes: self.code_bytes,
            outcome: &self.outcome,
            duration_ms: self.duration_ms,
            labels: self.labels.as_deref(),
            detail: self.detail.as_deref(),
            calls: &self.calls,
        }
    }
}

/// The first thing found wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// The record's row no longer hashes to its link.
    Changed { id: i64, chain: String, seq: i64 },
    /// The link names a record that is gone.
    Removed { id: i64, chain: String, seq: i64 },
    /// Links are missing from the chain (the records they covered and the links were deleted).
    LinksRemoved {
        chain: String,
        from: i64,
        to: i64,
        after: Option<i64>,
    },
    /// A record that is in no chain.
    Inserted { id: i64 },
    /// Record `id` holds what the chain has at record `other` (rows swapped or moved).
    Reordered { id: i64, other: i64, chain: String },
    /// A record with no end in the chain that is not left running.
    Completed { id: i64 },
    /// The chain's recorded last link is not its last link.
    Head { chain: String },
    /// The chain's start (checkpoint) is not proven by the key.
    Checkpoint { chain: String, why: String },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Changed { id, chain, seq } => write!(f, "record #{id} was changed: it does not match its link (chain {chain}, position {seq})"),
            Finding::Removed { id, chain, seq } => write!(f, "record #{id} was removed: the chain links it (chain {chain}, position {seq}) but it is not in the store"),
            Finding::LinksRemoved { chain, from, to, after } => write!(
                f,
                "records were removed: chain {chain} lacks its links at positions {from}..={to}{}",
                after.map(|a| format!(" (after record #{a})")).unwrap_or_default()
            ),
            Finding::Inserted { id } => write!(f, "record #{id} was inserted: it is in no chain"),
            Finding::Reordered { id, other, chain } => write!(f, "records were reordered: record #{id} holds what chain {chain} has for record #{other}"),
            Finding::Completed { id } => write!(f, "record #{id} was changed: it has an outcome but the chain has no end for it"),
            Finding::Head { chain } => write!(f, "chain {chain} was changed: its recorded last link is not the last link found"),
            Finding::Checkpoint { chain, why } => write!(f, "the start of chain {chain} is not proven: {why}"),
        }
    }
}

/// What an intact walk covered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Intact {
    /// Records in the chains.
    pub records: u64,
    /// The earliest and latest record (by admission time) and their times.
    pub first: Option<(i64, f64)>,
    pub last: Option<(i64, f64)>,
    pub chains: usize,
    /// Records left running by a host that stopped (a head and no end).
    pub running: u64,
    /// Records written before the chain existed (not covered).
    pub unchained: u64,
    /// Chains that start at a checkpoint, whose signature held.
    pub checkpoints: usize,
}

/// Reads records by id: the store's, or (tests) a fixed set.
pub trait Rows {
    fn rows(&self, ids: &[i64]) -> Result<HashMap<i64, Row>, StoreError>;
}

/// Walks `snap`'s chains. `key`: the operator's public key, which must have signed every
/// checkpoint (a chain that starts at a checkpoint cannot be checked without it).
pub fn walk(
    snap: &Snapshot,
    rows: &impl Rows,
    key: Option<&PublicKey>,
) -> Result<Result<Intact, Finding>, StoreError> {
    let mut out = Intact {
        chains: snap.chains.len(),
        unchained: snap.unchained,
        ..Intact::default()
    };
    let mut links = snap.links.iter().peekable();
    for head in &snap.chains {
        let cp = snap.checkpoints.get(&head.chain);
        if let Some(cp) = cp {
            let why = match (key, cp.signature.is_some()) {
                (None, _) => Some("it starts at a checkpoint left by retention; pass --public-key KEY or --audit-key-file PATH to check its signature".to_string()),
                (Some(_), false) => Some(format!("its checkpoint (position {}) is unsigned: it was pruned without an audit key", cp.seq)),
                (Some(k), true) if !cp.signed_by(k) => Some(format!("its checkpoint (position {}) is not signed by this key", cp.seq)),
                _ => None,
            };
            if let Some(why) = why {
                return Ok(Err(Finding::Checkpoint {
                    chain: head.chain.clone(),
                    why,
                }));
            }
            out.checkpoints += 1;
        }
        let (mut seq, mut prev) = cp.map_or((1, GENESIS.to_string()), |c| (c.seq, c.prev.clone()));
        let mut mine = Vec::new();
        while let Some(l) = links.next_if(|l| l.chain == head.chain) {
            mine.push(l);
        }
        let mut ended = HashSet::new();
        let mut heads = Vec::new();
        let mut last_id = None;
        for page in mine.chunks(ROWS_PER_READ) {
            let ids: Vec<i64> = page.iter().map(|l| l.audit_id).collect();
            let found = rows.rows(&ids)?;
            for (i, l) in page.iter().enumerate() {
                if l.seq != seq {
                    return Ok(Err(Finding::LinksRemoved {
                        chain: head.chain.clone(),
                        from: seq,
                        to: l.seq - 1,
                        after: last_id,
                    }));
                }
                let Some(row) = found.get(&l.audit_id) else {
                    return Ok(Err(Finding::Removed {
                        id: l.audit_id,
                        chain: head.chain.clone(),
                        seq,
                    }));
                };
                let h = link_hash(
                    &prev,
                    &canonical(&head.chain, seq, l.part, &row.stored(l.audit_id)),
                );
                if h != l.hash {
                    if let Some(other) = swapped_with(page, i, &prev, row, &head.chain) {
                        return Ok(Err(Finding::Reordered {
                            id: l.audit_id,
                            other,
                            chain: head.chain.clone(),
                        }));
                    }
                    return Ok(Err(Finding::Changed {
                        id: l.audit_id,
                        chain: head.chain.clone(),
                        seq,
                    }));
                }
                match l.part {
                    Part::Head => heads.push(l.audit_id),
                    Part::End => {
                        ended.insert(l.audit_id);
                    }
                }
                // The span by time (chains of several gateways interleave).
                if out.first.is_none_or(|(_, ts)| row.ts < ts) {
                    out.first = Some((l.audit_id, row.ts));
                }
                if out.last.is_none_or(|(_, ts)| row.ts >= ts) {
                    out.last = Some((l.audit_id, row.ts));
                }
                last_id = Some(l.audit_id);
                prev = h;
                seq += 1;
            }
        }
        if seq - 1 < head.seq {
            return Ok(Err(Finding::LinksRemoved {
                chain: head.chain.clone(),
                from: seq,
                to: head.seq,
                after: last_id,
            }));
        }
        if seq - 1 != head.seq || prev != head.hash {
            return Ok(Err(Finding::Head {
                chain: head.chain.clone(),
            }));
        }
        // A record with a head and no end must be as it was written ahead: running, no calls.
        let open: Vec<i64> = heads
            .iter()
            .copied()
            .filter(|id| !ended.contains(id))
            .collect();
        for page in open.chunks(ROWS_PER_READ) {
            let found = rows.rows(page)?;
            for id in page {
                match found.get(id) {
                    Some(r) if r.outcome == super::audit::RUNNING && r.calls.is_empty() => {
                        out.running += 1
                    }
                    Some(_) => return Ok(Err(Finding::Completed { id: *id })),
                    None => {}
                }
            }
        }
        let mut all: HashSet<i64> = ended;
        all.extend(heads);
        out.records += all.len() as u64;
    }
    // Links of a chain with no recorded head (its row deleted).
    if let Some(l) = links.next() {
        return Ok(Err(Finding::Head {
            chain: l.chain.clone(),
        }));
    }
    if let Some(id) = snap.inserted.first() {
        return Ok(Err(Finding::Inserted { id: *id }));
    }
    Ok(Ok(out))
}

/// The record whose link in `page` the row of `page[i]` matches, under that record's id: the
/// two rows were swapped (or this one moved). Only links of the same page are tried.
fn swapped_with(page: &[&Link], i: usize, prev: &str, row: &Row, chain: &str) -> Option<i64> {
    let l = page[i];
    page.iter().enumerate().find_map(|(j, other)| {
        if j == i || other.audit_id == l.audit_id || other.part != l.part {
            return None;
        }
        let before = if j == 0 {
            (i == 0).then_some(prev)?
        } else {
            page[j - 1].hash.as_str()
        };
        let h = link_hash(
            before,
            &canonical(chain, other.seq, other.part, &row.stored(other.audit_id)),
        );
        (h == other.hash).then_some(other.audit_id)
    })
}

impl Store {
    /// Walks the audit chains (see [`walk`]).
    pub fn verify_audit(
        &self,
        key: Option<&PublicKey>,
    ) -> Result<Result<Intact, Finding>, StoreError> {
        let snap = self.audit_snapshot()?;
        walk(&snap, self, key)
    }

    /// The links, heads and checkpoints, read in one snapshot.
    pub fn audit_snapshot(&self) -> Result<Snapshot, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.audit_snapshot();
        }
        self.with(|c| {
            c.execute_batch("BEGIN")?;
            let snap = sqlite_snapshot(c);
            let ended = c.execute_batch("COMMIT");
            let snap = snap?;
            ended?;
            Ok(snap)
        })
    }
}

fn sqlite_snapshot(c: &rusqlite::Connection) -> Result<Snapshot, StoreError> {
    let mut snap = Snapshot::default();
    let mut st = c.prepare("SELECT chain, seq, hash FROM audit_chains ORDER BY chain")?;
    snap.chains = st
        .query_map([], |r| {
            Ok(ChainHead {
                chain: r.get(0)?,
                seq: r.get(1)?,
                hash: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    for h in &snap.chains {
        if let Some(cp) = super::audit_checkpoint::checkpoint_of(c, &h.chain)? {
            snap.checkpoints.insert(h.chain.clone(), cp);
        }
    }
    let mut st =
        c.prepare("SELECT chain, seq, audit_id, part, hash FROM audit_links ORDER BY chain, seq")?;
    snap.links = st
        .query_map([], |r| {
            let part: String = r.get(3)?;
            Ok(Link {
                chain: r.get(0)?,
                seq: r.get(1)?,
                audit_id: r.get(2)?,
                part: Part::parse(&part).unwrap_or(Part::End),
                hash: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    snap.unchained_last_id = c.query_row(
        "SELECT COALESCE(MAX(last_id), 0) FROM audit_unchained",
        [],
        |r| r.get(0),
    )?;
    let unlinked =
        "FROM audit a WHERE NOT EXISTS (SELECT 1 FROM audit_links l WHERE l.audit_id = a.id)";
    snap.unchained = c.query_row(
        &format!("SELECT COUNT(*) {unlinked} AND a.id <= ?1"),
        params![snap.unchained_last_id],
        |r| r.get::<_, i64>(0),
    )? as u64;
    let mut st = c.prepare(&format!(
        "SELECT a.id {unlinked} AND a.id > ?1 ORDER BY a.id LIMIT 10"
    ))?;
    snap.inserted = st
        .query_map(params![snap.unchained_last_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(snap)
}

/// The columns of a [`Row`], in its order (both backends).
pub(super) const ROW_COLUMNS: &str = "id, execution_id, ts, principal, tenant, client, front, code, code_sha256, code_bytes, outcome, duration_ms, labels, detail";

impl Rows for Store {
    fn rows(&self, ids: &[i64]) -> Result<HashMap<i64, Row>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.audit_rows(ids);
        }
        self.with(|c| {
            let mut out = HashMap::new();
            let mut head = c.prepare_cached(&format!("SELECT {ROW_COLUMNS} FROM audit WHERE id = ?1"))?;
            let mut calls = c.prepare_cached(
                "SELECT kind, tool, args_sha256, args, error, duration_ms, approval FROM audit_calls WHERE audit_id = ?1 ORDER BY seq",
            )?;
            for id in ids {
                if out.contains_key(id) {
                    continue;
                }
                let mut found = head.query_map(params![id], |r| {
                    Ok(Row {
                        id: r.get(0)?,
                        execution_id: r.get(1)?,
                        ts: r.get(2)?,
                        principal: r.get(3)?,
                        tenant: r.get(4)?,
                        client: r.get(5)?,
                        front: r.get(6)?,
                        code: r.get(7)?,
                        code_sha256: r.get(8)?,
                        code_bytes: r.get(9)?,
                        outcome: r.get(10)?,
                        duration_ms: r.get(11)?,
                        labels: r.get(12)?,
                        detail: r.get(13)?,
                        calls: Vec::new(),
                    })
                })?;
                let Some(row) = found.next().transpose()? else {
                    continue;
                };
                drop(found);
                let mut row = row;
                row.calls = calls
                    .query_map(params![id], |r| {
                        Ok(AuditCall {
                            kind: r.get(0)?,
                            tool: r.get(1)?,
                            args_sha256: r.get(2)?,
                            args: r.get(3)?,
                            error: r.get(4)?,
                            duration_ms: r.get(5)?,
                            approval: r.get(6)?,
                        })
                    })?
                    .collect::<Result<_, _>>()?;
                out.insert(*id, row);
            }
            Ok(out)
        })
    }
}
