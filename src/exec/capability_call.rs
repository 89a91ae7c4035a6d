//! How a capability call looks from its caller's side: the runner slots it waits for, and its
//! failure turned into a call error the caller's runner may report.

use crate::error::{ErrorCode, ExecError};
use std::sync::Arc;

/// A permit of `slots`, waiting at most until `deadline` (then `LIMIT_EXCEEDED`: every runner
/// of `what` stayed busy for the whole time the call had).
pub async fn wait_for(
    slots: &Arc<tokio::sync::Semaphore>,
    deadline: tokio::time::Instant,
    qualified: &str,
    what: &str,
) -> Result<tokio::sync::OwnedSemaphorePermit, ExecError> {
    match tokio::time::timeout_at(deadline, slots.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        Ok(Err(_)) => Err(ExecError::new(
            ErrorCode::SandboxUnavailable,
            "the sandbox is shutting down and starts no more runners",
        )
        .with_tool(qualified)),
        Err(_) => Err(ExecError::new(
            ErrorCode::LimitExceeded,
            format!(
                "capability {qualified} was not started: {what} were all busy for the time the call had; call fewer capabilities at once"
            ),
        )
        .with_tool(qualified)),
    }
}

/// A capability's failure as its caller sees it. Codes only the host may decide for an
/// execution become call errors the caller's runner may report.
pub fn as_call_error(qualified: &str, mut e: ExecError) -> ExecError {
    e.code = match e.code {
        ErrorCode::ExecutionTimeout => ErrorCode::ToolTimeout,
        ErrorCode::RunnerCrashed | ErrorCode::ProtocolError | ErrorCode::SandboxUnavailable => {
            ErrorCode::ToolError
        }
        c => c,
    };
    e.message = format!("capability {qualified} failed: {}", e.message);
    if e.tool.is_none() {
        e.tool = Some(qualified.to_string());
    }
    e.signal = None;
    e.exit_status = None;
    e
}
