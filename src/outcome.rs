//! The outcome of one execution, as `run --json` prints it and `execute_code` returns it.

use crate::error::ExecError;
use crate::trace::TraceEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub level: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub duration_ms: f64,
    pub tool_calls: u64,
    /// The runner's isolation layers as the host verified them in `/proc` (empty when no runner
    /// became ready).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub isolation: std::collections::BTreeMap<String, String>,
}

/// `{success, result, error, logs, traces, metrics}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub success: bool,
    pub result: Value,
    pub error: Option<ExecError>,
    pub logs: Vec<LogLine>,
    pub traces: Vec<TraceEvent>,
    pub metrics: Metrics,
}

impl Outcome {
    pub fn failed(error: ExecError) -> Self {
        Outcome {
            success: false,
            result: Value::Null,
            error: Some(error),
            logs: Vec::new(),
            traces: Vec::new(),
            metrics: Metrics::default(),
        }
    }
}
