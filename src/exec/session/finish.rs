//! Step 5: the runner's `execution_complete` checked (codes it may report, provenance, the
//! exit after it) and everything turned into the outcome.

use super::*;

impl Run {
    pub(super) fn complete(
        &mut self,
        catalog: &Catalog,
        success: bool,
        result: Option<Value>,
        error: Option<WireError>,
    ) -> Result<(), ExecError> {
        if success {
            self.result = Some(result.unwrap_or(Value::Null));
            return Ok(());
        }
        let Some(w) = error else {
            return Err(protocol(
                "a failed execution_complete without an error".into(),
            ));
        };
        // A host-only code passes on only as the host's own answer to a call (a state
        // operation's `SANDBOX_UNAVAILABLE`, re-raised uncaught); provenance checks which.
        let code = ErrorCode::parse(&w.code)
            .filter(|c| c.runner_may_report() || self.answered.iter().any(|(a, _)| a == c))
            .ok_or_else(|| protocol(format!("the runner reported error code '{}'", w.code)))?;
        if let Err(why) = provenance::check(
            code,
            w.tool.as_deref(),
            &provenance::Seen {
                catalog,
                routed: &self.routed,
                answered: &self.answered,
            },
        ) {
            return Err(protocol(why));
        }
        // A script error is the execution's outcome, not a protocol failure. Its strings are the
        // runner's: bounded here before they are kept.
        let alternatives = w.alternatives.map(|alts| {
            alts.into_iter()
                .take(crate::gate::check_call::MAX_ALTERNATIVES)
                .map(|a| budget::clip(&a, 2 * budget::MAX_NAME_BYTES + 1))
                .collect()
        });
        self.script_error = Some(ExecError {
            code,
            message: budget::clip(&w.message, budget::ERROR_MESSAGE_BYTES),
            tool: w.tool.filter(|t| t.len() <= 2 * budget::MAX_NAME_BYTES + 1),
            alternatives,
            stack: w
                .stack
                .map(|st| budget::clip(&st, budget::ERROR_MESSAGE_BYTES)),
            signal: None,
            exit_status: None,
        });
        Ok(())
    }

    pub(super) fn timeout_error(&self, when: &str) -> ExecError {
        let when = if when.is_empty() {
            String::new()
        } else {
            format!(" {when}")
        };
        ExecError::new(
            ErrorCode::ExecutionTimeout,
            format!(
                "the execution did not finish within {} ms{when}; the runner was killed. Await every promise you start, or raise --timeout-ms",
                self.limits.timeout_ms
            ),
        )
    }

    /// The wall clock ran out while the script waited on nothing the host does (no call open,
    /// no timer armed): it was busy, most likely in a loop that does not end.
    pub(super) fn busy_timeout_error(&self) -> ExecError {
        ExecError::new(
            ErrorCode::ExecutionTimeout,
            format!(
                "the script ran for {} ms without waiting on anything (an endless loop?); the runner was killed. Look for a loop whose condition never becomes false, or raise --timeout-ms",
                self.limits.timeout_ms
            ),
        )
    }

    /// The servers' log lines that arrived since the last time, into the execution's logs.
    pub(super) fn server_logs(&mut self) {
        for line in self.feedback.take() {
            self.log(&line.level, line.message);
        }
    }

    pub(super) fn finish(mut self, error: Option<ExecError>, started: Instant) -> Outcome {
        self.server_logs();
        let error = error.or(self.script_error.take());
        if let Some(e) = &error {
            self.receipts(&ExecError::new(e.code, e.message.clone()));
        }
        let success = error.is_none();
        Outcome {
            success,
            result: if success {
                self.result.take().unwrap_or(Value::Null)
            } else {
                Value::Null
            },
            error,
            logs: self.logs,
            traces: self.traces,
            metrics: Metrics {
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                tool_calls: self.calls,
                isolation: self.isolation,
                limits: self.request.applied_limits.clone(),
                runner_pid: self.runner_pid,
            },
        }
    }
}
