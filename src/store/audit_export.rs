//! `mcp-sandbox audit export` and `audit verify --file`: the audit chain's links as JSON lines
//! (each link's canonical encoding, the hash before it and its own), then one head line signed
//! with the operator's key over the digest of every line before it. An auditor checks the file
//! offline with the public key: each line hashes to its link, consecutive links of a chain
//! follow each other, and the signature covers exactly these lines.

use super::audit::AuditFilter;
use super::audit_chain::{link_hash, Canonical, GENESIS};
use super::audit_key::{AuditKey, PublicKey};
use super::audit_verify::{Finding, Rows};
use super::{Store, StoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};

/// What an export file's format is called (its head says so).
const FORMAT: &str = "mcp-sandbox-audit-export-v1";
/// Longest line read from an export file (a record keeps at most a few MiB).
const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// One link of an export: `L` is a [`Canonical`] (borrowed when written, owned when read;
/// both serialize alike).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportLink<L> {
    /// The position of the link exported before this one in its chain (none for the first):
    /// a line removed from the file shows as a gap.
    pub after: Option<i64>,
    pub prev: String,
    pub hash: String,
    pub link: L,
}

/// The signed part of an export's last line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadBody {
    pub format: String,
    /// When it was exported (ms since the epoch, as text).
    pub exported_at: String,
    /// Link lines before the head.
    pub links: u64,
    /// SHA-256 of those lines, newlines included.
    pub digest: String,
    pub public_key: String,
}

/// An export's last line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportHead {
    pub head: HeadBody,
    pub signature: String,
}

/// Why an export did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("AUDIT_TAMPERED: the audit log is not intact, nothing exported: {0}")]
    Broken(Finding),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
}

/// What an export held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exported {
    pub records: u64,
    pub links: u64,
}

impl Store {
    /// Writes the records matching `filter` (every field but `limit`) as an export signed with
    /// `key`, after checking the whole chain (nothing is exported from a log that is not intact).
    pub fn export_audit(
        &self,
        filter: &AuditFilter,
        key: &AuditKey,
        out: &mut impl Write,
    ) -> Result<Exported, ExportError> {
        let public = key.public();
        let snap = self.audit_snapshot()?;
        if let Err(f) = super::audit_verify::walk(&snap, self, Some(&public))? {
            return Err(ExportError::Broken(f));
        }
        let wanted: HashSet<i64> = self
            .query_audit(&AuditFilter {
                limit: i64::MAX as usize,
                ..filter.clone()
            })?
            .iter()
            .map(|r| r.id)
            .collect();
        let mut digest = Sha256::new();
        let mut done = Exported::default();
        let mut records = HashSet::new();
        let mut after: HashMap<&str, i64> = HashMap::new();
        let prev_of = |i: usize| -> String {
            match i.checked_sub(1).map(|j| &snap.links[j]) {
                Some(l) if l.chain == snap.links[i].chain => l.hash.clone(),
                _ => snap
                    .checkpoints
                    .get(&snap.links[i].chain)
                    .map_or_else(|| GENESIS.to_string(), |c| c.prev.clone()),
            }
        };
        let chosen: Vec<usize> = (0..snap.links.len())
            .filter(|i| wanted.contains(&snap.links[*i].audit_id))
            .collect();
        for page in chosen.chunks(500) {
            let ids: Vec<i64> = page.iter().map(|i| snap.links[*i].audit_id).collect();
            let rows = self.rows(&ids)?;
            for i in page {
                let l = &snap.links[*i];
                let Some(row) = rows.get(&l.audit_id) else {
                    continue;
                };
                let line = ExportLink {
                    after: after.insert(l.chain.as_str(), l.seq),
                    prev: prev_of(*i),
                    hash: l.hash.clone(),
                    link: super::audit_chain::canonical(
                        &l.chain,
                        l.seq,
                        l.part,
                        &row.stored(l.audit_id),
                    ),
                };
                let mut text = serde_json::to_vec(&line).unwrap_or_default();
                text.push(b'\n');
                digest.update(&text);
                out.write_all(&text)?;
                done.links += 1;
                records.insert(l.audit_id);
            }
        }
        done.records = records.len() as u64;
        let body = HeadBody {
            format: FORMAT.to_string(),
            exported_at: format!("{}", crate::trace::now_ms()),
            links: done.links,
            digest: super::audit_key::hex(digest.finalize().as_slice()),
            public_key: public.line(),
        };
        let signature = key.sign(&serde_json::to_vec(&body).unwrap_or_default());
        let mut text = serde_json::to_vec(&ExportHead {
            head: body,
            signature,
        })
        .unwrap_or_default();
        text.push(b'\n');
        out.write_all(&text)?;
        out.flush()?;
        Ok(done)
    }
}

