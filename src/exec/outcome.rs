//! The outcome of one execution, as `run --json` prints it and `execute_code` returns it.

use crate::error::ExecError;
use crate::trace::TraceEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Per-line overhead counted against the log budget, so empty lines cannot grow memory forever.
pub const LOG_LINE_OVERHEAD: u64 = 32;

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
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub isolation: BTreeMap<String, String>,
    /// The limits a request asked for (serve's `execute_code`), each with the value that applied:
    /// a request may only lower the operator's limits, so a larger ask is capped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, AppliedLimit>,
    /// The host's pid of the runner that ran the script (`None` when none became ready). Kept
    /// for telemetry (`mcp_sandbox.runner.pid`) and never serialised: the outcome goes to the
    /// client, and a host pid is none of the model's business.
    #[serde(skip)]
    pub runner_pid: Option<u32>,
}

pub use crate::context::limits::AppliedLimit;

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

impl crate::store::FinishedExecution for Outcome {
    fn success(&self) -> bool {
        self.success
    }
    fn error_code(&self) -> Option<crate::error::ErrorCode> {
        self.error.as_ref().map(|e| e.code)
    }
    fn traces(&self) -> &[crate::trace::TraceEvent] {
        &self.traces
    }
}
