//! Step 4 at the moment a call leaves the host. A call is judged when it is admitted (to fail
//! fast), but it may start much later: it can wait in the queue behind the concurrency limit,
//! for the write-ahead audit record and for a person's approval, while the script and the
//! session's other executions go on reading. So every decision that depends on labels,
//! placeholders, conditions or approvals is made again here, inside the call's future, right
//! before the provider is given the arguments, on exactly the bytes it is given:
//!
//! 1. the placeholders are resolved into the bytes to send (a placeholder that does not
//!    resolve, or whose kind `reveal_to` does not give this tool, refuses the call before
//!    anyone is asked to approve it);
//! 2. the conditions of the allow and deny rules are evaluated on those bytes;
//! 3. the flow rules judge the call against the labels read so far — by this execution, its
//!    capabilities and, with `flow_scope: "session"`, the session's other executions running in
//!    this process — and an `ask` (of a flow rule or a conditioned ask rule) waits for a person,
//!    who is shown the redacted form of those bytes;
//! 4. after an approval the flow rules judge again (labels may have joined while the person
//!    looked); then the bytes go to the provider, with no await in between.
//!
//! A refusal by a flow rule here is traced as `flow_decision` (unless admission traced the
//! same decision), like one at admission.

use super::flow_calls::{flow_event, flow_verdict, FlowCall, Traced};
use super::*;
use crate::context::sensitive::Sensitive;
use crate::exec::placeholders::ExecPlaceholders;

/// Everything a call's future needs to decide at send time.
pub(super) struct Outgoing {
    pub(super) server: String,
    pub(super) tool: String,
    /// The arguments as the script wrote them (placeholders unresolved).
    pub(super) args: Value,
    pub(super) request: Arc<RequestContext>,
    pub(super) placeholders: Option<Arc<ExecPlaceholders>>,
    pub(super) sensitive: Option<Arc<Sensitive>>,
    pub(super) approvals: crate::gate::approval::Gate,
    /// The call's trace id, and where events of its decisions go (drained at its `tool_end`).
    pub(super) trace_id: String,
    pub(super) sink: crate::tools::catalog::TraceSink,
    /// The flow rule's `ask` admission traced, if any.
    pub(super) traced: Option<Traced>,
    pub(super) live: Option<Arc<crate::exec::live::LiveView>>,
}

/// `args` with their placeholders replaced by the values they stand for, for `qualified`
/// (`None`: sensitive values are not kept from the model, nothing to resolve). Without a map
/// (a capability's nested execution) any placeholder is refused.
pub(super) fn resolve(
    placeholders: Option<&ExecPlaceholders>,
    sensitive: Option<&Sensitive>,
    qualified: &str,
    args: &Value,
) -> Result<Option<Value>, ExecError> {
    let resolved = match (placeholders, sensitive) {
        (Some(p), _) => {
            let mut sent = args.clone();
            p.substitute(qualified, &mut sent).map(|()| Some(sent))
        }
        (None, Some(s)) => crate::exec::placeholders::refuse_any(s, qualified, args).map(|()| None),
        (None, None) => Ok(None),
    };
    resolved.map_err(|e| e.with_tool(qualified))
}

impl Outgoing {
    fn qualified(&self) -> String {
        format!("{}:{}", self.server, self.tool)
    }

    /// The bytes to send, once every decision allows them; else the error the script gets.
    pub(super) async fn decide(mut self) -> Result<Value, ExecError> {
        let qualified = self.qualified();
        // 1. The bytes to send (the script's own when there is nothing to resolve: moved, not
        // copied).
        let sent = match resolve(
            self.placeholders.as_deref(),
            self.sensitive.as_deref(),
            &qualified,
            &self.args,
        )? {
            Some(sent) => sent,
            None => std::mem::take(&mut self.args),
        };
        // 2. Conditions of allow and deny rules, on those bytes.
        crate::gate::check_call::check_conditions(&self.request, &self.server, &self.tool, &sent)?;
        // 3-4. Flow rules on the labels read so far, and approvals, until nothing new asks.
        let mut policy_ask = self
            .request
            .policy
            .asks_call(&self.server, &self.tool, Some(&sent));
        let mut approved: Vec<Traced> = Vec::new();
        loop {
            let flow = flow_verdict(&self.request, &qualified);
            let flow_ask = match flow {
                None => None,
                Some(call) => {
                    let key = Traced {
                        rule: call.rule.clone(),
                        label: call.label.clone(),
                    };
                    if call.deny {
                        self.record(&qualified, &call);
                        return Err(call.refusal(&qualified));
                    }
                    if approved.contains(&key) {
                        None
                    } else {
                        if self.traced.as_ref() != Some(&key) {
                            self.record(&qualified, &call);
                        }
                        approved.push(key);
                        Some(call.message)
                    }
                }
            };
            // A flow rule's question first (as at admission); the ask rule's at most once.
            let Some(rule) = flow_ask.or_else(|| policy_ask.take()) else {
                return Ok(sent);
            };
            self.approve(&qualified, &sent, &rule).await?;
        }
    }

    /// Asks a person about sending `sent` (shown redacted), under `rule`.
    async fn approve(&self, qualified: &str, sent: &Value, rule: &str) -> Result<(), ExecError> {
        let mut shown = sent.clone();
        if let Some(p) = &self.placeholders {
            p.redact_value(&mut shown);
        }
        let question = crate::gate::approval::Question::new(&self.server, &self.tool, &shown, rule)
            .in_execution(&self.request.execution_id);
        let wait = self.approvals.wait(
            question,
            crate::gate::approval::Recording {
                trace_id: self.trace_id.clone(),
                parent_trace_id: self.request.parent_trace_id.clone(),
                sink: self.sink.clone(),
            },
        );
        // Shown on `run`'s progress line while it waits.
        let _shown = self.live.as_ref().map(|l| l.approval_wait(qualified));
        wait.await
    }

    fn record(&self, qualified: &str, call: &FlowCall) {
        let event = flow_event(&self.request, qualified, call);
        if let Ok(mut sink) = self.sink.lock() {
            sink.push(event);
        }
    }
}
