//! API tokens on PostgreSQL (see `store::tokens`: hashes only; a lookup compares every stored
//! hash in constant time).

use super::super::tokens::{decode_hex, name_refusal, TokenRecord};
use super::super::StoreError;
use super::Pg;
use subtle::ConstantTimeEq;

const COLUMNS: &str = "name, policy, tenant, created_at, expires_at, revoked_at";

fn record(r: &tokio_postgres::Row) -> TokenRecord {
    TokenRecord {
        name: r.get(0),
        policy: r.get(1),
        tenant: r.get(2),
        created_at: r.get(3),
        expires_at: r.get(4),
        revoked_at: r.get(5),
    }
}

impl Pg {
    pub fn create_token(&self, rec: &TokenRecord, sha256_hex: &str) -> Result<(), StoreError> {
        if let Some(refusal) = name_refusal(&rec.name) {
            return Err(refusal);
        }
        self.write(async |tx| {
            let existing = tx
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM api_tokens WHERE name = $1 FOR UPDATE"),
                    &[&rec.name],
                )
                .await?
                .map(|r| record(&r));
            if let Some(old) = existing {
                if old.unusable(rec.created_at).is_none() {
                    return Err(super::super::tokens::exists(&rec.name));
                }
                tx.execute("DELETE FROM api_tokens WHERE name = $1", &[&rec.name])
                    .await?;
            }
            tx.execute(
                "INSERT INTO api_tokens (name, sha256, policy, tenant, created_at, expires_at, revoked_at)
                 VALUES ($1, $2, $3, $4, $5, $6, NULL)",
                &[&rec.name, &sha256_hex, &rec.policy, &rec.tenant, &rec.created_at, &rec.expires_at],
            )
            .await?;
            Ok(())
        })
    }

    pub fn list_tokens(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.read(async |c| {
            Ok(c.query(
                &format!("SELECT {COLUMNS} FROM api_tokens ORDER BY name COLLATE \"C\""),
                &[],
            )
            .await?
            .iter()
            .map(record)
            .collect())
        })
    }

    pub fn revoke_token(&self, name: &str, now_ms: f64) -> Result<bool, StoreError> {
        self.write(async |tx| {
            let n = tx
                .execute(
                    "UPDATE api_tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
                    &[&name, &now_ms],
                )
                .await?;
            Ok(n > 0)
        })
    }

    pub fn usable_token_hashes(&self, now_ms: f64) -> Result<Vec<String>, StoreError> {
        self.read(async |c| {
            Ok(c.query(
                "SELECT sha256 FROM api_tokens
                 WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)",
                &[&now_ms],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }

    pub fn find_token(&self, sha256: &[u8]) -> Result<Option<TokenRecord>, StoreError> {
        self.read(async |c| {
            let mut found = None;
            for row in c
                .query(&format!("SELECT {COLUMNS}, sha256 FROM api_tokens"), &[])
                .await?
            {
                let stored: String = row.get(6);
                let stored = decode_hex(&stored).unwrap_or_default();
                let equal: bool = stored.as_slice().ct_eq(sha256).into();
                if equal {
                    found = Some(record(&row));
                }
            }
            Ok(found)
        })
    }
}
