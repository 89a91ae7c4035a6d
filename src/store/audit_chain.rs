//! The audit chain: every audit record is linked into a hash chain as it is written, so an
//! edit, a deletion, an insertion or a reordering made in the database afterwards shows
//! (`mcp-sandbox audit verify`, [`super::audit_verify`]).
//!
//! A record gets two links: `head` when its write-ahead row is inserted (who, when, which
//! code: the fields that never change) and `end` when it is completed (every field, its calls
//! included); a record appended whole gets both at once. Link `n` of a chain is
//! `SHA-256(hash of link n-1 || "\n" || canonical JSON of the link)`, the canonical JSON being
//! [`Canonical`]: the chain's name, the link's position and part, and the record's stored
//! columns, numbers that are floats written as text (so the encoding reads back exactly).
//!
//! Each store has one chain (`local`) on SQLite, whose writers already serialize; on
//! PostgreSQL each store handle (one per gateway process) has its own chain, so gateways never
//! wait on each other's audit writes (`store::pg::audit_chain`). Retention leaves a signed
//! checkpoint where a chain now starts ([`super::audit_checkpoint`]).

use super::audit_record::AuditCall;
use super::StoreError;
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The hash before a chain's first link.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The one chain of a SQLite store.
pub const LOCAL_CHAIN: &str = "local";

/// Which part of a record a link covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// The fields known when the execution starts (never changed afterwards).
    Head,
    /// Every field, when the execution has ended.
    End,
}

impl Part {
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Head => "head",
            Part::End => "end",
        }
    }

    pub fn parse(s: &str) -> Option<Part> {
        match s {
            "head" => Some(Part::Head),
            "end" => Some(Part::End),
            _ => None,
        }
    }
}

/// A record as its row holds it (the columns the chain covers), borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub id: i64,
    pub execution_id: Option<&'a str>,
    pub ts: f64,
    pub principal: &'a str,
    pub tenant: &'a str,
    pub client: Option<&'a str>,
    pub front: &'a str,
    pub code: Option<&'a str>,
    pub code_sha256: &'a str,
    pub code_bytes: Option<i64>,
    pub outcome: &'a str,
    pub duration_ms: f64,
    /// The `labels` column (JSON text) as stored.
    pub labels: Option<&'a str>,
    /// The `detail` column (JSON text) as stored.
    pub detail: Option<&'a str>,
    pub calls: &'a [AuditCall],
}

/// The canonical encoding of one link: what its hash covers, and one line of an export.
/// Serialized in this field order; every field is always written; floats are text (Rust's
/// shortest round-trip form), so parsing a line and writing it again gives the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Canonical<S> {
    pub chain: S,
    pub seq: i64,
    pub part: Part,
    pub id: i64,
    pub execution_id: Option<S>,
    pub ts: String,
    pub principal: S,
    pub tenant: S,
    pub client: Option<S>,
    pub front: S,
    pub code: Option<S>,
    pub code_sha256: S,
    pub code_bytes: Option<i64>,
    /// The end's fields: `None` in a head link.
    pub outcome: Option<S>,
    pub duration_ms: Option<String>,
    pub labels: Option<S>,
    pub detail: Option<S>,
    pub calls: Option<Vec<CanonicalCall<S>>>,
}

/// One call of a [`Canonical`] end link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanonicalCall<S> {
    pub kind: S,
    pub tool: S,
    pub args_sha256: Option<S>,
    pub args: Option<S>,
    pub error: Option<S>,
    pub duration_ms: Option<String>,
    pub approval: Option<S>,
}

/// A float as the canonical encoding writes it.
fn num(x: f64) -> String {
    format!("{x}")
}

/// The canonical encoding of link `seq` of `chain`, covering `part` of `r`.
pub fn canonical<'a>(chain: &'a str, seq: i64, part: Part, r: &Stored<'a>) -> Canonical<&'a str> {
    let end = part == Part::End;
    Canonical {
        chain,
        seq,
        part,
        id: r.id,
        execution_id: r.execution_id,
        ts: num(r.ts),
        principal: r.principal,
        tenant: r.tenant,
        client: r.client,
        front: r.front,
        code: r.code,
        code_sha256: r.code_sha256,
        code_bytes: r.code_bytes,
        outcome: end.then_some(r.outcome),
        duration_ms: end.then(|| num(r.duration_ms)),
        labels: if end { r.labels } else { None },
        detail: if end { r.detail } else { None },
        calls: end.then(|| {
            r.calls
                .iter()
                .map(|c| CanonicalCall {
                    kind: c.kind.as_str(),
                    tool: c.tool.as_str(),
                    args_sha256: c.args_sha256.as_deref(),
                    args: c.args.as_deref(),
                    error: c.error.as_deref(),
                    duration_ms: c.duration_ms.map(num),
                    approval: c.approval.as_deref(),
                })
                .collect()
        }),
    }
}

