//! Step 4 for data-flow labels (`context::flow`): when a call is admitted and again when it is
//! sent (`send_time`), the flow rules judge it against what the execution's tree (and, with
//! `flow_scope: "session"`, its session) has read (refuse, or ask); when a call's answer
//! reaches the script, its tool's labels join the tree's; every label that joins and every flow
//! decision is traced (`label_added`, `flow_decision`).

use super::*;
use crate::context::flow::{FlowVerdict, LabelSource};

/// What a flow rule decided at admission that the trace already shows (an `ask`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Traced {
    pub(super) rule: String,
    pub(super) label: String,
}

/// A flow rule's verdict on one call that is not a plain allow.
pub(super) struct FlowCall {
    /// Refused (else it waits for approval).
    pub(super) deny: bool,
    pub(super) rule: String,
    /// The called tool's label the rule stops.
    pub(super) label: String,
    /// Why, as the script's error and the approver's question say it.
    pub(super) message: String,
}

impl FlowCall {
    /// The `PERMISSION_DENIED` the script gets for a refusal.
    pub(super) fn refusal(&self, tool: &str) -> ExecError {
        ExecError::new(
            ErrorCode::PermissionDenied,
            format!("{}; the call was not forwarded", self.message),
        )
        .with_tool(tool)
    }
}

/// What the flow rules of `request` say of calling `tool` now, on the labels read so far
/// (`None`: allowed).
pub(super) fn flow_verdict(request: &RequestContext, tool: &str) -> Option<FlowCall> {
    let flow = request.policy.flow();
    let tree = request.tree.as_ref().filter(|_| flow.has_rules())?;
    match tree.taint.with_read(|read| flow.decide(tool, read)) {
        FlowVerdict::Allow => None,
        FlowVerdict::Deny {
            rule,
            label,
            message,
        } => Some(FlowCall {
            deny: true,
            rule,
            label,
            message,
        }),
        FlowVerdict::Ask {
            rule,
            label,
            message,
        } => Some(FlowCall {
            deny: false,
            rule,
            label,
            message,
        }),
    }
}

/// The `flow_decision` event of `call` on `tool`.
pub(super) fn flow_event(request: &RequestContext, tool: &str, call: &FlowCall) -> TraceEvent {
    TraceEvent {
        kind: TraceKind::FlowDecision,
        tool: tool.to_string(),
        trace_id: new_trace_id(),
        parent_trace_id: request.parent_trace_id.clone(),
        ts: now_ms(),
        success: None,
        duration_ms: None,
        error: None,
        by: None,
        rule: Some(call.rule.clone()),
        transport: None,
        key: None,
        bytes: None,
        label: Some(call.label.clone()),
        decision: Some(if call.deny { "deny" } else { "ask" }.to_string()),
        approver: None,
    }
}

impl Run {
    /// What the flow rules say of calling `tool` now, at admission (traced): a refusal is the
    /// `PERMISSION_DENIED` the script gets; an ask is the rule and label whose question the
    /// call's future asks when it is sent (`send_time`, which judges again then).
    pub(super) fn flow_check(&mut self, tool: &str) -> Result<Option<Traced>, ExecError> {
        let Some(call) = flow_verdict(&self.request, tool) else {
            return Ok(None);
        };
        self.traces.push(flow_event(&self.request, tool, &call));
        if call.deny {
            return Err(call.refusal(tool));
        }
        Ok(Some(Traced {
            rule: call.rule,
            label: call.label,
        }))
    }

    /// The answer of `tool` reached the script: its labels join what the tree has read.
    pub(super) fn flow_read(&mut self, tool: &str) {
        let flow = self.request.policy.flow();
        if !flow.tracks() {
            return;
        }
        let labels = flow.labels_of(tool);
        if let Some(tree) = self.tree() {
            for label in labels {
                tree.taint.add(&label, tool);
            }
        }
        self.trace_labels();
    }

    /// A `label_added` event for each label that joined the tree since the last one.
    pub(super) fn trace_labels(&mut self) {
        let Some(tree) = self.tree().cloned() else {
            return;
        };
        for source in tree.taint.untraced() {
            self.traces
                .push(label_event(&source, self.request.parent_trace_id.clone()));
        }
    }
}

fn label_event(source: &LabelSource, parent_trace_id: Option<String>) -> TraceEvent {
    TraceEvent {
        kind: TraceKind::LabelAdded,
        tool: source.tool.clone(),
        trace_id: new_trace_id(),
        parent_trace_id,
        ts: now_ms(),
        success: None,
        duration_ms: None,
        error: None,
        by: None,
        rule: source.earlier.then(|| "earlier".to_string()),
        transport: None,
        key: None,
        bytes: None,
        label: Some(source.label.clone()),
        decision: None,
        approver: None,
    }
}
