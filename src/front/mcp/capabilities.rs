//! `save_capability {name, code, description?, input_schema?}` and `list_capabilities {}`: the
//! capabilities of the state store (docs/learning.md), callable from execute_code as
//! `mcp.<namespace>.<action>(args)`.
//!
//! Malformed arguments (a missing `code`, a `name` that is not a string) are protocol errors,
//! like execute_code's; a request that is well-formed but cannot be saved (a bad name, code that
//! does not parse, a schema that does not compile, a namespace that is a configured server, no
//! state store) is a tool result with `isError: true` and `{error: {code, message}}`.

use super::search_tools::WithText;
use super::{bad_args, Gateway};
use crate::error::{ErrorCode, ExecError};
use crate::script::analysis;
use crate::store::{split_name, CapabilityRecord, NewCapability, Store};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};

pub const SAVE_DESCRIPTION: &str = "Save JavaScript as a capability: reusable code that later \
execute_code scripts call like a tool, `await mcp.<namespace>.<action>(args)`. `name` is \
`namespace:action` (letters, digits, `_`, `-`; the namespace must not be a configured server), \
`code` the body of an async function (the same rules as execute_code; the call's argument object \
is the variable `args`), `input_schema` an optional JSON Schema that `args` is checked against. \
Saving other code under an existing name adds a version; calls use the latest. Answers with the \
saved record (id, name, version, author). A capability's calls obey the caller's policy and the \
policy of the principal who saved it; saving needs `save_capabilities` in the saver's policy \
(tokens and JWT callers). Save code that has already run successfully.";

pub const LIST_DESCRIPTION: &str = "List the saved capabilities (latest version of each): name, \
id, version, author (who saved it), description and input_schema. Call one from execute_code with \
`await mcp.<namespace>.<action>(args)`.";

pub fn save_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "namespace:action, e.g. \"math:sum\"; called as mcp.math.sum(args)."},
            "code": {"type": "string", "description": "The body of an async function; `args` holds the call's argument object; `return` the result."},
            "description": {"type": "string", "description": "What it does, for list_capabilities."},
            "input_schema": {"type": "object", "description": "JSON Schema for `args` (checked before the capability runs)."},
            "language": {"type": "string", "enum": ["javascript", "python"], "description": "The language of `code` (default javascript). A capability in either language is called the same way from both."}
        },
        "required": ["name", "code"],
        "additionalProperties": false
    })
}

pub fn list_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// A capability as the tools show it (without its code).
fn view(rec: &CapabilityRecord) -> Value {
    let (ns, action) = rec.parts();
    json!({
        "name": rec.name,
        "id": rec.id,
        "version": rec.version,
        "author": rec.author_shown(),
        "description": rec.description,
        "input_schema": rec.input_schema,
        "code_sha256": rec.code_sha256,
        "language": rec.language.as_str(),
        "created_at": rec.created_at,
        "call": format!("await mcp.{ns}.{action}(args)"),
    })
}

fn failed(code: ErrorCode, message: String) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": {"code": code.as_str(), "message": message}}))
        .with_text(format!("error {}: {message}", code.as_str()))
}

// The error is the tool's answer itself, returned once per call (serde_json's order-keeping
// map made it larger than clippy's threshold).
#[allow(clippy::result_large_err)]
fn store(gateway: &Gateway, tenant: &str) -> Result<Store, CallToolResult> {
    gateway.store.as_ref().map(|s| s.for_tenant(tenant)).ok_or_else(|| {
        failed(
            ErrorCode::SandboxUnavailable,
            "this server runs without a state store (it could not be opened at start; see its log); restart it with a usable --state PATH".into(),
        )
    })
}

/// Runs a store call off the async threads (SQLite may wait on another process's lock).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, ExecError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e @ crate::store::StoreError::QuotaExceeded(_))) => {
            Err(ExecError::new(ErrorCode::LimitExceeded, e.to_string()))
        }
        Ok(Err(e)) => Err(ExecError::new(ErrorCode::SandboxUnavailable, e.to_string())),
        Err(e) => Err(ExecError::new(
            ErrorCode::SandboxUnavailable,
            format!("the state store task failed: {e}"),
        )),
    }
}

