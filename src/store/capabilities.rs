//! Saved capabilities (named, versioned code) and the CLI's last execution.
//!
//! A capability is named `namespace:action` and identified by
//! `local.<tenant>.<namespace>.<action>.<first 4 hex digits of the SHA-256 of its code>`
//! (`local.default.…` for the CLI and callers without a tenant). Each tenant has its own
//! capabilities: a [`Store`] handle sees only those of its tenant ([`Store::for_tenant`]), and
//! the storage quota counts per tenant.
//! Saving different code under a name adds a version (the latest wins when resolving); saving
//! the code of the latest version again only updates its description and schema; saving the code
//! of an older version makes that version the latest again (same id, new version number).

pub(super) use super::capability_parts::{collision, over_total, remove_call, save_call, Prepared};
use super::{Store, StoreError};
use crate::trace::now_ms;
use rusqlite::{params, OptionalExtension, Row};
use sandbox_runner::protocol::Language;

pub(super) use super::capability_record::LAST_EXECUTION_KEY;
pub use super::capability_record::{
    capability_id, split_name, CapabilityQuota, CapabilityRecord, LastExecution, NewCapability,
};

pub(super) const COLUMNS: &str = "id, name, version, code, code_sha256, description, input_schema, created_at, author, author_policies, language";

/// A row: the record, its schema and author policies as JSON text, its language's name.
pub(super) type RawRow = (CapabilityRecord, Option<String>, Option<String>, String);

fn from_row(r: &Row<'_>) -> rusqlite::Result<RawRow> {
    Ok((
        CapabilityRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            version: r.get(2)?,
            code: r.get(3)?,
            code_sha256: r.get(4)?,
            description: r.get(5)?,
            input_schema: None,
            created_at: r.get(7)?,
            author: r.get(8)?,
            author_policies: Vec::new(),
            language: Language::Javascript,
        },
        r.get(6)?,
        r.get(9)?,
        r.get(10)?,
    ))
}

pub(super) fn finish(row: RawRow) -> Result<CapabilityRecord, StoreError> {
    let (mut rec, schema, policies, language) = row;
    rec.language = Language::parse(&language).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "capability {} has an unknown language {language:?}",
            rec.id
        ))
    })?;
    if let Some(text) = policies {
        rec.author_policies = serde_json::from_str(&text).map_err(|e| {
            StoreError::Corrupt(format!(
                "capability {} has bad author policies: {e}",
                rec.id
            ))
        })?;
    }
    if let Some(text) = schema {
        rec.input_schema = Some(serde_json::from_str(&text).map_err(|e| {
            StoreError::Corrupt(format!("capability {} has a bad schema: {e}", rec.id))
        })?);
    }
    Ok(rec)
}

impl Store {
    /// Saves a capability version within the default [`CapabilityQuota`].
    pub fn save_capability(&self, new: &NewCapability) -> Result<CapabilityRecord, StoreError> {
        self.save_capability_within(new, &CapabilityQuota::default())
    }

    /// Saves a capability version (see the module documentation) and returns it: refused when
    /// its code is over the quota's size or the store would hold more than its total; versions
    /// of the name past the quota's count are deleted, oldest first.
    pub fn save_capability_within(
        &self,
        new: &NewCapability,
        quota: &CapabilityQuota,
    ) -> Result<CapabilityRecord, StoreError> {
        self.save_capability_audited(new, quota, None)
    }

