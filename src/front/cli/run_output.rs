//! What `run` prints for an outcome. Without `--max-output-bytes` everything (a person asked for
//! it); with it, the same rule as serve's `execute_code` (`exec::output_budget`): the outcome is
//! cut until what is printed — stdout and stderr together, as written — fits the budget.

use crate::exec::outcome::Outcome;
use crate::exec::output_budget::{self, Budget};
use crate::term::{escape, escape_lines};
use crate::trace::{render, TraceEvent, TraceFormat};
use serde_json::Value;

/// What `run` writes: stdout and stderr.
struct Printed {
    out: String,
    err: String,
}

/// Prints `outcome`, cut to `max_output_bytes` when given.
pub fn print_outcome(
    outcome: &Outcome,
    json: bool,
    trace: Option<TraceFormat>,
    max_output_bytes: Option<u64>,
) {
    let answer = match max_output_bytes {
        None => serde_json::to_value(outcome).unwrap_or(Value::Null),
        Some(max) => output_budget::fit(outcome, Budget::new(max), &|v| {
            let p = printed(v, json, trace);
            (p.out.len() + p.err.len()) as u64
        }),
    };
    let p = printed(&answer, json, trace);
    // Logs and traces first, as a person reads them, then the result.
    crate::term::err(&p.err);
    crate::term::out(&p.out);
}

/// The text of an answer (an outcome as JSON, perhaps cut): exact JSON on stdout with `--json`;
/// otherwise the result as JSON on stdout and everything else for a person on stderr, with the
/// runner's strings escaped.
fn printed(answer: &Value, json: bool, trace: Option<TraceFormat>) -> Printed {
    let mut p = Printed {
        out: String::new(),
        err: String::new(),
    };
    if json {
        p.out = serde_json::to_string(answer).unwrap_or_else(|_| "{}".into()) + "\n";
        return p;
    }
    let str_of = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    for line in answer["logs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        p.err += &format!(
            "[{}] {}\n",
            escape(&str_of(line, "level")),
            escape(&str_of(line, "message"))
        );
    }
    match (trace, &answer["traces"]) {
        (Some(format), Value::Array(_)) => {
            let events: Vec<TraceEvent> =
                serde_json::from_value(answer["traces"].clone()).unwrap_or_default();
            p.err += &render(&events, format);
        }
        (Some(_), summary @ Value::Object(_)) => {
            p.err += &format!("traces (summarised): {summary}\n");
        }
        _ => {}
    }
    match answer.get("error").filter(|e| e.is_object()) {
        None => {
            if let Some(result) = answer.get("result") {
                p.out = serde_json::to_string_pretty(result).unwrap_or_else(|_| "null".into());
                p.out.push('\n');
            }
        }
        Some(e) => {
            p.err += &format!(
                "error: {}: {}\n",
                str_of(e, "code"),
                escape(&str_of(e, "message"))
            );
            let alts: Vec<&str> = e["alternatives"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !alts.is_empty() {
                p.err += &format!("  did you mean: {}\n", escape(&alts.join(", ")));
            }
            if let Some(stack) = e["stack"].as_str() {
                p.err += &format!("{}\n", escape_lines(stack));
            }
        }
    }
    if answer["truncated"] == Value::Bool(true) {
        let cut: Vec<&str> = answer["output"]["cut"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        p.err += &format!(
            "mcp-sandbox: output cut to {} bytes (--max-output-bytes): {}\n",
            answer["output"]["max_output_bytes"],
            cut.join(", ")
        );
    }
    p
}
