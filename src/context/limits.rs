//! Per-execution limits, their defaults (design.md) and their bounds.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every limit of one execution. Each breach ends in a structured error, never a hang.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall clock for the whole execution, spawn to result (`EXECUTION_TIMEOUT`).
    pub timeout_ms: u64,
    /// CPU time spent running JavaScript, not counting waits on tools (`CPU_LIMIT`).
    pub cpu_ms: u64,
    /// QuickJS heap (`MEMORY_LIMIT`).
    pub memory_mb: u64,
    /// QuickJS stack.
    pub stack_kb: u64,
    /// One tool call (`TOOL_TIMEOUT`).
    pub call_timeout_ms: u64,
    /// Tool calls per execution (`LIMIT_EXCEEDED`).
    pub max_calls: u64,
    /// Tool calls running at once; further calls wait for a free slot.
    pub max_concurrent_calls: u64,
    /// Size of the script source (`LIMIT_EXCEEDED`).
    pub source_bytes: u64,
    /// Size of the serialized result (`LIMIT_EXCEEDED`).
    pub result_bytes: u64,
    /// Total size of log lines; past it they are dropped and the outcome says so.
    pub log_bytes: u64,
    /// One frame on the socket (`PROTOCOL_ERROR` when a runner sends more).
    pub frame_bytes: u64,
    /// Serialized arguments of one tool call, checked by the host before forwarding
    /// (`LIMIT_EXCEEDED`); a server's `maxArgBytes` in the config replaces it for that server.
    pub max_arg_bytes: u64,
    /// Serialized result of one tool call, checked by the host before it reaches the runner
    /// (`LIMIT_EXCEEDED`).
    pub max_tool_result_bytes: u64,
    /// What one `execute_code` answer may hold (its text and `structuredContent` together);
    /// past it the answer is cut by the gateway (`exec::output_budget`), never the execution.
    /// `run` applies it only with `--max-output-bytes`.
    pub max_output_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 30_000,
            cpu_ms: 10_000,
            memory_mb: 128,
            stack_kb: 1024,
            call_timeout_ms: 10_000,
            max_calls: 1_000,
            max_concurrent_calls: 64,
            source_bytes: 1024 * 1024,
            result_bytes: 8 * 1024 * 1024,
            log_bytes: 1024 * 1024,
            frame_bytes: 16 * 1024 * 1024,
            max_arg_bytes: 1024 * 1024,
            max_tool_result_bytes: 8 * 1024 * 1024,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// The operator's default output budget of one `execute_code` answer.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 64 * 1024;
/// The smallest output budget accepted: room for the smallest answer that says it was cut.
pub const MIN_MAX_OUTPUT_BYTES: u64 = 1024;

/// A limit outside the range this tool accepts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("limit {name} = {value} is out of range; use a value from {min} to {max}")]
pub struct LimitError {
    pub name: &'static str,
    pub value: u64,
    pub min: u64,
    pub max: u64,
}

impl Limits {
    /// Checks every limit against its accepted range.
    pub fn validate(&self) -> Result<(), LimitError> {
        let checks: [(&'static str, u64, u64, u64); 14] = [
            ("timeout_ms", self.timeout_ms, 1, 3_600_000),
            ("cpu_ms", self.cpu_ms, 1, 3_600_000),
            ("memory_mb", self.memory_mb, 1, 16 * 1024),
            ("stack_kb", self.stack_kb, 64, 64 * 1024),
            ("call_timeout_ms", self.call_timeout_ms, 1, 3_600_000),
            ("max_calls", self.max_calls, 0, 1_000_000),
            ("max_concurrent_calls", self.max_concurrent_calls, 1, 10_000),
            ("source_bytes", self.source_bytes, 1, 64 * 1024 * 1024),
            ("result_bytes", self.result_bytes, 1, 256 * 1024 * 1024),
            ("log_bytes", self.log_bytes, 0, 256 * 1024 * 1024),
            ("frame_bytes", self.frame_bytes, 1024, 1024 * 1024 * 1024),
            ("max_arg_bytes", self.max_arg_bytes, 1, 1024 * 1024 * 1024),
            (
                "max_tool_result_bytes",
                self.max_tool_result_bytes,
                1,
                1024 * 1024 * 1024,
            ),
            (
                "max_output_bytes",
                self.max_output_bytes,
                MIN_MAX_OUTPUT_BYTES,
                1024 * 1024 * 1024,
            ),
        ];
        for (name, value, min, max) in checks {
            if value < min || value > max {
                return Err(LimitError {
                    name,
                    value,
                    min,
                    max,
                });
            }
        }
        Ok(())
    }

    /// The part the runner enforces itself.
    pub fn runner_limits(&self) -> sandbox_runner::protocol::RunnerLimits {
        sandbox_runner::protocol::RunnerLimits {
            cpu_ms: self.cpu_ms,
            memory_bytes: self.memory_mb * 1024 * 1024,
            stack_bytes: self.stack_kb * 1024,
            result_bytes: self.result_bytes,
            log_bytes: self.log_bytes,
            max_calls: self.max_calls,
            max_frame_bytes: self.frame_bytes,
        }
    }
}

/// Limits a request asks for (serve's `execute_code`); each one may only lower the operator's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestedLimits {
    pub timeout_ms: Option<u64>,
    pub cpu_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub stack_kb: Option<u64>,
    pub call_timeout_ms: Option<u64>,
    pub max_calls: Option<u64>,
    pub max_concurrent_calls: Option<u64>,
    pub source_bytes: Option<u64>,
    pub result_bytes: Option<u64>,
    pub log_bytes: Option<u64>,
    pub frame_bytes: Option<u64>,
    pub max_output_bytes: Option<u64>,
}

