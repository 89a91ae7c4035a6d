//! `execute_code {code, context?, timeout_ms?, language?, limits?, max_output_bytes?,
//! yield_after_ms?}`: one script in a fresh locked-down runner (still running after
//! `yield_after_ms`: see `held`). `structuredContent` is the outcome (`{success, result,
//! error, logs, traces, metrics, output}`); the text is a readable summary of it. Both together
//! are cut to the caller's output budget (`exec::output_budget`). A failed script has
//! `isError: true`.

pub use super::held::reply::refused;
use super::held::reply::{answer_within, reserve_answer, tool_result};
use super::{bad_args, Gateway};
use crate::context::limits::RequestedLimits;
use crate::context::RequestContext;
use crate::error::ErrorCode;
use crate::exec::outcome::Outcome;
use crate::exec::output_budget::{json_len, Budget, MIN_MAX_OUTPUT_BYTES};
use crate::exec::session::ExecRequest;
use crate::script::transpile::{to_javascript_mapped, Language};
use rmcp::model::{CallToolResponse, JsonObject};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::fmt::Write;
use tokio_util::sync::CancellationToken;

/// The description of `execute_code`'s `yield_after_ms` argument.
pub const YIELD_DESCRIPTION: &str = "Answer after this many milliseconds if the execution is still \
running, instead of waiting for its end: the answer is then {status: \"running\", execution_id, \
logs_so_far, calls_done, calls_in_flight} and the execution goes on under its own timeout and CPU \
budget. Get its outcome with wait_execution (or stop it with cancel_execution). Use it for long \
scripts, to do other work or report progress meanwhile. The outcome is kept for this session until \
you read it (other requests never discard it; it is dropped when the session ends or stays idle past \
its time-to-live). A value at or above the timeout means no yield. Each session may have a few \
yielded executions running at once (LIMIT_EXCEEDED past that).";

