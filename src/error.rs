//! The stable error codes of an execution, shown to scripts as `err.code` and in the outcome.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Every error a script, an agent or a user can get from an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    SyntaxError,
    RuntimeError,
    ExecutionTimeout,
    CpuLimit,
    MemoryLimit,
    ResultNotSerializable,
    ToolNotFound,
    InvalidArguments,
    ToolError,
    ToolTimeout,
    PermissionDenied,
    LimitExceeded,
    RunnerCrashed,
    ProtocolError,
    SandboxUnavailable,
    CapabilityCycle,
    CapabilityDepth,
    Deadlock,
    /// A configured MCP server could not be started (or restarted); the message has the reason.
    ServerUnavailable,
    /// A confined stdio MCP server (the default) could not be started in its sandbox: no
    /// bubblewrap, or the kernel refuses it the namespaces; the message says how to fix it
    /// (install bubblewrap, allow user namespaces, or `"confine": false` knowingly).
    ServerConfinementUnavailable,
    /// The client withdrew the request (MCP `notifications/cancelled`, or its session ended).
    Cancelled,
    /// `store(key, value)` was given a value JSON cannot hold (a set, a BigInt, a function…).
    StateValueInvalid,
    /// `mcp-sandbox replay`: the script made a call the recording does not have (another tool,
    /// other arguments, or more calls); the message names the call and the first difference.
    ReplayDiverged,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 23] = [
        ErrorCode::SyntaxError,
        ErrorCode::RuntimeError,
        ErrorCode::ExecutionTimeout,
        ErrorCode::CpuLimit,
        ErrorCode::MemoryLimit,
        ErrorCode::ResultNotSerializable,
        ErrorCode::ToolNotFound,
        ErrorCode::InvalidArguments,
        ErrorCode::ToolError,
        ErrorCode::ToolTimeout,
        ErrorCode::PermissionDenied,
        ErrorCode::LimitExceeded,
        ErrorCode::RunnerCrashed,
        ErrorCode::ProtocolError,
        ErrorCode::SandboxUnavailable,
        ErrorCode::CapabilityCycle,
        ErrorCode::CapabilityDepth,
        ErrorCode::Deadlock,
        ErrorCode::ServerUnavailable,
        ErrorCode::ServerConfinementUnavailable,
        ErrorCode::Cancelled,
        ErrorCode::StateValueInvalid,
        ErrorCode::ReplayDiverged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SyntaxError => "SYNTAX_ERROR",
            ErrorCode::RuntimeError => "RUNTIME_ERROR",
            ErrorCode::ExecutionTimeout => "EXECUTION_TIMEOUT",
            ErrorCode::CpuLimit => "CPU_LIMIT",
            ErrorCode::MemoryLimit => "MEMORY_LIMIT",
            ErrorCode::ResultNotSerializable => "RESULT_NOT_SERIALIZABLE",
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::ToolError => "TOOL_ERROR",
            ErrorCode::ToolTimeout => "TOOL_TIMEOUT",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::RunnerCrashed => "RUNNER_CRASHED",
            ErrorCode::ProtocolError => "PROTOCOL_ERROR",
            ErrorCode::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            ErrorCode::CapabilityCycle => "CAPABILITY_CYCLE",
            ErrorCode::CapabilityDepth => "CAPABILITY_DEPTH",
            ErrorCode::Deadlock => "DEADLOCK",
            ErrorCode::ServerUnavailable => "SERVER_UNAVAILABLE",
            ErrorCode::ServerConfinementUnavailable => "SERVER_CONFINEMENT_UNAVAILABLE",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::StateValueInvalid => "STATE_VALUE_INVALID",
            ErrorCode::ReplayDiverged => "REPLAY_DIVERGED",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Codes the runner may claim in `execution_complete`. The others (timeouts, crashes,
    /// protocol and sandbox failures) are only ever decided by the host; a runner claiming one is
    /// breaking the protocol.
    pub fn runner_may_report(self) -> bool {
        !matches!(
            self,
            ErrorCode::ExecutionTimeout
                | ErrorCode::RunnerCrashed
                | ErrorCode::ProtocolError
                | ErrorCode::SandboxUnavailable
                | ErrorCode::Cancelled
                | ErrorCode::ReplayDiverged
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A structured execution error, as it appears in the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternatives: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// For `RUNNER_CRASHED`: the signal that ended the runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// For `RUNNER_CRASHED`: the runner's exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
}

impl ExecError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ExecError {
            code,
            message: message.into(),
            tool: None,
            alternatives: None,
            stack: None,
            signal: None,
            exit_status: None,
        }
    }

    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ExecError {}