    /// [`Store::save_capability_within`], and when `audit` is given, its record (with one
    /// `capability_save` call naming the saved id and version) committed in the same
    /// transaction: a save is never stored unaudited, nor audited but not stored.
    pub fn save_capability_audited(
        &self,
        new: &NewCapability,
        quota: &CapabilityQuota,
        audit: Option<super::audit::AuditRecord>,
    ) -> Result<CapabilityRecord, StoreError> {
        let prepared = Prepared::of(new, quota, &self.tenant)?;
        if let Some(pg) = self.pg() {
            return pg.save_capability(&self.tenant, new, quota, &prepared, audit);
        }
        let Prepared {
            author,
            author_policies,
            id,
            sha,
            schema,
            language,
        } = prepared;
        let tenant = self.tenant.clone();
        self.write(|tx| {
            let existing: Option<(String, String, i64)> = tx
                .query_row(
                    "SELECT name, code_sha256, version FROM capabilities WHERE id = ?1",
                    params![id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let latest: Option<i64> = tx.query_row(
                "SELECT MAX(version) FROM capabilities WHERE tenant = ?2 AND name = ?1",
                params![new.name, &*tenant],
                |r| r.get(0),
            )?;
            let next = latest.unwrap_or(0) + 1;
            match existing {
                Some((name, old_sha, _)) if name != new.name || old_sha != sha => {
                    return Err(collision(&id));
                }
                Some((_, _, version)) if Some(version) == latest => {
                    tx.execute(
                        "UPDATE capabilities SET description = ?2, input_schema = ?3, author = ?4,
                            author_policies = ?5, language = ?6 WHERE id = ?1",
                        params![id, new.description, schema, author, author_policies, language],
                    )?;
                }
                Some(_) => {
                    tx.execute(
                        "UPDATE capabilities SET version = ?2, description = ?3, input_schema = ?4,
                            created_at = ?5, author = ?6, author_policies = ?7, language = ?8
                            WHERE id = ?1",
                        params![
                            id,
                            next,
                            new.description,
                            schema,
                            now_ms(),
                            author,
                            author_policies,
                            language
                        ],
                    )?;
                }
                None => {
                    tx.execute(
                        "INSERT INTO capabilities (id, name, version, code, code_sha256, description,
                            input_schema, created_at, tenant, author, author_policies, language)
                            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                        params![
                            id,
                            new.name,
                            next,
                            new.code,
                            sha,
                            new.description,
                            schema,
                            now_ms(),
                            &*tenant,
                            author,
                            author_policies,
                            language
                        ],
                    )?;
                }
            }
            // Keep the newest versions of this name only.
            let keep = i64::try_from(quota.max_versions.max(1)).unwrap_or(i64::MAX);
            tx.execute(
                "DELETE FROM capabilities WHERE tenant = ?3 AND name = ?1 AND version <=
                    (SELECT MAX(version) FROM capabilities WHERE tenant = ?3 AND name = ?1) - ?2",
                params![new.name, keep, &*tenant],
            )?;
            let total: i64 = tx.query_row(
                "SELECT COALESCE(SUM(LENGTH(CAST(code AS BLOB)) + COALESCE(LENGTH(CAST(description AS BLOB)), 0)
                    + COALESCE(LENGTH(CAST(input_schema AS BLOB)), 0)), 0) FROM capabilities
                    WHERE tenant = ?1",
                params![&*tenant],
                |r| r.get(0),
            )?;
            if total as u64 > quota.max_total_bytes {
                // Returning an error rolls the transaction back: nothing was saved or deleted.
                return Err(over_total(total, quota));
            }
            let row = tx.query_row(
                &format!("SELECT {COLUMNS} FROM capabilities WHERE id = ?1"),
                params![id],
                from_row,
            )?;
            let rec = finish(row)?;
            if let Some(mut record) = audit {
                record.calls = vec![save_call(&rec)];
                super::audit::insert(tx, &record)?;
            }
            Ok(rec)
        })
    }

    /// Who saved the version of `name` before `version` (`Some(None)`: it has no recorded
    /// author; `None`: there is no earlier version).
    pub fn previous_author(
        &self,
        name: &str,
        version: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.previous_author(&self.tenant, name, version);
        }
        self.with(|conn| {
            Ok(conn
                .query_row(
                    "SELECT author FROM capabilities WHERE tenant = ?3 AND name = ?1 AND version < ?2
                     ORDER BY version DESC LIMIT 1",
                    params![name, version, &*self.tenant],
                    |r| r.get::<_, Option<String>>(0),
                )
                .optional()?)
        })
    }

    /// The latest version of `name` (`namespace:action`), if any.
    pub fn resolve_capability(&self, name: &str) -> Result<Option<CapabilityRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.resolve_capability(&self.tenant, name);
        }
        self.with(|conn| {
            conn.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM capabilities WHERE tenant = ?2 AND name = ?1 ORDER BY version DESC LIMIT 1"
                ),
                params![name, &*self.tenant],
                from_row,
            )
            .optional()?
            .map(finish)
            .transpose()
        })
    }

    /// A capability by name (latest version) or by id.
    pub fn find_capability(
        &self,
        name_or_id: &str,
    ) -> Result<Option<CapabilityRecord>, StoreError> {
        if name_or_id.contains(':') {
            return self.resolve_capability(name_or_id);
        }
        if let Some(pg) = self.pg() {
            return pg.capability_by_id(&self.tenant, name_or_id);
        }
        self.with(|conn| {
            conn.query_row(
                &format!("SELECT {COLUMNS} FROM capabilities WHERE tenant = ?2 AND id = ?1"),
                params![name_or_id, &*self.tenant],
                from_row,
            )
            .optional()?
            .map(finish)
            .transpose()
        })
    }

    /// The latest version of every capability, by name.
    pub fn list_capabilities(&self) -> Result<Vec<CapabilityRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.list_capabilities(&self.tenant);
        }
        self.with(|conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM capabilities c WHERE tenant = ?1 AND version =
                    (SELECT MAX(version) FROM capabilities WHERE tenant = ?1 AND name = c.name)
                 ORDER BY name"
            ))?;
            let rows = stmt.query_map(params![&*self.tenant], from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(finish(row?)?);
            }
            Ok(out)
        })
    }

    /// Every version of `name`, newest first.
    pub fn capability_versions(&self, name: &str) -> Result<Vec<CapabilityRecord>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.capability_versions(&self.tenant, name);
        }
        self.with(|conn| {
            let mut stmt = conn.prepare(&format!(
                "SELECT {COLUMNS} FROM capabilities WHERE tenant = ?2 AND name = ?1 ORDER BY version DESC"
            ))?;
            let rows = stmt.query_map(params![name, &*self.tenant], from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(finish(row?)?);
            }
            Ok(out)
        })
    }

    /// Removes every version of a name (`ns:action`), or one version by id. Returns how many.
    pub fn remove_capability(&self, name_or_id: &str) -> Result<usize, StoreError> {
        self.remove_capability_audited(name_or_id, None)
    }

    /// [`Store::remove_capability`], committing `audit` (with one `capability_remove` call) in
    /// the same transaction when something was removed.
    pub fn remove_capability_audited(
        &self,
        name_or_id: &str,
        audit: Option<super::audit::AuditRecord>,
    ) -> Result<usize, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.remove_capability(&self.tenant, name_or_id, audit);
        }
        self.write(|tx| {
            let n = if name_or_id.contains(':') {
                tx.execute(
                    "DELETE FROM capabilities WHERE tenant = ?2 AND name = ?1",
                    params![name_or_id, &*self.tenant],
                )?
            } else {
                tx.execute(
                    "DELETE FROM capabilities WHERE tenant = ?2 AND id = ?1",
                    params![name_or_id, &*self.tenant],
                )?
            };
            if let (Some(mut record), true) = (audit, n > 0) {
                record.calls = vec![remove_call(name_or_id, n)];
                super::audit::insert(tx, &record)?;
            }
            Ok(n)
        })
    }

    /// Remembers the CLI's last execution.
    pub fn set_last_execution(&self, last: &LastExecution) -> Result<(), StoreError> {
        let text = serde_json::to_string(last).map_err(|e| StoreError::Task(e.to_string()))?;
        if let Some(pg) = self.pg() {
            return pg.set_last_execution(&text);
        }
        self.write(|tx| set_kv(tx, LAST_EXECUTION_KEY, &text))
    }

    /// Deletes the remembered last execution (its code): with `--audit-code hash` no copy of
    /// any code may stay in the store, not even one written before the option was set.
    pub fn forget_last_execution(&self) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.forget_last_execution();
        }
        self.write(|tx| {
            tx.execute("DELETE FROM kv WHERE key = ?1", params![LAST_EXECUTION_KEY])?;
            Ok(())
        })
    }

    pub fn last_execution(&self) -> Result<Option<LastExecution>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.last_execution();
        }
        self.with(|conn| {
            let text: Option<String> = conn
                .query_row(
                    "SELECT value FROM kv WHERE key = ?1",
                    params![LAST_EXECUTION_KEY],
                    |r| r.get(0),
                )
                .optional()?;
            text.map(|t| {
                serde_json::from_str(&t)
                    .map_err(|e| StoreError::Corrupt(format!("last execution: {e}")))
            })
            .transpose()
        })
    }
}