impl Limits {
    /// The operator's limits narrowed by a request: each requested value applies when it is
    /// lower, else the operator's value does (the request is capped, never widens a limit).
    /// Returns the limits to use and, per requested limit, what applied.
    pub fn narrow(&self, requested: &RequestedLimits) -> (Limits, BTreeMap<String, AppliedLimit>) {
        let mut out = *self;
        let mut applied = BTreeMap::new();
        let fields: [(&str, Option<u64>, &mut u64); 12] = [
            ("timeout_ms", requested.timeout_ms, &mut out.timeout_ms),
            ("cpu_ms", requested.cpu_ms, &mut out.cpu_ms),
            ("memory_mb", requested.memory_mb, &mut out.memory_mb),
            ("stack_kb", requested.stack_kb, &mut out.stack_kb),
            (
                "call_timeout_ms",
                requested.call_timeout_ms,
                &mut out.call_timeout_ms,
            ),
            ("max_calls", requested.max_calls, &mut out.max_calls),
            (
                "max_concurrent_calls",
                requested.max_concurrent_calls,
                &mut out.max_concurrent_calls,
            ),
            (
                "source_bytes",
                requested.source_bytes,
                &mut out.source_bytes,
            ),
            (
                "result_bytes",
                requested.result_bytes,
                &mut out.result_bytes,
            ),
            ("log_bytes", requested.log_bytes, &mut out.log_bytes),
            ("frame_bytes", requested.frame_bytes, &mut out.frame_bytes),
            (
                "max_output_bytes",
                requested.max_output_bytes,
                &mut out.max_output_bytes,
            ),
        ];
        for (name, ask, value) in fields {
            let Some(ask) = ask else { continue };
            let capped = ask > *value;
            if !capped {
                *value = ask;
            }
            applied.insert(
                name.to_string(),
                AppliedLimit {
                    requested: ask,
                    applied: *value,
                    capped,
                },
            );
        }
        (out, applied)
    }
}

/// One limit a request asked for, and what applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedLimit {
    pub requested: u64,
    pub applied: u64,
    /// True when the request asked for more than the operator's limit, which applied instead.
    pub capped: bool,
}

/// A caller's fair share of the gateway's execution queue: how many executions (running or
/// queued; tasks, yielded runs and plain calls together) one principal, and one tenant, may
/// have admitted at once (`exec::fair_share`). Set by the front from `sandbox.fair_share` and
/// the principal's policies (`max_executions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareCaps {
    pub per_principal: u32,
    pub per_tenant: u32,
}

/// Default executions one principal may have running or queued at once.
pub const DEFAULT_SHARE_PER_PRINCIPAL: u32 = 32;
/// Default executions one tenant may have running or queued at once.
pub const DEFAULT_SHARE_PER_TENANT: u32 = 128;

impl ShareCaps {
    /// No cap: one caller's own use of the library or the CLI (the queue's bound still holds).
    pub const UNBOUNDED: ShareCaps = ShareCaps {
        per_principal: u32::MAX,
        per_tenant: u32::MAX,
    };

    /// A shared gateway's defaults (`serve`, unless `sandbox.fair_share` says otherwise).
    pub const GATEWAY: ShareCaps = ShareCaps {
        per_principal: DEFAULT_SHARE_PER_PRINCIPAL,
        per_tenant: DEFAULT_SHARE_PER_TENANT,
    };
}

impl Default for ShareCaps {
    /// [`ShareCaps::UNBOUNDED`]: `serve` sets every request's caps from its config.
    fn default() -> Self {
        ShareCaps::UNBOUNDED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_designs_and_valid() {
        let l = Limits::default();
        assert_eq!((l.timeout_ms, l.cpu_ms, l.memory_mb), (30_000, 10_000, 128));
        assert_eq!(l.validate(), Ok(()));
        let bad = Limits { memory_mb: 0, ..l };
        assert_eq!(bad.validate().unwrap_err().name, "memory_mb");
    }

    #[test]
    fn a_request_only_narrows() {
        let operator = Limits {
            timeout_ms: 2_000,
            ..Limits::default()
        };
        let ask = RequestedLimits {
            timeout_ms: Some(3_600_000),
            memory_mb: Some(16),
            ..Default::default()
        };
        let (l, applied) = operator.narrow(&ask);
        assert_eq!((l.timeout_ms, l.memory_mb), (2_000, 16));
        assert!(applied["timeout_ms"].capped && applied["timeout_ms"].applied == 2_000);
        assert!(!applied["memory_mb"].capped);
        assert_eq!(l.cpu_ms, operator.cpu_ms);
        assert_eq!(applied.len(), 2);
    }
}
