//! The read-only queries behind `/ui/api/...`, each for one tenant or for all (an operator's
//! view): executions (the audit log), one execution with its detail, the tool graph and the
//! saved capabilities. Answers are JSON values built here, so the page depends on this file's
//! shapes only.

use crate::store::audit::AuditFilter;
use crate::store::audit_list::ListRow;
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
    /// The cursor of the page: executions with an id below it (the `next` of the page before).
    pub before: Option<i64>,
}

/// One page of the executions matching `q`, newest first, as list rows (no code, no detail),
/// with `next`: the `before` of the next (older) page, `null` on the last one.
pub fn executions(store: &Store, q: &ListQuery) -> Result<Value, StoreError> {
    let filter = AuditFilter {
        principal: q.principal.clone(),
        tenant: q.tenant.clone(),
        tool: q.tool.clone(),
        error: q.outcome.clone(),
        limit: q.limit.clamp(1, MAX_LIST),
        ..AuditFilter::default()
    };
    let page = store.audit_list(&filter, q.before)?;
    let rows: Vec<Value> = page.rows.iter().map(row).collect();
    Ok(json!({ "executions": rows, "next": page.next }))
}

/// One list row.
fn row(r: &ListRow) -> Value {
    json!({
        "id": r.id,
        "ts": r.ts,
        "principal": r.principal,
        "tenant": r.tenant,
        "client": r.client,
        "front": r.front,
        "outcome": r.outcome,
        "duration_ms": r.duration_ms,
        "calls": r.calls,
        "failed_calls": r.failed_calls,
        "tools": r.tools,
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