/// The description of `execute_code`; `max_output_bytes` is the caller's output budget.
pub fn description(gateway: &Gateway, max_output_bytes: u64) -> String {
    let catalog = gateway.sandbox.catalog();
    let servers: Vec<String> = catalog
        .tools()
        .into_iter()
        .map(|t| t.server)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut d = String::from(
        "Run JavaScript (or TypeScript with language: \"typescript\", or Python with language: \"python\") in an isolated sandbox whose only \
access to the world is MCP tool calls. Use it for all work with the tools: one script can call many tools, \
loop, filter and combine their results, so prefer one execution that does a whole step over many small \
ones, and return only what you need. The code is the body of an async function:\n\
- call tools with `await mcp.<server>.<tool>({...args})` (names with dashes: `mcp.server[\"get-sum\"]({...})`); \
use search_tools to see the exact signatures;\n\
- `return` a JSON-serialisable value: it is the result (without `return`, the value of the last expression);\n\
- run independent calls in parallel with `await Promise.all([...])`;\n\
- a failed call throws an Error with `.code` (TOOL_NOT_FOUND with `.alternatives`, INVALID_ARGUMENTS, \
TOOL_ERROR, TOOL_TIMEOUT, PERMISSION_DENIED, LIMIT_EXCEEDED): catch it with try/catch to recover;\n\
- `Object.keys(mcp)` lists the servers, `Object.keys(mcp.<server>)` their tools;\n\
- `console.log` output is returned in `logs`; `context` keys are variables in scope;\n\
- keep data for a later execution of this session with `await store(key, value)` (JSON data) and read it \
with `await load(key)` (undefined when absent); `await keys()` lists the keys, `await remove(key)` deletes one. \
State lasts while the session is used (it is deleted after {ttl} idle), is seen by no other session, \
and is bounded ({value} a value, {count} keys, {total} a session: LIMIT_EXCEEDED past them). \
Store a large result and return a summary instead of returning it whole. \
Without an MCP session (protocol 2026-07-28), the session is the `session` handle each answer names: \
pass it back as `session` to reach this session's values, placeholders and running executions again.\n\
There is no network (no fetch), filesystem or require/import: standard JavaScript, `mcp`, timers, URL, \
TextEncoder/TextDecoder, structuredClone, AbortController, crypto.subtle.digest and Intl \
(an option it cannot honour throws a RangeError naming it). \
A tool result is its structuredContent when the tool sends one, else its text as a string. \
Python (language: \"python\") runs on monty, a subset of Python 3 in the same sandbox: \
`await mcp.<server>.<tool>(key=value)` (or one dict; `getattr(mcp.<server>, \"get-sum\")` for names with dashes), \
`asyncio.gather(...)` for parallel calls, `print` for logs, the last expression or a top-level `return` as the result, \
`await store(key, value)`/`load`/`keys`/`remove`; a failed call raises PermissionError, TimeoutError, ValueError or \
RuntimeError whose message starts with the code (`\"PERMISSION_DENIED: ...\"`); no class inheritance, \
no files, no third-party modules (search_tools with language: \"python\" shows Python signatures). \
The answer holds result, logs, error {code, message} and a trace of every tool call; a failed script \
is reported with isError and the error code.",
    );
    let o = &gateway.session;
    d = d
        .replace("{ttl}", &o.ttl_text())
        .replace("{value}", &crate::term::bytes_text(o.max_value_bytes))
        .replace("{count}", &o.max_keys.to_string())
        .replace("{total}", &crate::term::bytes_text(o.max_bytes));
    let _ = write!(
        d,
        "\nOutput budget: the answer (its text and structuredContent together) is at most {} \
(max_output_bytes; the argument `max_output_bytes` may lower it, never raise it: a larger value is capped, and \
`output` in the answer says which budget applied; the `session` handle of an answer comes on top). Past it the answer is cut, in this order: the traces become \
counts by kind and tool, the logs keep their first and last lines, and the result is replaced by a preview \
{{truncated: true, bytes, type, length or key_count and keys, first items, hint}}. A cut answer has \
`truncated: true` and `output.cut` names what was cut. A truncated answer means the script ran to its end \
(its tool calls happened; do not run it again only to see the result): return less next time (filter, count, \
aggregate or slice in the script, or return one page and ask for the next in another execution). Only the \
answer is cut: tool results and capability results inside the script are always whole.",
        crate::term::bytes_text(max_output_bytes)
    );
    d.push_str(
        "\nLong scripts: pass yield_after_ms to get an answer early ({status: \"running\", execution_id, \
logs_so_far, calls_done, calls_in_flight}) while the script goes on; then wait_execution gives its outcome \
(read it once: it is kept for this session until read or until the session ends or stays idle past its \
time-to-live) and cancel_execution stops it.",
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
            "limits": {"type": "object", "description": "Lower any of the server's limits for this execution (timeout_ms, cpu_ms, memory_mb, stack_kb, call_timeout_ms, max_calls, max_concurrent_calls, source_bytes, result_bytes, log_bytes, frame_bytes, max_output_bytes); larger values are capped.", "additionalProperties": {"type": "integer", "minimum": 0}},
            "max_output_bytes": {"type": "integer", "minimum": MIN_MAX_OUTPUT_BYTES, "description": "A smaller output budget for this answer, in bytes (text and structuredContent together). It can only lower the server's budget; a larger value is capped and the answer's `output` says so. Past the budget the answer is cut (truncated: true)."},
            "language": {"type": "string", "enum": ["javascript", "typescript", "python"], "description": "typescript is stripped to JavaScript before it runs: its types are not checked; python runs on monty, a subset of Python (default javascript)."},
            "yield_after_ms": {"type": "integer", "minimum": 1, "description": YIELD_DESCRIPTION}
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

/// `execute_code`'s arguments, checked.
pub(super) struct Parsed<'a> {
    yield_after: Option<u64>,
    code: &'a String,
    context: Option<&'a JsonObject>,
    language: Language,
    requested: RequestedLimits,
}

impl Parsed<'_> {
    /// The script as sent.
    pub(super) fn code(&self) -> &str {
        self.code
    }
}

