//! Capabilities and the last execution on PostgreSQL (see `store::capabilities`). A save holds
//! a transaction advisory lock on its tenant and name, so two gateways saving the same name at
//! once take turns: each version number is given once (and `UNIQUE (tenant, name, version)`
//! would refuse a second one anyway).

use super::super::audit::AuditRecord;
use super::super::capabilities::{
    collision, finish, over_total, remove_call, save_call, CapabilityQuota, CapabilityRecord,
    LastExecution, NewCapability, Prepared, RawRow, COLUMNS, LAST_EXECUTION_KEY,
};
use super::super::StoreError;
use super::{big, Pg, Transaction};
use crate::trace::now_ms;

fn raw(r: &tokio_postgres::Row) -> RawRow {
    (
        CapabilityRecord {
            id: r.get(0),
            name: r.get(1),
            version: r.get(2),
            code: r.get(3),
            code_sha256: r.get(4),
            description: r.get(5),
            input_schema: None,
            created_at: r.get(7),
            author: r.get(8),
            author_policies: Vec::new(),
            language: sandbox_runner::protocol::Language::Javascript,
        },
        r.get(6),
        r.get(9),
        r.get(10),
    )
}

fn all(rows: Vec<tokio_postgres::Row>) -> Result<Vec<CapabilityRecord>, StoreError> {
    rows.iter().map(|r| finish(raw(r))).collect()
}

/// Sets one key of `kv`.
pub(super) const SET_KV: &str = "INSERT INTO kv (key, value) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value";

pub(super) async fn set_kv(tx: &Transaction<'_>, key: &str, value: &str) -> Result<(), StoreError> {
    let st = tx.prepare_cached(SET_KV).await?;
    tx.execute(&st, &[&key, &value]).await?;
    Ok(())
}

