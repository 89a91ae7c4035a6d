//! API tokens of `serve --http`: only the SHA-256 of each token is stored (the token itself is
//! printed once by `token create` and never kept). A lookup hashes the presented token and
//! compares it with every stored hash in constant time.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;
use subtle::ConstantTimeEq;

/// Longest token name.
pub const MAX_TOKEN_NAME: usize = 64;

/// One stored token, without its hash.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenRecord {
    pub name: String,
    /// The name of a policy in the config's `sandbox.policies` (none: the config's own policy).
    pub policy: Option<String>,
    pub tenant: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: f64,
    pub expires_at: Option<f64>,
    pub revoked_at: Option<f64>,
}

impl TokenRecord {
    /// Why the token may not be used at `now_ms`, if it may not.
    pub fn unusable(&self, now_ms: f64) -> Option<&'static str> {
        if self.revoked_at.is_some() {
            Some("the token was revoked")
        } else if self.expires_at.is_some_and(|e| e <= now_ms) {
            Some("the token has expired")
        } else {
            None
        }
    }
}

/// Token names: letters, digits, `-`, `_`, `.`, 1 to [`MAX_TOKEN_NAME`] characters.
pub fn valid_token_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOKEN_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The refusal of a token name that is not allowed.
pub(super) fn name_refusal(name: &str) -> Option<StoreError> {
    (!valid_token_name(name)).then(|| {
        StoreError::Capability(format!(
            "token name {name:?} is not allowed: use 1 to {MAX_TOKEN_NAME} letters, digits, '-', '_' or '.'"
        ))
    })
}

/// The refusal of a token name held by a usable token.
pub(super) fn exists(name: &str) -> StoreError {
    StoreError::Capability(format!(
        "a token named '{name}' exists; revoke it first (mcp-sandbox token revoke {name}) or choose another name"
    ))
}

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRecord> {
    Ok(TokenRecord {
        name: r.get(0)?,
        policy: r.get(1)?,
        tenant: r.get(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

const COLUMNS: &str = "name, policy, tenant, created_at, expires_at, revoked_at";

impl Store {
    /// Stores a new token's hash. A name in use by a token that is neither revoked nor expired
    /// is refused; a revoked or expired one is replaced.
    pub fn create_token(&self, record: &TokenRecord, sha256_hex: &str) -> Result<(), StoreError> {
        if let Some(refusal) = name_refusal(&record.name) {
            return Err(refusal);
        }
        if let Some(pg) = self.pg() {
            return pg.create_token(record, sha256_hex);
        }
        self.write(|tx| {
            let existing = tx
                .query_row(
                    &format!("SELECT {COLUMNS} FROM api_tokens WHERE name = ?1"),
                    params![record.name],
                    row_to_record,
                )
                .optional()?;
            if let Some(old) = existing {
                if old.unusable(record.created_at).is_none() {
                    return Err(exists(&record.name));
                }
                tx.execute("DELETE FROM api_tokens WHERE name = ?1", params![record.name])?;
            }
            tx.execute(
                "INSERT INTO api_tokens (name, sha256, policy, tenant, created_at, expires_at, revoked_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
                params![
                    record.name,
                    sha256_hex,
                    record.policy,
                    record.tenant,
                    record.created_at,
                    record.expires_at
                ],
            )?;
            Ok(())
        })
    }

    /// Every token, by name (revoked and expired ones included).
    pub fn list_tokens(&self) -> Result<Vec<TokenRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.list_tokens();
        }
        self.with(|conn| {
            let mut stmt =
                conn.prepare(&format!("SELECT {COLUMNS} FROM api_tokens ORDER BY name"))?;
            let rows = stmt.query_map([], row_to_record)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// Marks a token revoked at `now_ms`; false when no usable token has that name.
    pub fn revoke_token(&self, name: &str, now_ms: f64) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.revoke_token(name, now_ms);
        }
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE api_tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                params![name, now_ms],
            )?;
            Ok(n > 0)
        })
    }

    /// The hex SHA-256 of every token neither revoked nor expired at `now_ms`.
    pub fn usable_token_hashes(&self, now_ms: f64) -> Result<Vec<String>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.usable_token_hashes(now_ms);
        }
        self.with(|conn| {
            let mut stmt = conn.prepare(
                "SELECT sha256 FROM api_tokens
                 WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)",
            )?;
            let rows = stmt.query_map(params![now_ms], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// The token whose hash is `sha256` (32 bytes), compared with every stored hash in constant
    /// time; revoked and expired tokens are returned too (the caller says why they fail).
    pub fn find_token(&self, sha256: &[u8]) -> Result<Option<TokenRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.find_token(sha256);
        }
        self.with(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {COLUMNS}, sha256 FROM api_tokens"))?;
            let mut rows = stmt.query([])?;
            let mut found = None;
            while let Some(row) = rows.next()? {
                let stored: String = row.get(6)?;
                let stored = decode_hex(&stored).unwrap_or_default();
                // Every row is compared, whatever matched before.
                let equal: bool = stored.as_slice().ct_eq(sha256).into();
                if equal {
                    found = Some(row_to_record(row)?);
                }
            }
            Ok(found)
        })
    }
}

pub(super) fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn record(name: &str, now: f64) -> TokenRecord {
        TokenRecord {
            name: name.into(),
            policy: None,
            tenant: "default".into(),
            created_at: now,
            expires_at: None,
            revoked_at: None,
        }
    }

    pub(crate) fn create_find_revoke(s: &Store) {
        let hash = [7u8; 32];
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        s.create_token(&record("ci", 1.0), &hex).unwrap();
        assert!(s.create_token(&record("ci", 2.0), &hex).is_err());
        assert!(s.create_token(&record("a b", 2.0), "00").is_err());
        assert_eq!(s.find_token(&hash).unwrap().unwrap().name, "ci");
        assert!(s.find_token(&[8u8; 32]).unwrap().is_none());
        assert!(s.revoke_token("ci", 3.0).unwrap());
        assert!(!s.revoke_token("ci", 4.0).unwrap());
        let r = s.find_token(&hash).unwrap().unwrap();
        assert_eq!(r.unusable(5.0), Some("the token was revoked"));
    }
}