/// What an export file held when it verified.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportIntact {
    pub records: u64,
    pub first: Option<(i64, String)>,
    pub last: Option<(i64, String)>,
    pub exported_at: String,
}

/// Checks an export file offline against the operator's public key: `Ok(Err(why))` names the
/// first line (and record) that is not as exported.
pub fn verify_export(
    input: &mut impl BufRead,
    key: &PublicKey,
) -> Result<Result<ExportIntact, String>, std::io::Error> {
    let mut digest = Sha256::new();
    let mut links = 0u64;
    let mut records = HashSet::new();
    let mut out = ExportIntact::default();
    let mut last: HashMap<String, i64> = HashMap::new();
    let mut n = 0u64;
    loop {
        let mut line = Vec::new();
        let read = std::io::Read::take(&mut *input, MAX_LINE_BYTES).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(Err(format!(
                "the file ends after line {n} without its signed head: it was cut or is not an export"
            )));
        }
        n += 1;
        if let Ok(head) = serde_json::from_slice::<ExportHead>(&line) {
            let more = std::io::Read::read(input, &mut [0u8; 1])? > 0;
            return Ok(check_head(head, digest, links, key, more, n).map(|at| {
                out.records = records.len() as u64;
                out.exported_at = at;
                out
            }));
        }
        let Ok(l) = serde_json::from_slice::<ExportLink<Canonical<String>>>(&line) else {
            return Ok(Err(format!(
                "line {n} is not a line of an audit export (edited?)"
            )));
        };
        let id = l.link.id;
        if link_hash(&l.prev, &l.link) != l.hash {
            return Ok(Err(format!(
                "line {n}: record #{id} was changed: it does not match its hash"
            )));
        }
        let before = last.get(&l.link.chain).copied();
        if before.is_some_and(|b| l.link.seq <= b) {
            return Ok(Err(format!(
                "line {n}: record #{id} is out of order: lines were reordered"
            )));
        }
        if l.after != before || l.after.is_some_and(|a| a >= l.link.seq) {
            return Ok(Err(format!(
                "line {n}: record #{id} does not follow the line before it: lines were removed or reordered"
            )));
        }
        digest.update(&line);
        links += 1;
        records.insert(id);
        out.first.get_or_insert((id, l.link.ts.clone()));
        out.last = Some((id, l.link.ts.clone()));
        last.insert(l.link.chain.clone(), l.link.seq);
    }
}

/// The head line's checks: what it signs is these lines, and this key signed it.
fn check_head(
    head: ExportHead,
    digest: Sha256,
    links: u64,
    key: &PublicKey,
    more: bool,
    n: u64,
) -> Result<String, String> {
    if head.head.format != FORMAT {
        return Err(format!("line {n}: not an export of this format ({FORMAT})"));
    }
    if head.head.public_key != key.line() {
        return Err(format!(
            "the export is signed by {}, not by the key given",
            crate::term::clip(&head.head.public_key, 80)
        ));
    }
    let body = serde_json::to_vec(&head.head).unwrap_or_default();
    if !key.verifies(&body, &head.signature) {
        return Err(
            "the export's head is not signed by this key (the head was edited or forged)".into(),
        );
    }
    if head.head.links != links
        || head.head.digest != super::audit_key::hex(digest.finalize().as_slice())
    {
        return Err(format!(
            "the lines before the head are not the ones signed ({} signed, {links} found): lines were removed, inserted or edited",
            head.head.links
        ));
    }
    if more {
        return Err(format!(
            "lines follow the signed head (line {n}): they were added"
        ));
    }
    Ok(head.head.exported_at)
}