pub async fn save(
    gateway: &Gateway,
    args: JsonObject,
    principal: &crate::context::principal::Principal,
    caller: crate::context::principal::Caller,
) -> Result<CallToolResult, ErrorData> {
    let tenant = principal.tenant.as_str();
    const FIELDS: [&str; 5] = ["name", "code", "description", "input_schema", "language"];
    if let Some(extra) = args.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad_args(format!(
            "save_capability: unknown argument `{extra}`; use name, code, description, input_schema, language"
        )));
    }
    let string = |field: &str| match args.get(field) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(bad_args(format!(
            "save_capability: `{field}` must be a string"
        ))),
    };
    let name = string("name")?
        .ok_or_else(|| bad_args("save_capability: `name` (namespace:action) is required"))?;
    let code = string("code")?
        .ok_or_else(|| bad_args("save_capability: `code` (a string) is required"))?;
    let description = string("description")?;
    let language = match string("language")?.as_deref() {
        None => sandbox_runner::protocol::Language::Javascript,
        Some(name) => match sandbox_runner::protocol::Language::parse(name) {
            Some(l) => l,
            None => {
                return Err(bad_args(format!(
                    "save_capability: `language` must be \"javascript\" or \"python\", not {name:?}"
                )))
            }
        },
    };
    let input_schema = match args.get("input_schema") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err(bad_args(
                "save_capability: `input_schema` must be a JSON Schema object, like {\"type\": \"object\"}",
            ))
        }
    };
    if let Err(why) = crate::config::gateway::may_save_capabilities(principal, &gateway.policies) {
        return Ok(failed(ErrorCode::PermissionDenied, why));
    }
    let invalid = |message: String| Ok(failed(ErrorCode::InvalidArguments, message));
    let (ns, _) = match split_name(&name) {
        Ok(parts) => parts,
        Err(e) => return invalid(e.to_string()),
    };
    let catalog = gateway.sandbox.catalog();
    if catalog.provider(ns).is_some() || catalog.unavailable().contains_key(ns) {
        return invalid(format!(
            "'{ns}' is a configured MCP server, so mcp.{ns}.… always calls the server; save the capability under another namespace"
        ));
    }
    let quota = gateway.capability_quota;
    if let Err(e) = quota.check_code(&code) {
        return Ok(failed(ErrorCode::LimitExceeded, e.to_string()));
    }
    // JavaScript is parsed here; Python's syntax is checked by the runner when it runs.
    if let Err(e) = analysis::references_in(&code, language) {
        return invalid(format!("the code does not parse: {}", e.message));
    }
    if let Some(schema) = &input_schema {
        if let Err(e) = jsonschema::validator_for(schema) {
            return invalid(format!("input_schema is not a valid JSON Schema: {e}"));
        }
    }
    let store = match store(gateway, tenant) {
        Ok(s) => s,
        Err(result) => return Ok(result),
    };
    // The save and its audit record are one transaction.
    let audit = gateway
        .sandbox
        .auditor()
        .map(|a| crate::exec::capability_author::write_record(a.options().code, &caller, &code));
    let new = NewCapability {
        name,
        code,
        description,
        input_schema,
        author: principal.name.clone(),
        author_policies: principal.policies.clone(),
        language,
    };
    match blocking(move || store.save_capability_audited(&new, &quota, audit)).await {
        Ok(rec) => {
            let text = format!(
                "saved {} version {} as {} (author {}); call it from execute_code with `{}`",
                rec.name,
                rec.version,
                rec.id,
                rec.author_shown(),
                view(&rec)["call"].as_str().unwrap_or_default()
            );
            Ok(CallToolResult::structured(view(&rec)).with_text(text))
        }
        Err(e) => Ok(failed(e.code, e.message)),
    }
}

pub async fn list(
    gateway: &Gateway,
    args: JsonObject,
    tenant: &str,
) -> Result<CallToolResult, ErrorData> {
    if let Some(extra) = args.keys().next() {
        return Err(bad_args(format!(
            "list_capabilities: unknown argument `{extra}`; it takes none"
        )));
    }
    let store = match store(gateway, tenant) {
        Ok(s) => s,
        Err(result) => return Ok(result),
    };
    match blocking(move || store.list_capabilities()).await {
        Ok(caps) => {
            let text = if caps.is_empty() {
                "no capabilities saved yet; save one with save_capability".to_string()
            } else {
                caps.iter()
                    .map(|c| {
                        format!(
                            "{} v{} ({}, by {}){}",
                            c.name,
                            c.version,
                            c.id,
                            c.author_shown(),
                            c.description
                                .as_deref()
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let list: Vec<Value> = caps.iter().map(view).collect();
            Ok(CallToolResult::structured(json!({"capabilities": list})).with_text(text))
        }
        Err(e) => Ok(failed(e.code, e.message)),
    }
}
