//! What an audit record keeps for `mcp-sandbox replay` (`--audit-record full`,
//! `sandbox.audit.record: "full"`): the code, its language, the context, the tools the script
//! could call, each call's arguments and answer in the order the script made them, the seed of
//! `Math.random`/`crypto` and the clock values the script read, and the outcome (result, error,
//! logs, calls) to compare a replay with.
//!
//! It is a field of the record's [`super::audit::AuditDetail`], so the hash chain covers it and
//! `audit export` carries it. Every part is bounded: at most [`MAX_RECORDED_BYTES`] of call
//! arguments, answers and result together (past it, later calls are counted in
//! `calls_dropped` and the result is left out), and at most
//! [`sandbox_runner::protocol::MAX_CLOCK_VALUES`] clock values.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Version of the format (a replay refuses another).
pub const RECORDING_VERSION: u32 = 1;

/// Most bytes of JSON (arguments, answers, result) one recording keeps.
pub const MAX_RECORDED_BYTES: usize = 4 * 1024 * 1024;

/// One execution, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub version: u32,
    /// `javascript` or `python` (TypeScript is kept as the JavaScript that ran).
    pub language: String,
    pub code: String,
    pub context: Map<String, Value>,
    /// `server:tool` of every tool the script could call.
    pub tools: Vec<String>,
    /// The 32-byte seed of `Math.random` and `crypto`, hex.
    pub seed: String,
    /// Each clock value the script read, in microseconds since the Unix epoch.
    pub clock: Vec<i64>,
    /// Clock values read past the first 10,000 (not kept: a replay reads the real clock there).
    #[serde(default)]
    pub clock_dropped: u64,
    pub calls: Vec<RecordedCall>,
    /// Calls made past [`MAX_RECORDED_BYTES`] (not kept: a replay stops at the first).
    #[serde(default)]
    pub calls_dropped: u64,
    pub outcome: RecordedOutcome,
}

/// One tool call the script made and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedCall {
    pub server: String,
    pub tool: String,
    pub args: Value,
    /// The result the script got (`None` with an error, or when the script ended first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

/// An error as the script saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedError {
    pub code: String,
    pub message: String,
}

/// What an execution ended with: what a replay is compared on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedOutcome {
    pub success: bool,
    pub result: Value,
    /// The result was over the recording's size bound and is not kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub result_dropped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
    pub logs: Vec<RecordedLog>,
    /// `server:tool` of each call, with its error code when it failed, in start order.
    pub calls: Vec<OutcomeCall>,
}

/// One log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedLog {
    pub level: String,
    pub message: String,
}

/// One call of an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCall {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RecordedOutcome {
    /// The parts in which `other` differs from `self`: `result`, `error`, `logs`, `calls`.
    pub fn differences(&self, other: &RecordedOutcome) -> Vec<&'static str> {
        let mut parts = Vec::new();
        if self.success != other.success || (!self.result_dropped && self.result != other.result) {
            parts.push("result");
        }
        if self.error != other.error {
            parts.push("error");
        }
        if self.logs != other.logs {
            parts.push("logs");
        }
        if self.calls != other.calls {
            parts.push("calls");
        }
        parts
    }
}

/// The first place where `b` differs from `a`: a JSON path (`$.user.id`, `$[2]`) with both
/// values, or `None` when they are equal (object keys in any order).
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    diff_at("$".to_string(), a, b)
}

fn diff_at(path: String, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = diff_at(format!("{path}.{k}"), va, vb) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{path}.{k}: recorded {}, now absent", short(va))),
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, vb)| format!("{path}.{k}: absent in the recording, now {}", short(vb)))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = diff_at(format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (x.len() != y.len())
                .then(|| format!("{path}: recorded {} items, now {} items", x.len(), y.len()))
        }
        _ if a == b => None,
        _ => Some(format!("{path}: recorded {}, now {}", short(a), short(b))),
    }
}

/// A value's JSON, cut to 200 bytes.
fn short(v: &Value) -> String {
    let mut s = v.to_string();
    sandbox_runner::protocol::truncate_marked(&mut s, 200);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_names_its_path() {
        let a = json!({"q": "a", "n": [1, 2], "o": {"x": 1}});
        assert_eq!(
            first_difference(&a, &json!({"o": {"x": 1}, "n": [1, 2], "q": "a"})),
            None
        );
        assert_eq!(
            first_difference(&a, &json!({"q": "b", "n": [1, 2], "o": {"x": 1}})).as_deref(),
            Some("$.q: recorded \"a\", now \"b\"")
        );
        assert_eq!(
            first_difference(&a, &json!({"q": "a", "n": [1, 3], "o": {"x": 1}})).as_deref(),
            Some("$.n[1]: recorded 2, now 3")
        );
        assert_eq!(
            first_difference(&a, &json!({"q": "a", "n": [1, 2], "o": {"x": 1, "y": 2}})).as_deref(),
            Some("$.o.y: absent in the recording, now 2")
        );
    }
}
