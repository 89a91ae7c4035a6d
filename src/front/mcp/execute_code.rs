//! `execute_code {code, context?, timeout_ms?, language?, limits?}`: one script in a fresh locked-down
//! runner. `structuredContent` is the whole outcome (`{success, result, error, logs, traces,
//! metrics}`); the text is a readable summary. A failed script has `isError: true`.

use super::search_tools::WithText;
use super::{bad_args, Gateway};
use crate::context::limits::RequestedLimits;
use crate::context::RequestContext;
use crate::error::ErrorCode;
use crate::exec::outcome::Outcome;
use crate::exec::session::ExecRequest;
use crate::script::transpile::{to_javascript_mapped, Language};
use crate::trace::TraceKind;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::fmt::Write;
use tokio_util::sync::CancellationToken;

/// The result is cut to this many characters in the text summary (the full value is in
/// `structuredContent`).
const SUMMARY_RESULT_CHARS: usize = 4000;
const SUMMARY_LOG_LINES: usize = 20;

pub fn description(gateway: &Gateway) -> String {
    let catalog = gateway.sandbox.catalog();
    let servers: Vec<String> = catalog
        .tools()
        .into_iter()
        .map(|t| t.server)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut d = String::from(
        "Run JavaScript (or TypeScript with language: \"typescript\") in an isolated sandbox whose only \
access to the world is MCP tool calls. The code is the body of an async function:\n\
- call tools with `await mcp.<server>.<tool>({...args})` (names with dashes: `mcp.server[\"get-sum\"]({...})`); \
use search_tools to see the exact signatures;\n\
- `return` a JSON-serialisable value: it is the result (without `return`, the value of the last expression);\n\
- run independent calls in parallel with `await Promise.all([...])`;\n\
- a failed call throws an Error with `.code` (TOOL_NOT_FOUND with `.alternatives`, INVALID_ARGUMENTS, \
TOOL_ERROR, TOOL_TIMEOUT, PERMISSION_DENIED, LIMIT_EXCEEDED): catch it with try/catch to recover;\n\
- `Object.keys(mcp)` lists the servers, `Object.keys(mcp.<server>)` their tools;\n\
- `console.log` output is returned in `logs`; `context` keys are variables in scope.\n\
There is no network (no fetch), filesystem or require/import: standard JavaScript, `mcp`, timers, URL, \
TextEncoder/TextDecoder, structuredClone, AbortController and crypto.subtle.digest. \
A tool result is its structuredContent when the tool sends one, else its text as a string. \
The answer holds result, logs, error {code, message} and a trace of every tool call; a failed script \
is reported with isError and the error code.",
    );
    if !servers.is_empty() {
        let _ = write!(d, "\nServers: {}.", servers.join(", "));
    }
    if gateway.store.is_some() {
        d.push_str(
            "\nSaved capabilities (see list_capabilities; add one with save_capability) are called \
like tools: `await mcp.<namespace>.<action>(args)`.",
        );
    }
    for (s, reason) in catalog.unavailable() {
        let _ = write!(d, "\nUnavailable: {s} ({reason}).");
    }
    d
}

pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The body of an async function: await tool calls, `return` the result."},
            "context": {"type": "object", "description": "Values made available to the code as variables (keys must be identifiers)."},
            "timeout_ms": {"type": "integer", "minimum": 1, "description": "Wall-clock limit for the whole execution (default: the server's, 30000 unless configured). It can only lower the server's limit; a larger value is capped and the outcome's metrics.limits says so."},
            "limits": {"type": "object", "description": "Lower any of the server's limits for this execution (timeout_ms, cpu_ms, memory_mb, stack_kb, call_timeout_ms, max_calls, max_concurrent_calls, source_bytes, result_bytes, log_bytes, frame_bytes); larger values are capped.", "additionalProperties": {"type": "integer", "minimum": 0}},
            "language": {"type": "string", "enum": ["javascript", "typescript"], "description": "typescript is stripped to JavaScript before it runs (default javascript)."}
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

