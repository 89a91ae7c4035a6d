//! Which error codes a runner may put in its `execution_complete`, and when. The runner is
//! hostile from the host's view: a code only the host can know (a call's timeout, a policy
//! denial, a capability cycle) is believed only when the host itself answered a call with it,
//! and a tool named in an error must be one the host routed in this execution (or, for the
//! runner's own checks, one the catalog knows). Anything else is a forged outcome: the session
//! turns it into `PROTOCOL_ERROR`. The table is in docs/security-model.md.

use crate::error::ErrorCode;
use crate::tools::catalog::Catalog;
use std::collections::HashSet;

/// What the host saw in this execution.
pub struct Seen<'a> {
    pub catalog: &'a Catalog,
    /// `server:tool` of every call the host routed.
    pub routed: &'a HashSet<String>,
    /// `(code, server:tool)` of every error the host answered a call with.
    pub answered: &'a HashSet<(ErrorCode, String)>,
}

/// Who may originate a code in the runner's `execution_complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Decided by the host alone; never taken from a runner.
    HostOnly,
    /// The answer to a call: believed only if the host answered a call with it.
    CallAnswer,
    /// The runner's own checks or the script itself (syntax, exceptions, its JS CPU and heap
    /// budgets, result size, argument shape, unknown names).
    Runner,
}

pub fn origin(code: ErrorCode) -> Origin {
    match code {
        ErrorCode::ExecutionTimeout
        | ErrorCode::RunnerCrashed
        | ErrorCode::ProtocolError
        | ErrorCode::SandboxUnavailable
        | ErrorCode::Cancelled
        | ErrorCode::ReplayDiverged => Origin::HostOnly,
        ErrorCode::ToolTimeout
        | ErrorCode::PermissionDenied
        | ErrorCode::CapabilityCycle
        | ErrorCode::CapabilityDepth
        | ErrorCode::ToolError
        | ErrorCode::ServerUnavailable
        | ErrorCode::ServerConfinementUnavailable => Origin::CallAnswer,
        ErrorCode::SyntaxError
        | ErrorCode::RuntimeError
        | ErrorCode::CpuLimit
        | ErrorCode::MemoryLimit
        | ErrorCode::ResultNotSerializable
        | ErrorCode::ToolNotFound
        | ErrorCode::InvalidArguments
        | ErrorCode::LimitExceeded
        | ErrorCode::StateValueInvalid
        | ErrorCode::Deadlock => Origin::Runner,
    }
}

/// `$state:store`, `$state:load`, …: a session-state operation, answered by the host.
fn is_state_operation(tool: &str) -> bool {
    tool.split_once(':').is_some_and(|(s, op)| {
        s == crate::exec::state::STATE_SERVER
            && sandbox_runner::protocol::STATE_OPERATIONS.contains(&op)
    })
}

/// `Ok` when the runner may report `code` naming `tool`; else why it is forged.
pub fn check(code: ErrorCode, tool: Option<&str>, seen: &Seen<'_>) -> Result<(), String> {
    let answered_with = |tool: Option<&str>| match tool {
        Some(t) => seen.answered.contains(&(code, t.to_string())),
        None => seen.answered.iter().any(|(c, _)| *c == code),
    };
    if answered_with(tool) {
        return Ok(());
    }
    let shown = |t: &str| {
        crate::exec::budget::clip(
            &crate::term::escape(t),
            2 * crate::exec::budget::MAX_NAME_BYTES + 1,
        )
    };
    match origin(code) {
        Origin::HostOnly => Err(format!("it claimed {code}, which only the host decides")),
        Origin::CallAnswer => {
            // A call to a server that failed to start is refused by the runner itself, with
            // the code the host gave it for that server.
            let unavailable = tool
                .and_then(|t| t.split_once(':'))
                .and_then(|(s, _)| seen.catalog.unavailable().get(s))
                .is_some_and(|reason| {
                    code == ErrorCode::ToolError
                        || code == crate::tools::catalog::unavailable_code(reason)
                });
            if unavailable {
                return Ok(());
            }
            Err(match tool {
                Some(t) => format!(
                    "it claimed {code} for {}, but the host answered no call to it with {code}",
                    shown(t)
                ),
                None => format!("it claimed {code}, but the host answered no call with {code}"),
            })
        }
        Origin::Runner => {
            let Some(t) = tool else { return Ok(()) };
            let known = t
                .split_once(':')
                .is_some_and(|(s, n)| seen.catalog.has_tool(s, n));
            match code {
                // The runner's own name check names a tool that does not exist.
                ErrorCode::ToolNotFound if known => Err(format!(
                    "it claimed {code} for {}, which the catalog has",
                    shown(t)
                )),
                ErrorCode::ToolNotFound => Ok(()),
                _ if seen.routed.contains(t) => Ok(()),
                // The runner refuses a state call itself (a value JSON cannot hold, a key that
                // is not a string, its call count): `$state` is no catalog server.
                ErrorCode::StateValueInvalid
                | ErrorCode::InvalidArguments
                | ErrorCode::LimitExceeded
                    if is_state_operation(t) =>
                {
                    Ok(())
                }
                // The runner refuses these calls itself (argument shape, its call count).
                ErrorCode::InvalidArguments | ErrorCode::LimitExceeded if known => Ok(()),
                _ => Err(format!(
                    "it claimed {code} for {}, a tool this execution never routed",
                    shown(t)
                )),
            }
        }
    }
}
