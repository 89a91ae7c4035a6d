//! `list_state {}`: what this session's scripts kept with `store(key, value)` — each key with
//! its size and age, never the values (read them with `load(key)` in execute_code). Only the
//! caller's own session is listed: the scope is the MCP session, its principal and tenant.
//! With `sandbox.sensitive`, keys are redacted with the session's placeholders.

use super::search_tools::WithText;
use super::{bad_args, Gateway};
use crate::context::session::SessionScope;
use crate::error::ExecError;
use crate::trace::now_ms;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::fmt::Write;

/// The description of `list_state`, with this gateway's bounds.
pub fn description(gateway: &Gateway) -> String {
    let o = &gateway.session;
    format!(
        "List what this session's execute_code scripts kept with `store(key, value)`: each key with \
its size in bytes and its age, plus the session's totals and bounds. Values are not shown: read them \
in a script with `await load(key)`. State belongs to this MCP session (and your principal): another \
session or client never sees it, and it is deleted once the session has been idle for {}. \
Bounds: a value at most {} of JSON, {} keys and {} per session (store() past them fails \
with LIMIT_EXCEEDED). Use it to find data an earlier execution kept instead of fetching it again.",
        o.ttl_text(),
        crate::term::bytes_text(o.max_value_bytes),
        o.max_keys,
        crate::term::bytes_text(o.max_bytes)
    )
}

pub fn input_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

pub async fn call(
    gateway: &Gateway,
    args: JsonObject,
    scope: SessionScope,
    sensitive: Option<std::sync::Arc<crate::context::sensitive::Sensitive>>,
) -> Result<CallToolResult, ErrorData> {
    if let Some(extra) = args.keys().next() {
        return Err(bad_args(format!(
            "list_state: unknown argument `{extra}`; it takes none"
        )));
    }
    let Some(state) = gateway.sandbox.session_state() else {
        return Ok(failed(crate::exec::state::no_store()));
    };
    let mut entries = match state.list(&scope).await {
        Ok(e) => e,
        Err(e) => return Ok(failed(e)),
    };
    // Keys are data a script chose: with `sandbox.sensitive` they get the session's
    // placeholders like everything else the client sees.
    if let Some(sensitive) = sensitive {
        let open = crate::exec::placeholders::ExecPlaceholders::open(
            sensitive,
            Some(scope.clone()),
            Some(state.clone()),
        )
        .await;
        let placeholders = match open {
            Ok(p) => p,
            Err(e) => return Ok(failed(e)),
        };
        for e in &mut entries {
            e.key = placeholders.redact_text(&e.key);
        }
        if let Err(e) = placeholders.save().await {
            return Ok(failed(e));
        }
    }
    // The keys reach the model: what their values were stored after now counts for the session
    // (`context::flow`; used when flow rules have session scope).
    let read: Vec<_> = entries.iter().flat_map(|e| e.sources.clone()).collect();
    if let Err(e) = state.add_session_labels(&scope, read).await {
        return Ok(failed(e));
    }
    let now = now_ms();
    let o = state.options();
    let bytes: u64 = entries.iter().map(|e| e.bytes + e.key.len() as u64).sum();
    let list: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({
                "key": e.key,
                "bytes": e.bytes,
                "age_ms": (now - e.stored_at).max(0.0).round() as u64,
                "labels": e.labels,
            })
        })
        .collect();
    let mut text = if entries.is_empty() {
        "nothing stored in this session; keep a value with `await store(key, value)` in execute_code"
            .to_string()
    } else {
        format!(
            "{} keys, {bytes} of {} bytes used (read one with `await load(key)`):",
            entries.len(),
            o.max_bytes
        )
    };
    for (e, v) in entries.iter().zip(&list) {
        let _ = write!(
            text,
            "\n{} ({} bytes, stored {} s ago)",
            crate::term::escape(&e.key),
            e.bytes,
            v["age_ms"].as_u64().unwrap_or(0) / 1000
        );
    }
    let value = json!({
        "keys": list,
        "count": entries.len(),
        "bytes": bytes,
        "limits": {
            "max_value_bytes": o.max_value_bytes,
            "max_keys": o.max_keys,
            "max_bytes": o.max_bytes,
            "ttl_ms": o.ttl_ms,
        },
    });
    Ok(CallToolResult::structured(value).with_text(text))
}

fn failed(e: ExecError) -> CallToolResult {
    CallToolResult::structured_error(
        json!({"error": {"code": e.code.as_str(), "message": e.message}}),
    )
    .with_text(format!("{}: {}", e.code, e.message))
}