pub(super) fn set_kv(
    tx: &rusqlite::Transaction<'_>,
    key: &str,
    value: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO kv (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![key, value],
    )?;
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::capability_record::sha256_hex;
    use super::*;

    fn cap(name: &str, code: &str) -> NewCapability {
        NewCapability {
            name: name.into(),
            code: code.into(),
            ..Default::default()
        }
    }

    #[test]
    fn ids_are_namespace_action_and_4_hex_of_the_code_hash() {
        let code = "return [1,2,3,4,5].reduce((a, n) => a + n, 0)";
        let full = sha256_hex(code);
        assert_eq!(
            capability_id("math:sum", code).unwrap(),
            format!("local.default.math.sum.{}", &full[..4])
        );
        for bad in ["math", "math:", ":sum", "a.b:c", "m:s:t", "constructor:x"] {
            assert!(capability_id(bad, code).is_err(), "{bad}");
        }
    }

    pub(crate) fn new_code_makes_a_new_version_and_the_latest_wins(s: &Store) {
        let v1 = s.save_capability(&cap("math:sum", "return 1")).unwrap();
        let v2 = s.save_capability(&cap("math:sum", "return 2")).unwrap();
        assert_eq!((v1.version, v2.version), (1, 2));
        assert_ne!(v1.id, v2.id);
        assert_eq!(s.resolve_capability("math:sum").unwrap().unwrap().id, v2.id);
        // The same code as the latest: same version, new description.
        let mut again = cap("math:sum", "return 2");
        again.description = Some("two".into());
        let v2b = s.save_capability(&again).unwrap();
        assert_eq!((v2b.id.as_str(), v2b.version), (v2.id.as_str(), 2));
        // Older code again: that id becomes the latest.
        let v1b = s.save_capability(&cap("math:sum", "return 1")).unwrap();
        assert_eq!((v1b.id.as_str(), v1b.version), (v1.id.as_str(), 3));
        assert_eq!(
            s.resolve_capability("math:sum").unwrap().unwrap().code,
            "return 1"
        );
        assert_eq!(s.list_capabilities().unwrap().len(), 1);
        assert_eq!(s.remove_capability(&v2.id).unwrap(), 1);
        assert_eq!(s.remove_capability("math:sum").unwrap(), 1);
        assert!(s.resolve_capability("math:sum").unwrap().is_none());
    }
}
