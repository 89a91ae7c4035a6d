//! Who is asking, under which limits and policy, in which trace: the [`RequestContext`] that a
//! front builds once per request and that an execution carries through the door (`gate`) to
//! every observer (traces, the store, a capability's nested execution).
//!
//! Today it holds the client, the effective limits (the operator's, narrowed by the request),
//! the policy, the execution id and the trace the execution belongs to. The principal, the
//! tenant and a W3C trace context will hang off the same struct (docs/architecture.md), so no
//! signature between a front and the gate grows when they arrive.
//!
//! May import `error`, `trace`, `term` only.

pub mod condition;
pub mod flow;
pub mod limits;
pub mod policy;
pub mod principal;
pub mod sensitive;
pub mod session;
pub mod trace_context;
pub mod tree;

use limits::{AppliedLimit, Limits, RequestedLimits};
use policy::Policy;
use std::collections::BTreeMap;

/// Which front a request came through, and what it said about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Client {
    /// A program using the library directly (tests, benchmarks, embedders).
    #[default]
    Library,
    /// `mcp-sandbox run`.
    Cli,
    /// An MCP client of `serve`, with the name and version it gave in `initialize` (its own
    /// claim: shown in logs, never trusted for a decision).
    Mcp {
        transport: McpTransport,
        name: String,
        version: String,
    },
}

/// How an MCP client reached `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTransport {
    Stdio,
    Http,
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Library => f.write_str("library"),
            Client::Cli => f.write_str("cli"),
            Client::Mcp {
                transport,
                name,
                version,
            } => {
                let t = match transport {
                    McpTransport::Stdio => "stdio",
                    McpTransport::Http => "http",
                };
                write!(f, "mcp/{t} {name} {version}")
            }
        }
    }
}

/// Everything an execution needs to know about the request it serves, besides the code.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Who sent the request.
    pub client: Client,
    /// Who the execution runs for: principal, tenant, client name and front (the audit log
    /// records it; per-principal policy and limits have already narrowed `policy`/`limits`).
    pub caller: principal::Caller,
    /// The limits that apply: the operator's, narrowed by the request (never widened).
    pub limits: Limits,
    /// The limits the request asked for, each with the value that applied (shown in the
    /// outcome's `metrics.limits`).
    pub applied_limits: BTreeMap<String, AppliedLimit>,
    /// Which tools the script may call.
    pub policy: Policy,
    /// This execution's id, fresh per execution (nested ones get their own).
    pub execution_id: String,
    /// The trace id of the call this execution serves (a capability call): stamped as
    /// `parent_trace_id` on this execution's own events. `None` for a top-level execution.
    pub parent_trace_id: Option<String>,
    /// The bounds shared with the execution's capabilities (calls, CPU, nested runners): set
    /// by the session of a top-level execution, handed on to each nested one.
    pub tree: Option<std::sync::Arc<tree::ExecTree>>,
    /// The client session this execution belongs to (`None`: no session — `run` without
    /// `--session`, the library, and every capability's nested execution).
    pub session: Option<session::SessionScope>,
    /// Where this execution's data-flow labels stay when it is not `session` (`flow_scope:
    /// "session"` for a request without a protocol session: the principal's scope).
    pub labels_scope: Option<session::SessionScope>,
    /// The session handle (MCP 2026-07-28) this request continues or was given: its answer
    /// names it, so the client can pass it back.
    pub handle: Option<String>,
    /// The W3C `traceparent` the request came with (read by the front; `None` without one).
    pub traceparent: Option<trace_context::RemoteParent>,
    /// The OpenTelemetry trace this execution belongs to: set when telemetry is on (by
    /// `telemetry::Telemetry::begin`), handed on to nested executions; `None` when it is off.
    pub trace: Option<trace_context::TraceContext>,
    /// The caller's fair share of the execution queue (`exec::fair_share`).
    pub share: limits::ShareCaps,
}