/// The hash of a link: `SHA-256(prev || "\n" || canonical JSON)`, in hex.
pub fn link_hash<S: Serialize>(prev: &str, link: &Canonical<S>) -> String {
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(b"\n");
    // Serializing plain strings, integers and options cannot fail.
    h.update(serde_json::to_vec(link).unwrap_or_default());
    super::audit_key::hex(h.finalize().as_slice())
}

/// One link as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub chain: String,
    pub seq: i64,
    pub audit_id: i64,
    pub part: Part,
    pub hash: String,
}

/// The links to append for a record: `(part, record)` in order.
pub type Parts<'a, 'b> = &'b [(Part, Stored<'a>)];

/// The links of `parts` computed after chain head `(seq, hash)`: the new links and the new
/// head.
pub fn extend(
    chain: &str,
    head: (i64, String),
    parts: Parts<'_, '_>,
) -> (Vec<Link>, (i64, String)) {
    let (mut seq, mut prev) = head;
    let mut links = Vec::with_capacity(parts.len());
    for (part, r) in parts {
        seq += 1;
        prev = link_hash(&prev, &canonical(chain, seq, *part, r));
        links.push(Link {
            chain: chain.to_string(),
            seq,
            audit_id: r.id,
            part: *part,
            hash: prev.clone(),
        });
    }
    (links, (seq, prev))
}

/// Appends `parts` to the SQLite store's chain in the open transaction (the write lock is
/// held: no other writer appends meanwhile).
pub(super) fn append(
    tx: &rusqlite::Transaction<'_>,
    parts: Parts<'_, '_>,
) -> Result<(), StoreError> {
    let head: (i64, String) = tx
        .prepare_cached("SELECT seq, hash FROM audit_chains WHERE chain = ?1")?
        .query_row(params![LOCAL_CHAIN], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, GENESIS.to_string()));
    let (links, (seq, hash)) = extend(LOCAL_CHAIN, head, parts);
    let mut insert = tx.prepare_cached(
        "INSERT INTO audit_links (chain, seq, audit_id, part, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for l in &links {
        insert.execute(params![l.chain, l.seq, l.audit_id, l.part.as_str(), l.hash])?;
    }
    tx.prepare_cached(
        "INSERT INTO audit_chains (chain, seq, hash, started_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
    )?
    .execute(params![LOCAL_CHAIN, seq, hash, crate::trace::now_ms()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(calls: &[AuditCall]) -> Stored<'_> {
        Stored {
            id: 7,
            execution_id: Some("e"),
            ts: 1_732_780_000_123.456,
            principal: "local",
            tenant: "default",
            client: None,
            front: "run",
            code: Some("return \"é\\n\""),
            code_sha256: "ab",
            code_bytes: Some(12),
            outcome: "OK",
            duration_ms: 0.1 + 0.2,
            labels: None,
            detail: Some("{\"traces\":[]}"),
            calls,
        }
    }

    /// An export line is parsed and hashed again: the bytes (and so the hash) are the same.
    #[test]
    fn the_canonical_encoding_reads_back_to_the_same_hash() {
        let calls = [AuditCall {
            kind: "tool".into(),
            tool: "s:t".into(),
            args_sha256: Some("cd".into()),
            args: None,
            error: Some("TOOL_ERROR".into()),
            duration_ms: Some(1.0 / 3.0),
            approval: None,
        }];
        let r = stored(&calls);
        for part in [Part::Head, Part::End] {
            let c = canonical("local", 3, part, &r);
            let text = serde_json::to_string(&c).unwrap();
            let back: Canonical<String> = serde_json::from_str(&text).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
            assert_eq!(link_hash(GENESIS, &back), link_hash(GENESIS, &c));
        }
        let (links, head) = extend(
            "local",
            (0, GENESIS.into()),
            &[(Part::Head, r), (Part::End, r)],
        );
        assert_eq!(links.len(), 2);
        assert_eq!(head, (2, links[1].hash.clone()));
        assert_ne!(links[0].hash, links[1].hash);
    }
}