/// Checks `execute_code`'s arguments (`invalid_params` naming the first wrong one). The front
/// checks them before anything is kept for the call (a session handle, a task, a place in the
/// queue); `session` is taken out of them later.
pub(super) fn parse(args: &JsonObject) -> Result<Parsed<'_>, ErrorData> {
    const FIELDS: [&str; 7] = [
        "yield_after_ms",
        "code",
        "context",
        "timeout_ms",
        "language",
        "limits",
        "max_output_bytes",
    ];
    if let Some(extra) = args
        .keys()
        .find(|k| !FIELDS.contains(&k.as_str()) && k.as_str() != super::handles::ARG)
    {
        return Err(bad_args(format!(
            "execute_code: unknown argument `{extra}`; use code, context, timeout_ms, language, limits, max_output_bytes, yield_after_ms"
        )));
    }
    let yield_after = match args.get("yield_after_ms") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
            bad_args("execute_code: `yield_after_ms` must be a positive integer (milliseconds)")
        })?),
    };
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
            bad_args(
                "execute_code: `language` must be \"javascript\", \"typescript\" or \"python\"",
            )
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
    match args.get("max_output_bytes") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| *n >= MIN_MAX_OUTPUT_BYTES) {
            Some(n) => requested.max_output_bytes = Some(n),
            None => {
                return Err(bad_args(format!(
                    "execute_code: `max_output_bytes` must be an integer of at least {MIN_MAX_OUTPUT_BYTES} (bytes); a larger value than the server's budget is capped"
                )))
            }
        },
    }
    Ok(Parsed {
        yield_after,
        code,
        context,
        language,
        requested,
    })
}

pub async fn call(
    gateway: &std::sync::Arc<Gateway>,
    request: RequestContext,
    args: JsonObject,
    cancel: CancellationToken,
    answer: super::responses::AnswerKey,
    (approvals, progress): (
        std::sync::Arc<crate::gate::approval::Approvals>,
        Option<crate::tools::passthrough::FeedbackRef>,
    ),
    yielding: super::held::start::Yielding,
) -> Result<CallToolResponse, ErrorData> {
    let Parsed {
        yield_after,
        code,
        context,
        language,
        requested,
    } = parse(&args)?;
    // What the client asks for may only lower the operator's limits.
    let request = request.narrowed(&requested);
    let limits = request.limits;
    // Admission on arrival, before the request waits for a runner.
    let context_bytes = context.map_or(0, json_len::<JsonObject>);
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
        Ok(held) => match to_javascript_mapped(code, language) {
            Err(e) => refused(e).await,
            Ok((js, positions)) => {
                let exec = ExecRequest {
                    code: js,
                    language: language.engine(),
                    positions: positions.map(std::sync::Arc::new),
                    context: context.cloned().unwrap_or_default(),
                    request: request.clone(),
                    require_layers: gateway.require_layers.clone(),
                    client_cancel: Some(cancel.clone()),
                    approvals: Some(approvals),
                    progress,
                    admitted: yielding.admitted.clone(),
                    ..Default::default()
                };
                // A yield at or past the timeout would never come: the execution just runs.
                let yield_after = yield_after.filter(|ms| *ms < limits.timeout_ms);
                // An execution that may ask a 2026-07-28 client runs as a yielded one does: it
                // outlives the request that answers `input_required`.
                if yield_after.is_some() || yielding.questions.is_some() {
                    let after = yield_after.map_or(super::input_required::NO_YIELD, |ms| {
                        std::time::Duration::from_millis(ms)
                    });
                    let budget = budget_of(&request);
                    let run = (exec, held, budget, answer);
                    let when = (after, yield_after.is_some());
                    return Ok(super::held::start::run(gateway, run, when, cancel, yielding).await);
                }
                let _held = held;
                gateway.sandbox.execute(exec).await
            }
        },
    };
    // Also on outcomes refused before they ran (admission, TypeScript).
    outcome.metrics.limits = request.applied_limits.clone();
    let budget = budget_of(&request);
    // Room for the answer until the client has read it; a cancelled request gets no answer.
    let value = if outcome.error.as_ref().map(|e| e.code) != Some(ErrorCode::Cancelled) {
        let (value, room) = reserve_answer(gateway, &outcome, budget);
        if let Some(room) = room {
            gateway.responses.hold(answer, room);
        }
        value
    } else {
        answer_within(&outcome, budget)
    };
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
    Ok(tool_result(value, budget).into())
}

/// The output budget of this request: the operator's (narrowed by the principal's policies),
/// lowered by what the request asked for, and whether a larger ask was capped.
fn budget_of(request: &RequestContext) -> Budget {
    let applied = request.applied_limits.get("max_output_bytes");
    Budget {
        max_output_bytes: request.limits.max_output_bytes.max(MIN_MAX_OUTPUT_BYTES),
        requested: applied.map(|a| a.requested),
        capped: applied.is_some_and(|a| a.capped),
    }
}
