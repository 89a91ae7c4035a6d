//! The output budget: what one answer about an outcome may hold (`max_output_bytes`), and how
//! an outcome is cut to fit it. Used by the fronts (serve's `execute_code`, `run
//! --max-output-bytes`) on the answer they send; never on a capability's nested result or on a
//! tool result inside a script, which reach the script whole.
//!
//! The front gives a `measure`: the bytes its client receives for a given answer (serve: the
//! text content and `structuredContent` together). Past the budget, in this order, each step
//! kept only while the answer is still too large:
//!
//! 1. the traces are summarised: `{summarised, events, by_kind, by_tool}` instead of the list;
//! 2. the logs are cut: the first and last lines kept (each clipped), a `cut` line saying how
//!    many went between them;
//! 3. the result is replaced by a [`preview`]: size, JSON type, shape, the first items clipped,
//!    `truncated: true` and a hint;
//! 4. all of them smaller (fewer lines, a shorter preview, the error message clipped), then a
//!    minimal answer (status, error code, the preview's size and type);
//! 5. a final check: an answer still over the budget is replaced by the smallest answer that
//!    says so ([`smallest`]), which fits any budget of at least [`MIN_MAX_OUTPUT_BYTES`].
//!
//! Every cut answer has `truncated: true` and `output.cut` naming what was cut.

use super::outcome::Outcome;
pub use crate::context::limits::{DEFAULT_MAX_OUTPUT_BYTES, MIN_MAX_OUTPUT_BYTES};
use crate::trace::TraceKind;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What the agent is told to do with a result too large for its answer.
pub const HINT: &str = "The result is too large for this answer, so this is only its preview. \
Return less (filter, count, aggregate or slice in the script), or store() it and read it in \
pieces in the next executions.";

/// The budget that applied to one answer, as the answer reports it (`output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// The budget that applied, in bytes.
    pub max_output_bytes: u64,
    /// What the request asked for, when it asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    /// True when the request asked for more than the operator's budget, which applied instead.
    pub capped: bool,
}

impl Budget {
    pub fn new(max_output_bytes: u64) -> Self {
        Budget {
            max_output_bytes,
            requested: None,
            capped: false,
        }
    }
}

/// One level of detail of a cut answer.
#[derive(Debug, Clone, Copy)]
struct Detail {
    /// Log lines kept at the start and at the end.
    log_lines: usize,
    /// Characters kept of one log line, of the error's message, of a string in the preview.
    chars: usize,
    /// Items of an array (entries of an object) shown in the preview, and their depth.
    items: usize,
    depth: usize,
    /// Top-level keys of an object result listed by name, and tools in the trace summary.
    keys: usize,
}

const DETAILS: [Detail; 5] = [
    Detail {
        log_lines: 10,
        chars: 500,
        items: 3,
        depth: 2,
        keys: 50,
    },
    Detail {
        log_lines: 5,
        chars: 200,
        items: 3,
        depth: 1,
        keys: 20,
    },
    Detail {
        log_lines: 2,
        chars: 100,
        items: 2,
        depth: 1,
        keys: 10,
    },
    Detail {
        log_lines: 1,
        chars: 40,
        items: 1,
        depth: 0,
        keys: 3,
    },
    Detail {
        log_lines: 0,
        chars: 0,
        items: 0,
        depth: 0,
        keys: 0,
    },
];