impl Default for RequestContext {
    fn default() -> Self {
        RequestContext::new(Client::default(), Limits::default(), Policy::default())
    }
}

impl RequestContext {
    /// A top-level request from `client` under `limits` and `policy`, with a fresh execution id.
    pub fn new(client: Client, limits: Limits, policy: Policy) -> Self {
        RequestContext {
            client,
            caller: principal::Caller::default(),
            limits,
            applied_limits: BTreeMap::new(),
            policy,
            execution_id: crate::trace::new_trace_id(),
            parent_trace_id: None,
            tree: None,
            session: None,
            labels_scope: None,
            handle: None,
            traceparent: None,
            trace: None,
            share: limits::ShareCaps::default(),
        }
    }

    /// The same request with the `traceparent` it came with (ignored when malformed).
    pub fn with_traceparent(mut self, value: Option<&str>) -> Self {
        self.traceparent = value.and_then(trace_context::parse_traceparent);
        self
    }

    /// The same request with these limits (the operator's or the CLI's; not narrowed).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same request on behalf of `caller`.
    pub fn with_caller(mut self, caller: principal::Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The same request within this client session.
    pub fn with_session(mut self, session: session::SessionScope) -> Self {
        self.session = Some(session);
        self
    }

    /// The same request with its session handle and where its data-flow labels stay (see
    /// `labels_scope`).
    pub fn with_handle(
        mut self,
        handle: Option<String>,
        labels_scope: Option<session::SessionScope>,
    ) -> Self {
        self.handle = handle;
        self.labels_scope = labels_scope;
        self
    }

    /// The same request under this policy.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Narrows the limits by what the request asked for: a requested value applies only when
    /// it is lower than the current one. Records what applied for the outcome.
    pub fn narrowed(mut self, requested: &RequestedLimits) -> Self {
        let (limits, applied) = self.limits.narrow(requested);
        self.limits = limits;
        self.applied_limits = applied;
        self
    }

    /// The context of a nested execution serving the call `trace_id` (a capability call): the
    /// same client and policy, `limits` (the caller's, bounded by what is left of its time),
    /// a fresh execution id, and no requested-limits report of its own.
    pub fn nested(&self, trace_id: &str, limits: Limits) -> Self {
        RequestContext {
            client: self.client.clone(),
            caller: self.caller.clone(),
            limits,
            applied_limits: BTreeMap::new(),
            policy: self.policy.clone(),
            execution_id: crate::trace::new_trace_id(),
            parent_trace_id: Some(trace_id.to_string()),
            tree: self.tree.clone(),
            // A capability runs without the caller's session: its code (maybe another
            // principal's) never reads or writes the caller's state.
            session: None,
            labels_scope: None,
            handle: None,
            traceparent: None,
            // The same trace: a capability's calls are spans under its call's span.
            trace: self.trace,
            share: self.share,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_only_lowers_limits_and_says_what_applied() {
        let operator = Limits::default();
        let ctx = RequestContext::new(Client::Cli, operator, Policy::default()).narrowed(
            &RequestedLimits {
                timeout_ms: Some(operator.timeout_ms * 10),
                cpu_ms: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(ctx.limits.timeout_ms, operator.timeout_ms);
        assert_eq!(ctx.limits.cpu_ms, 1);
        assert!(ctx.applied_limits["timeout_ms"].capped);
        assert!(!ctx.applied_limits["cpu_ms"].capped);
    }

    #[test]
    fn nested_contexts_keep_the_caller_and_get_their_own_id() {
        let ctx = RequestContext::new(Client::Cli, Limits::default(), Policy::default());
        let inner = ctx.nested("call-1", Limits::default());
        assert_eq!(inner.client, Client::Cli);
        assert_eq!(inner.parent_trace_id.as_deref(), Some("call-1"));
        assert_ne!(inner.execution_id, ctx.execution_id);
    }
}
