//! The values of the audit log: a record, its calls and its detail. Shared by the table's writes
//! and reads ([`crate::store::audit`]), the chain's encoding (`store/audit_chain.rs`) and the
//! content pass that makes a record storable (`store/audit_content.rs`), which import this file
//! and not each other.

use serde::{Deserialize, Serialize};

/// One execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Assigned by the store.
    #[serde(default)]
    pub id: i64,
    /// The execution's id (`RequestContext::execution_id`: the one its traces, spans and
    /// logs carry); none for records not of an execution (a capability saved, labels cleared).
    #[serde(default)]
    pub execution_id: Option<String>,
    /// Milliseconds since the Unix epoch, when the execution was admitted.
    pub ts: f64,
    pub principal: String,
    pub tenant: String,
    /// The MCP client's name (`clientInfo.name`), when it gave one.
    pub client: Option<String>,
    /// `run`, `stdio`, `http` or `library`.
    pub front: String,
    /// The code, unless the log keeps hashes only (`--audit-code hash`).
    pub code: Option<String>,
    pub code_sha256: String,
    /// The code's size in bytes (the code itself may not be kept).
    #[serde(default)]
    pub code_bytes: Option<u64>,
    /// `OK`, the error code of the outcome, or [`RUNNING`](crate::store::audit::RUNNING) while the execution runs (a record
    /// left `RUNNING` means the host stopped before the execution ended).
    pub outcome: String,
    pub duration_ms: f64,
    pub calls: Vec<AuditCall>,
    /// The data-flow labels the execution read (`context::flow`), in the order they joined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// The execution's trace events, logs and error (the web view's waterfall): written with
    /// the outcome, read only by [`Store::audit_record`](crate::store::Store::audit_record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<AuditDetail>,
    /// The record's key (`store::write_key`): a record appended with the key of one already
    /// written completes that one. Not read back.
    #[serde(skip)]
    pub write_key: Option<String>,
}

/// What the record keeps of an execution beside its calls, as the client saw it (redacted with
/// the session's placeholders, unless the operator opted in to real values), bounded by
/// [`MAX_DETAIL_TRACES`] and [`MAX_DETAIL_LOGS`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditDetail {
    pub traces: Vec<crate::trace::TraceEvent>,
    /// Trace events past [`MAX_DETAIL_TRACES`], not kept.
    #[serde(default)]
    pub traces_dropped: u64,
    /// Empty with `--audit-code hash` (logs hold what the code printed).
    pub logs: Vec<DetailLog>,
    #[serde(default)]
    pub logs_dropped: u64,
    /// The outcome's error (`code`, `message`; the message only with `--audit-code full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::trace::TraceError>,
    /// What `mcp-sandbox replay` needs (`--audit-record full`): code, context, each call's
    /// arguments and answer, the seed and the clock values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<super::audit_recording::Recording>,
}

/// One log line of an [`AuditDetail`] (its message clipped to [`MAX_DETAIL_LOG_BYTES`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetailLog {
    pub level: String,
    pub message: String,
}

/// Most trace events an [`AuditDetail`] keeps (the first ones).
pub const MAX_DETAIL_TRACES: usize = 2000;
/// Most log lines an [`AuditDetail`] keeps (the first ones).
pub const MAX_DETAIL_LOGS: usize = 200;
/// Longest log message an [`AuditDetail`] keeps whole.
pub const MAX_DETAIL_LOG_BYTES: usize = 4096;

/// One tool or capability call of an execution, in start order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditCall {
    /// `tool` or `capability`.
    pub kind: String,
    /// `server:tool`.
    pub tool: String,
    pub args_sha256: Option<String>,
    /// The arguments as JSON, when the log keeps them (`--audit-args full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// The error code when the call failed.
    pub error: Option<String>,
    pub duration_ms: Option<f64>,
    /// When a policy `ask` rule matched the call: `granted by tty|elicitation|flag` or
    /// `denied by tty|elicitation|flag|timeout|…`; on the web view with the approver:
    /// `granted by web (token:bob)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}
