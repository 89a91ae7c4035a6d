//! The parts of a capability save or removal both backends share: what a save computes before
//! touching the store, its refusals, and the audited call of each.

use super::capability_record::{
    capability_id_in, sha256_hex, CapabilityQuota, CapabilityRecord, NewCapability,
};
use super::StoreError;

/// What a save computes before touching the store.
pub(super) struct Prepared {
    pub author: String,
    pub author_policies: String,
    pub id: String,
    pub sha: String,
    pub schema: Option<String>,
    /// The language's name (`javascript`, `python`).
    pub language: String,
}

impl Prepared {
    pub(super) fn of(
        new: &NewCapability,
        quota: &CapabilityQuota,
        tenant: &str,
    ) -> Result<Self, StoreError> {
        quota.check_code(&new.code)?;
        let author_policies = serde_json::to_string(&new.author_policies)
            .map_err(|e| StoreError::Capability(e.to_string()))?;
        let schema = match &new.input_schema {
            Some(s) => {
                Some(serde_json::to_string(s).map_err(|e| StoreError::Capability(e.to_string()))?)
            }
            None => None,
        };
        Ok(Prepared {
            author: new.author().to_string(),
            author_policies,
            id: capability_id_in(tenant, &new.name, &new.code)?,
            sha: sha256_hex(&new.code),
            schema,
            language: new.language.as_str().to_string(),
        })
    }
}

/// The refusal of a save whose id another code already has.
pub(super) fn collision(id: &str) -> StoreError {
    StoreError::Capability(format!(
        "capability id {id} is already used by different code (a 4-hex hash prefix collision); change the code slightly (a comment will do) and save again"
    ))
}

/// The refusal of a save over the total quota.
pub(super) fn over_total(total: i64, quota: &CapabilityQuota) -> StoreError {
    StoreError::QuotaExceeded(format!(
        "saving this would make the stored capabilities {total} bytes; the quota is {} bytes (capability store quota; `serve --capability-store-bytes` sets it). Remove capabilities you no longer need (`mcp-sandbox capability remove NAME`)",
        quota.max_total_bytes
    ))
}

/// The audited call of a save.
pub(super) fn save_call(rec: &CapabilityRecord) -> super::audit::AuditCall {
    super::audit::AuditCall {
        kind: "capability_save".into(),
        tool: rec.name.clone(),
        args_sha256: Some(rec.code_sha256.clone()),
        args: Some(serde_json::json!({"id": rec.id, "version": rec.version}).to_string()),
        error: None,
        duration_ms: None,
        approval: None,
    }
}

/// The audited call of a removal of `n` versions.
pub(super) fn remove_call(name_or_id: &str, n: usize) -> super::audit::AuditCall {
    super::audit::AuditCall {
        kind: "capability_remove".into(),
        tool: name_or_id.to_string(),
        args_sha256: None,
        args: Some(serde_json::json!({"removed_versions": n}).to_string()),
        error: None,
        duration_ms: None,
        approval: None,
    }
}