/// The answer for `outcome` within `budget`: the outcome as JSON with an `output` report, cut
/// as the module's rule says when `measure` finds it too large. The returned value's measure is
/// at most the budget whenever [`smallest`]'s is.
pub fn fit(outcome: &Outcome, budget: Budget, measure: &dyn Fn(&Value) -> u64) -> Value {
    let max = budget.max_output_bytes;
    let mut whole = serde_json::to_value(outcome).unwrap_or(Value::Null);
    let Value::Object(map) = &mut whole else {
        return smallest(budget, outcome.success);
    };
    map.insert("output".into(), report(budget, &[], None));
    let full = measure(&whole);
    if full <= max {
        return whole;
    }
    // A result larger than the budget alone cannot fit until it is previewed: the first two
    // steps are taken without measuring (and serialising) it again.
    let result_alone = json_len(&outcome.result);
    let check = |v: &Value| result_alone <= max && measure(v) <= max;
    let mut answer = whole;
    let mut cut = vec!["traces"];
    set(
        &mut answer,
        "traces",
        summarise_traces(outcome, &DETAILS[0]),
    );
    set(&mut answer, "truncated", Value::Bool(true));
    set(&mut answer, "output", report(budget, &cut, Some(full)));
    if check(&answer) {
        return answer;
    }
    if !outcome.logs.is_empty() {
        cut.push("logs");
        set(&mut answer, "logs", cut_logs(outcome, &DETAILS[0]));
        set(&mut answer, "output", report(budget, &cut, Some(full)));
        if check(&answer) {
            return answer;
        }
    }
    // What each try sets anew is taken out first: a try copies only the small rest.
    for key in ["result", "traces", "logs"] {
        set(&mut answer, key, Value::Null);
    }
    for d in &DETAILS {
        let mut a = answer.clone();
        let mut cut = cut.clone();
        set(&mut a, "traces", summarise_traces(outcome, d));
        set(&mut a, "logs", cut_logs(outcome, d));
        // A result smaller than its preview stays whole (the rest of the answer was too large).
        let p = preview(&outcome.result, result_alone, d);
        if json_len(&p) < result_alone {
            set(&mut a, "result", p);
            cut.push("result");
        } else {
            set(&mut a, "result", outcome.result.clone());
        }
        if d.chars < DETAILS[0].chars {
            if let Some(e) = a.get_mut("error").filter(|e| e.is_object()) {
                clip_error(e, d.chars);
                cut.push("error");
            }
            // The isolation layers are the first metrics to go.
            if let Some(Value::Object(m)) = a.get_mut("metrics") {
                m.remove("isolation");
            }
        }
        set(&mut a, "output", report(budget, &cut, Some(full)));
        if measure(&a) <= max {
            return a;
        }
    }
    let minimal = minimal(outcome, result_alone, budget, full);
    if measure(&minimal) <= max {
        return minimal;
    }
    smallest(budget, outcome.success)
}

/// The `output` report: the budget, and what was cut of an answer of `full` bytes.
fn report(budget: Budget, cut: &[&str], full: Option<u64>) -> Value {
    let mut v = serde_json::to_value(budget).unwrap_or_else(|_| json!({}));
    if let (Value::Object(m), Some(full)) = (&mut v, full) {
        m.insert("full_bytes".into(), json!(full));
        m.insert("cut".into(), json!(cut));
    }
    v
}

fn set(answer: &mut Value, key: &str, value: Value) {
    if let Value::Object(m) = answer {
        m.insert(key.to_string(), value);
    }
}

/// The smallest answer that says the outcome did not fit: its status and the budget. Its size
/// does not depend on the outcome.
pub fn smallest(budget: Budget, success: bool) -> Value {
    json!({
        "success": success,
        "truncated": true,
        "output": {"max_output_bytes": budget.max_output_bytes, "cut": ["all"]},
    })
}

/// A result this small stays whole in the minimal answer.
const MINIMAL_RESULT_BYTES: u64 = 64;

/// Status, error code and clipped message, the result's size and type: no logs, traces or shape.
fn minimal(outcome: &Outcome, bytes: u64, budget: Budget, full: u64) -> Value {
    let error = outcome
        .error
        .as_ref()
        .map(|e| json!({"code": e.code.to_string(), "message": clip_str(&e.message, 100)}));
    let mut cut = vec!["traces", "logs", "metrics"];
    let result = if bytes <= MINIMAL_RESULT_BYTES {
        outcome.result.clone()
    } else {
        cut.push("result");
        json!({"truncated": true, "bytes": bytes, "type": type_name(&outcome.result)})
    };
    if error.is_some() {
        cut.push("error");
    }
    json!({
        "success": outcome.success,
        "truncated": true,
        "result": result,
        "error": error,
        "output": report(budget, &cut, Some(full)),
    })
}