pub async fn call(
    gateway: &Gateway,
    request: RequestContext,
    args: JsonObject,
    cancel: CancellationToken,
    answer: super::responses::AnswerKey,
    (approvals, progress): (
        std::sync::Arc<crate::gate::approval::Approvals>,
        Option<crate::tools::passthrough::FeedbackRef>,
    ),
) -> Result<CallToolResult, ErrorData> {
    const FIELDS: [&str; 5] = ["code", "context", "timeout_ms", "language", "limits"];
    if let Some(extra) = args.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad_args(format!(
            "execute_code: unknown argument `{extra}`; use code, context, timeout_ms, language, limits"
        )));
    }
    let code = match args.get("code") {
        Some(Value::String(s)) => s,
        _ => return Err(bad_args("execute_code: `code` (a string) is required")),
    };
    let context = match args.get("context") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => return Err(bad_args("execute_code: `context` must be an object")),
    };
    let language = match args.get("language") {
        None | Some(Value::Null) => Language::Javascript,
        Some(v) => serde_json::from_value::<Language>(v.clone()).map_err(|_| {
            bad_args("execute_code: `language` must be \"javascript\" or \"typescript\"")
        })?,
    };
    let mut requested: RequestedLimits = match args.get("limits") {
        None | Some(Value::Null) => RequestedLimits::default(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            bad_args(format!(
                "execute_code: `limits` must be an object of positive integers ({e})"
            ))
        })?,
    };
    match args.get("timeout_ms") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(ms) => requested.timeout_ms = Some(ms),
            None => {
                return Err(bad_args(
                    "execute_code: `timeout_ms` must be a positive integer",
                ))
            }
        },
    }
    // What the client asks for may only lower the operator's limits.
    let request = request.narrowed(&requested);
    let limits = request.limits;
    // Admission on arrival, before the request waits for a runner.
    let context_bytes = context.map_or(0, json_len);
    let held = gateway
        .admission
        .admit(code.len() as u64, limits.source_bytes, context_bytes);
    let refused = |e| {
        gateway
            .sandbox
            .audit_refusal(Some(request.caller.clone()), code, Outcome::failed(e))
    };
    let mut outcome = match held {
        Err(e) => refused(e).await,
        Ok(_held) => match to_javascript_mapped(code, language) {
            Err(e) => refused(e).await,
            Ok((js, positions)) => {
                gateway
                    .sandbox
                    .execute(ExecRequest {
                        code: js,
                        positions: positions.map(std::sync::Arc::new),
                        context: context.cloned().unwrap_or_default(),
                        request: request.clone(),
                        require_layers: gateway.require_layers.clone(),
                        client_cancel: Some(cancel),
                        approvals: Some(approvals),
                        progress,
                        ..Default::default()
                    })
                    .await
            }
        },
    };
    // Room for the answer until the client has read it; a cancelled request gets no answer.
    if outcome.error.as_ref().map(|e| e.code) != Some(ErrorCode::Cancelled) {
        let size = json_len_of(&outcome);
        match gateway.responses.reserve(size) {
            Ok(room) => gateway.responses.hold(answer, room),
            Err(e) => {
                tracing::warn!("execute_code answer dropped: {e}");
                outcome = Outcome::failed(e);
            }
        }
    }
    // Also on outcomes refused before they ran (admission, TypeScript).
    outcome.metrics.limits = request.applied_limits.clone();
    if let Some(e) = outcome
        .error
        .as_ref()
        .filter(|e| e.code == ErrorCode::Cancelled)
    {
        // The client will not read the answer; the outcome is recorded (store, log) all the same.
        tracing::info!(
            duration_ms = outcome.metrics.duration_ms,
            tool_calls = outcome.metrics.tool_calls,
            "execute_code {}: {}",
            e.code,
            e.message
        );
    }
    let summary = summary(&outcome);
    let value = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    let result = if outcome.success {
        CallToolResult::structured(value)
    } else {
        CallToolResult::structured_error(value)
    };
    Ok(result.with_text(summary))
}

/// The answer to an execute_code request refused before it ran (its outcome is the error).
pub fn refused(error: crate::error::ExecError) -> CallToolResult {
    let outcome = Outcome::failed(error);
    let value = serde_json::to_value(&outcome).unwrap_or(Value::Null);
    CallToolResult::structured_error(value).with_text(summary(&outcome))
}

/// The length of a value as compact JSON, without building the text.
fn json_len(value: &JsonObject) -> u64 {
    json_len_of(value)
}

fn json_len_of<T: serde::Serialize + ?Sized>(value: &T) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => u64::MAX,
    }
}

/// The first `max` bytes of `value` as pretty JSON, without rendering the rest (a result may
/// be megabytes).
fn pretty_prefix(value: &Value, max: usize) -> String {
    struct Capped(Vec<u8>, usize);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.1.saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::Error::other("enough"));
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new(), max);
    let _ = serde_json::to_writer_pretty(&mut out, value);
    String::from_utf8_lossy(&out.0).into_owned()
}

/// A readable account of an outcome: status, result or error, logs, tool calls.
pub fn summary(o: &Outcome) -> String {
    let mut s = String::new();
    match &o.error {
        None => {
            let _ = writeln!(
                s,
                "ok ({:.1} ms, {} tool calls)",
                o.metrics.duration_ms, o.metrics.tool_calls
            );
            let mut r = pretty_prefix(&o.result, SUMMARY_RESULT_CHARS * 4 + 4);
            if r.chars().count() > SUMMARY_RESULT_CHARS {
                r = r.chars().take(SUMMARY_RESULT_CHARS).collect::<String>()
                    + "… (cut; the whole result is in structuredContent.result)";
            }
            let _ = writeln!(s, "result: {r}");
        }
        Some(e) => {
            let _ = writeln!(s, "error {}: {}", e.code, e.message);
            if let Some(t) = &e.tool {
                let _ = writeln!(s, "tool: {t}");
            }
            if let Some(alts) = e.alternatives.as_ref().filter(|a| !a.is_empty()) {
                let _ = writeln!(s, "did you mean: {}", alts.join(", "));
            }
            if let Some(stack) = &e.stack {
                let _ = writeln!(s, "stack: {stack}");
            }
        }
    }
    if !o.logs.is_empty() {
        let _ = writeln!(s, "logs:");
        for l in o.logs.iter().take(SUMMARY_LOG_LINES) {
            let _ = writeln!(s, "  [{}] {}", l.level, l.message);
        }
        if o.logs.len() > SUMMARY_LOG_LINES {
            let _ = writeln!(s, "  … {} more lines", o.logs.len() - SUMMARY_LOG_LINES);
        }
    }
    let ends: Vec<_> = o
        .traces
        .iter()
        .filter(|t| t.kind == TraceKind::ToolEnd)
        .collect();
    if !ends.is_empty() {
        let _ = writeln!(s, "tool calls:");
        for t in ends {
            let status = match &t.error {
                None => "ok".to_string(),
                Some(e) => e.code.to_string(),
            };
            let _ = writeln!(
                s,
                "  {} {status} {:.1} ms",
                t.tool,
                t.duration_ms.unwrap_or(0.0)
            );
        }
    }
    s
}
