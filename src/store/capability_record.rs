//! The values of a saved capability: its record, what a save stores, its id and name rules, the
//! storage quota, and the CLI's last execution. Shared by the SQLite and PostgreSQL paths
//! ([`crate::store::capabilities`], `store/pg/capabilities.rs`) and the parts of a save both
//! compute (`store/capability_parts.rs`), which import this file and not each other.

use super::StoreError;
use sandbox_runner::protocol::valid_server_name;
use sandbox_runner::protocol::Language;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A stored capability version.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapabilityRecord {
    pub id: String,
    /// `namespace:action`
    pub name: String,
    pub version: i64,
    pub code: String,
    pub code_sha256: String,
    pub description: Option<String>,
    pub input_schema: Option<Value>,
    /// Milliseconds since the Unix epoch.
    pub created_at: f64,
    /// The principal who saved this version (`token:NAME`, `jwt:SUB`, `local`, `anonymous`);
    /// `None` for a version saved before authors were recorded (schema 6).
    pub author: Option<String>,
    /// The names of the author's policies (`sandbox.policies`) when it saved this version: the
    /// version's calls run under them as well as under the caller's policy.
    pub author_policies: Vec<String>,
    /// The language of `code`: the engine that runs it.
    pub language: Language,
}

impl CapabilityRecord {
    /// The author as shown to people: `unknown` for versions saved before authors were recorded.
    pub fn author_shown(&self) -> &str {
        self.author.as_deref().unwrap_or("unknown")
    }

    /// `(namespace, action)`.
    pub fn parts(&self) -> (&str, &str) {
        self.name.split_once(':').unwrap_or((&self.name, ""))
    }
}

/// What `capability save` stores.
#[derive(Debug, Clone, Default)]
pub struct NewCapability {
    pub name: String,
    pub code: String,
    pub description: Option<String>,
    pub input_schema: Option<Value>,
    /// Who saves it (`local` when empty).
    pub author: String,
    /// The author's policies (names in `sandbox.policies`).
    pub author_policies: Vec<String>,
    /// The language of `code`.
    pub language: Language,
}

impl NewCapability {
    pub(super) fn author(&self) -> &str {
        if self.author.is_empty() {
            "local"
        } else {
            &self.author
        }
    }
}

/// The last execution of `mcp-sandbox run`, for `capability save --from-last`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastExecution {
    pub code: String,
    /// The language of `code` (absent in records written before Python scripts: JavaScript).
    #[serde(default)]
    pub language: Language,
    /// The execution succeeded.
    pub success: bool,
    /// Tool calls it made, and how many of them failed.
    pub tool_calls: u64,
    pub failed_calls: u64,
    pub ts: f64,
}

pub(super) const LAST_EXECUTION_KEY: &str = "last_execution";

pub(super) fn sha256_hex(code: &str) -> String {
    Sha256::digest(code.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks a capability name and splits it into `(namespace, action)`.
pub fn split_name(name: &str) -> Result<(&str, &str), StoreError> {
    let bad = || {
        StoreError::Capability(format!(
            "capability name '{name}' is not valid: use namespace:action, each part made of letters, digits, '_' or '-' (like math:sum)"
        ))
    };
    let (ns, action) = name.split_once(':').ok_or_else(bad)?;
    if !valid_server_name(ns) || !valid_server_name(action) {
        return Err(bad());
    }
    Ok((ns, action))
}

/// The id of `code` saved as `name` in the default tenant.
pub fn capability_id(name: &str, code: &str) -> Result<String, StoreError> {
    capability_id_in(crate::context::principal::DEFAULT_TENANT, name, code)
}

/// The id of `code` saved as `name` in `tenant`.
pub fn capability_id_in(tenant: &str, name: &str, code: &str) -> Result<String, StoreError> {
    let (ns, action) = split_name(name)?;
    Ok(format!(
        "local.{tenant}.{ns}.{action}.{}",
        &sha256_hex(code)[..4]
    ))
}

/// Bounds of capability storage, so saves cannot grow the state file without limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilityQuota {
    /// Largest code of one capability, in bytes.
    pub max_code_bytes: u64,
    /// Versions kept per name; saving more deletes the oldest.
    pub max_versions: u64,
    /// Bytes of code, descriptions and schemas of all capabilities together.
    pub max_total_bytes: u64,
}

impl Default for CapabilityQuota {
    fn default() -> Self {
        CapabilityQuota {
            max_code_bytes: 256 * 1024,
            max_versions: 20,
            max_total_bytes: 64 * 1024 * 1024,
        }
    }
}

impl CapabilityQuota {
    /// The refusal of code over the size limit, if it is.
    pub fn check_code(&self, code: &str) -> Result<(), StoreError> {
        if code.len() as u64 > self.max_code_bytes {
            return Err(StoreError::QuotaExceeded(format!(
                "the code is {} bytes; a capability may have at most {} bytes (capability code limit; `serve --capability-max-code-bytes` sets it)",
                code.len(),
                self.max_code_bytes
            )));
        }
        Ok(())
    }
}
