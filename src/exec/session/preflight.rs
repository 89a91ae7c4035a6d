//! Step 1: what is refused before a runner exists.

use super::{cancelled, shutting_down, ExecRequest, Run};
use crate::error::{ErrorCode, ExecError};

impl Run {
    /// Refuses what cannot run before any runner is spawned.
    pub(super) fn preflight(&self, req: &ExecRequest) -> Result<(), ExecError> {
        if let Err(e) = self.limits.validate() {
            return Err(ExecError::new(ErrorCode::LimitExceeded, e.to_string()));
        }
        if req.code.len() as u64 > self.limits.source_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the script is {} bytes; the source limit is {} bytes",
                    req.code.len(),
                    self.limits.source_bytes
                ),
            ));
        }
        // Context keys become the script's globals: refused before any runner is spawned when
        // they are not identifiers or would shadow a built-in (the runner checks them again).
        if let Some(problem) = req.context.keys().find_map(|k| match req.language {
            sandbox_runner::protocol::Language::Javascript => {
                sandbox_runner::protocol::context_key_problem(k)
            }
            sandbox_runner::protocol::Language::Python => {
                sandbox_runner::protocol::python_context_key_problem(k)
            }
        }) {
            return Err(ExecError::new(ErrorCode::InvalidArguments, problem));
        }
        if req.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(shutting_down());
        }
        if req.client_cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(cancelled());
        }
        Ok(())
    }
}