/// Counts of the trace events by kind, and calls and errors by tool (the `keys` most called).
fn summarise_traces(outcome: &Outcome, d: &Detail) -> Value {
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_tool: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for t in &outcome.traces {
        let kind = serde_json::to_value(t.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *by_kind.entry(kind).or_default() += 1;
        if t.kind == TraceKind::ToolEnd {
            let e = by_tool.entry(t.tool.as_str()).or_default();
            e.0 += 1;
            e.1 += u64::from(t.error.is_some());
        }
    }
    let mut tools: Vec<_> = by_tool.into_iter().collect();
    tools.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    let mut listed = Map::new();
    for (tool, (calls, errors)) in tools.iter().take(d.keys) {
        listed.insert(
            clip_str(tool, 128),
            json!({"calls": calls, "errors": errors}),
        );
    }
    let mut v = json!({
        "summarised": true,
        "events": outcome.traces.len(),
        "by_kind": by_kind,
        "by_tool": listed,
    });
    if tools.len() > d.keys {
        set(&mut v, "other_tools", json!(tools.len() - d.keys));
    }
    v
}

/// The first and last `log_lines` lines, each clipped, with a `cut` line between them.
fn cut_logs(outcome: &Outcome, d: &Detail) -> Value {
    let n = outcome.logs.len();
    let line = |l: &super::outcome::LogLine| json!({"level": clip_str(&l.level, 16), "message": clip_str(&l.message, d.chars)});
    if n <= 2 * d.log_lines {
        return Value::Array(outcome.logs.iter().map(line).collect());
    }
    let mut out: Vec<Value> = outcome.logs[..d.log_lines].iter().map(line).collect();
    out.push(json!({
        "level": "cut",
        "message": format!("… {} lines cut (the first {} and last {} are kept)", n - 2 * d.log_lines, d.log_lines, d.log_lines),
    }));
    out.extend(outcome.logs[n - d.log_lines..].iter().map(line));
    Value::Array(out)
}

/// The error's message and stack clipped to `chars`.
fn clip_error(error: &mut Value, chars: usize) {
    for key in ["message", "stack"] {
        if let Some(Value::String(s)) = error.get(key) {
            let clipped = clip_str(s, chars);
            set(error, key, Value::String(clipped));
        }
    }
    if let Some(Value::Array(alts)) = error.get_mut("alternatives") {
        alts.truncate(3);
    }
}

/// A preview of a value too large to send: `{truncated, bytes, type, length?, keys?, key_count?,
/// first?, hint}`. `bytes` is its size as compact JSON (given: the caller has measured it); `length` an array's items or a string's
/// characters; `keys` an object's first keys by name (`key_count` all of them); `first` the
/// first items (entries, characters) clipped.
fn preview(value: &Value, bytes: u64, d: &Detail) -> Value {
    let mut p = Map::new();
    p.insert("truncated".into(), Value::Bool(true));
    p.insert("bytes".into(), json!(bytes));
    p.insert("type".into(), json!(type_name(value)));
    match value {
        Value::Array(a) => {
            p.insert("length".into(), json!(a.len()));
            if d.items > 0 {
                let first = a.iter().take(d.items).map(|v| clip(v, d, d.depth));
                p.insert("first".into(), Value::Array(first.collect()));
            }
        }
        Value::Object(m) => {
            p.insert("key_count".into(), json!(m.len()));
            let keys = m.keys().take(d.keys).map(|k| json!(clip_str(k, 64)));
            p.insert("keys".into(), Value::Array(keys.collect()));
            if d.items > 0 {
                let first = m
                    .iter()
                    .take(d.items)
                    .map(|(k, v)| (clip_str(k, d.chars.max(8)), clip(v, d, d.depth)));
                p.insert("first".into(), Value::Object(first.collect()));
            }
        }
        Value::String(s) => {
            p.insert("length".into(), json!(s.chars().count()));
            if d.chars > 0 {
                p.insert("first".into(), json!(clip_str(s, d.chars)));
            }
        }
        // A number, a boolean or null is never this large; shown as it is.
        other if d.items > 0 => {
            p.insert("first".into(), other.clone());
        }
        _ => {}
    }
    p.insert("hint".into(), json!(HINT));
    Value::Object(p)
}

/// `value` with strings clipped to `d.chars`, arrays and objects to `d.items` entries, and
/// containers below `depth` levels replaced by a note of their size.
fn clip(value: &Value, d: &Detail, depth: usize) -> Value {
    match value {
        Value::String(s) => json!(clip_str(s, d.chars)),
        Value::Array(a) if depth == 0 => json!(format!("[… {} items]", a.len())),
        Value::Object(m) if depth == 0 => json!(format!("{{… {} keys}}", m.len())),
        Value::Array(a) => {
            let mut out: Vec<Value> = a
                .iter()
                .take(d.items)
                .map(|v| clip(v, d, depth - 1))
                .collect();
            if a.len() > d.items {
                out.push(json!(format!("… {} more items", a.len() - d.items)));
            }
            Value::Array(out)
        }
        Value::Object(m) => {
            let mut out: Map<String, Value> = m
                .iter()
                .take(d.items)
                .map(|(k, v)| (clip_str(k, d.chars.max(8)), clip(v, d, depth - 1)))
                .collect();
            if m.len() > d.items {
                out.insert(
                    "…".into(),
                    json!(format!("{} more keys", m.len() - d.items)),
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The first `chars` characters of `s`, with `…` when it was longer.
fn clip_str(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The length of a value as compact JSON, without building the text.
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> u64 {
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

#[cfg(test)]
#[path = "output_budget_tests.rs"]
mod tests;
