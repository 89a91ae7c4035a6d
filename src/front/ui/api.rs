//! The read-only queries behind `/ui/api/...`, each for one tenant or for all (an operator's
//! view): executions (the audit log), one execution with its detail, the tool graph and the
//! saved capabilities. Answers are JSON values built here, so the page depends on this file's
//! shapes only.

use crate::store::audit::{AuditFilter, AuditRecord};
use crate::store::{Store, StoreError};
use serde_json::{json, Value};

/// Most executions one list answer holds.
pub const MAX_LIST: usize = 500;
/// Executions a list holds when the request does not say.
pub const DEFAULT_LIST: usize = 100;

/// What a list request filters on (each given filter must hold).
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// `OK`, `RUNNING` or an error code: the outcome, or one of the calls' errors.
    pub outcome: Option<String>,
    /// `server:tool`: executions with at least one call of it.
    pub tool: Option<String>,
    pub principal: Option<String>,
    /// `None`: every tenant (an operator's view).
    pub tenant: Option<String>,
    pub limit: usize,
}

/// The newest executions matching `q`, newest first, as list rows (no code, no detail).
pub fn executions(store: &Store, q: &ListQuery) -> Result<Value, StoreError> {
    let records = store.query_audit(&AuditFilter {
        principal: q.principal.clone(),
        tenant: q.tenant.clone(),
        tool: q.tool.clone(),
        error: q.outcome.clone(),
        limit: q.limit.clamp(1, MAX_LIST),
        ..AuditFilter::default()
    })?;
    let rows: Vec<Value> = records.iter().rev().map(row).collect();
    Ok(json!({ "executions": rows }))
}

/// One list row.
fn row(r: &AuditRecord) -> Value {
    let mut tools: Vec<&str> = Vec::new();
    for c in &r.calls {
        if !tools.contains(&c.tool.as_str()) {
            tools.push(&c.tool);
        }
    }
    json!({
        "id": r.id,
        "ts": r.ts,
        "principal": r.principal,
        "tenant": r.tenant,
        "client": r.client,
        "front": r.front,
        "outcome": r.outcome,
        "duration_ms": r.duration_ms,
        "calls": r.calls.len(),
        "failed_calls": r.calls.iter().filter(|c| c.error.is_some()).count(),
        "tools": tools,
        "labels": r.labels,
    })
}

/// Execution `id` whole (code, calls, trace events, logs), or `None` when it does not exist
/// or belongs to another tenant than `tenant` (when given): the two look the same.
pub fn execution(
    store: &Store,
    id: i64,
    tenant: Option<&str>,
) -> Result<Option<Value>, StoreError> {
    let Some(r) = store.audit_record(id)? else {
        return Ok(None);
    };
    if tenant.is_some_and(|t| t != r.tenant) {
        return Ok(None);
    }
    let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        // A record written before the detail existed (schema 10) has none: an empty one.
        o.entry("detail").or_insert_with(
            || json!({"traces": [], "logs": [], "traces_dropped": 0, "logs_dropped": 0}),
        );
    }
    Ok(Some(v))
}

/// The tool graph of `tenant`: tools with their calls and success rates, edges with counts.
pub fn graph(store: &Store, tenant: &str) -> Result<Value, StoreError> {
    let g = store.for_tenant(tenant).graph(None)?;
    Ok(json!({ "tenant": tenant, "tools": g.tools, "edges": g.edges }))
}

/// The capabilities saved in `tenant` (the latest version of each), with code and schema.
pub fn capabilities(store: &Store, tenant: &str) -> Result<Value, StoreError> {
    let caps = store.for_tenant(tenant).list_capabilities()?;
    Ok(json!({ "tenant": tenant, "capabilities": caps }))
}

/// The tenants the audit log names (an operator's tenant picker).
pub fn tenants(store: &Store) -> Result<Vec<String>, StoreError> {
    store.audit_tenants()
}