impl Pg {
    pub(in crate::store) fn save_capability(
        &self,
        tenant: &str,
        new: &NewCapability,
        quota: &CapabilityQuota,
        p: &Prepared,
        audit: Option<AuditRecord>,
    ) -> Result<CapabilityRecord, StoreError> {
        self.write(async |tx| {
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))",
                &[&tenant, &new.name],
            )
            .await?;
            let existing: Option<(String, String, i64)> = tx
                .query_opt(
                    "SELECT name, code_sha256, version FROM capabilities WHERE id = $1",
                    &[&p.id],
                )
                .await?
                .map(|r| (r.get(0), r.get(1), r.get(2)));
            let latest: Option<i64> = tx
                .query_one(
                    "SELECT MAX(version) FROM capabilities WHERE tenant = $2 AND name = $1",
                    &[&new.name, &tenant],
                )
                .await?
                .get(0);
            let next = latest.unwrap_or(0) + 1;
            match existing {
                Some((name, old_sha, _)) if name != new.name || old_sha != p.sha => {
                    return Err(collision(&p.id));
                }
                Some((_, _, version)) if Some(version) == latest => {
                    tx.execute(
                        "UPDATE capabilities SET description = $2, input_schema = $3, author = $4,
                            author_policies = $5, language = $6 WHERE id = $1",
                        &[
                            &p.id, &new.description, &p.schema, &p.author, &p.author_policies,
                            &p.language,
                        ],
                    )
                    .await?;
                }
                Some(_) => {
                    tx.execute(
                        "UPDATE capabilities SET version = $2, description = $3, input_schema = $4,
                            created_at = $5, author = $6, author_policies = $7, language = $8
                            WHERE id = $1",
                        &[
                            &p.id, &next, &new.description, &p.schema, &now_ms(), &p.author,
                            &p.author_policies, &p.language,
                        ],
                    )
                    .await?;
                }
                None => {
                    tx.execute(
                        "INSERT INTO capabilities (id, name, version, code, code_sha256, description,
                            input_schema, created_at, tenant, author, author_policies, language)
                            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                        &[
                            &p.id, &new.name, &next, &new.code, &p.sha, &new.description,
                            &p.schema, &now_ms(), &tenant, &p.author, &p.author_policies,
                            &p.language,
                        ],
                    )
                    .await?;
                }
            }
            let keep = big(quota.max_versions.max(1));
            tx.execute(
                "DELETE FROM capabilities WHERE tenant = $3 AND name = $1 AND version <=
                    (SELECT MAX(version) FROM capabilities WHERE tenant = $3 AND name = $1) - $2",
                &[&new.name, &keep, &tenant],
            )
            .await?;
            let total: i64 = tx
                .query_one(
                    "SELECT COALESCE(SUM(octet_length(code) + COALESCE(octet_length(description), 0)
                        + COALESCE(octet_length(input_schema), 0)), 0)::BIGINT FROM capabilities
                        WHERE tenant = $1",
                    &[&tenant],
                )
                .await?
                .get(0);
            if total as u64 > quota.max_total_bytes {
                return Err(over_total(total, quota));
            }
            let row = tx
                .query_one(
                    &format!("SELECT {COLUMNS} FROM capabilities WHERE id = $1"),
                    &[&p.id],
                )
                .await?;
            let rec = finish(raw(&row))?;
            if let Some(mut record) = audit.clone() {
                record.calls = vec![save_call(&rec)];
                super::audit::insert(tx, &self.chain, &record).await?;
            }
            Ok(rec)
        })
    }

    pub fn previous_author(
        &self,
        tenant: &str,
        name: &str,
        version: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        self.read(async |c| {
            Ok(c.query_opt(
                "SELECT author FROM capabilities WHERE tenant = $3 AND name = $1 AND version < $2
                 ORDER BY version DESC LIMIT 1",
                &[&name, &version, &tenant],
            )
            .await?
            .map(|r| r.get(0)))
        })
    }

    pub fn resolve_capability(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<CapabilityRecord>, StoreError> {
        self.read(async |c| {
            c.query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM capabilities WHERE tenant = $2 AND name = $1 ORDER BY version DESC LIMIT 1"
                ),
                &[&name, &tenant],
            )
            .await?
            .map(|r| finish(raw(&r)))
            .transpose()
        })
    }

    pub fn capability_by_id(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<CapabilityRecord>, StoreError> {
        self.read(async |c| {
            c.query_opt(
                &format!("SELECT {COLUMNS} FROM capabilities WHERE tenant = $2 AND id = $1"),
                &[&id, &tenant],
            )
            .await?
            .map(|r| finish(raw(&r)))
            .transpose()
        })
    }

    pub fn list_capabilities(&self, tenant: &str) -> Result<Vec<CapabilityRecord>, StoreError> {
        self.read(async |c| {
            all(c
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM capabilities c WHERE tenant = $1 AND version =
                            (SELECT MAX(version) FROM capabilities WHERE tenant = $1 AND name = c.name)
                         ORDER BY name COLLATE \"C\""
                    ),
                    &[&tenant],
                )
                .await?)
        })
    }

    pub fn capability_versions(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Vec<CapabilityRecord>, StoreError> {
        self.read(async |c| {
            all(c
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM capabilities WHERE tenant = $2 AND name = $1 ORDER BY version DESC"
                    ),
                    &[&name, &tenant],
                )
                .await?)
        })
    }

    pub fn remove_capability(
        &self,
        tenant: &str,
        name_or_id: &str,
        audit: Option<AuditRecord>,
    ) -> Result<usize, StoreError> {
        let column = if name_or_id.contains(':') {
            "name"
        } else {
            "id"
        };
        self.write(async |tx| {
            let n = tx
                .execute(
                    &format!("DELETE FROM capabilities WHERE tenant = $2 AND {column} = $1"),
                    &[&name_or_id, &tenant],
                )
                .await? as usize;
            if let (Some(mut record), true) = (audit.clone(), n > 0) {
                record.calls = vec![remove_call(name_or_id, n)];
                super::audit::insert(tx, &self.chain, &record).await?;
            }
            Ok(n)
        })
    }

    pub fn set_last_execution(&self, text: &str) -> Result<(), StoreError> {
        self.write(async |tx| set_kv(tx, LAST_EXECUTION_KEY, text).await)
    }

    pub fn forget_last_execution(&self) -> Result<(), StoreError> {
        self.write(async |tx| {
            tx.execute("DELETE FROM kv WHERE key = $1", &[&LAST_EXECUTION_KEY])
                .await?;
            Ok(())
        })
    }

    pub fn last_execution(&self) -> Result<Option<LastExecution>, StoreError> {
        self.read(async |c| {
            c.query_opt(
                "SELECT value FROM kv WHERE key = $1",
                &[&LAST_EXECUTION_KEY],
            )
            .await?
            .map(|r| {
                serde_json::from_str(r.get::<_, &str>(0))
                    .map_err(|e| StoreError::Corrupt(format!("last execution: {e}")))
            })
            .transpose()
        })
    }
}
