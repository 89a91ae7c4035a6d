//! Step 4 for data-flow labels (`context::flow`): before a call is forwarded, the flow rules
//! judge it against what the execution's tree has read (refuse, or ask); when a call's answer
//! reaches the script, its tool's labels join the tree's; every label that joins and every flow
//! decision is traced (`label_added`, `flow_decision`).

use super::*;
use crate::context::flow::{FlowVerdict, LabelSource};

impl Run {
    /// What the flow rules say of calling `tool` now. A refusal is the `PERMISSION_DENIED` the
    /// script gets; an ask is the rule text the approver sees.
    pub(super) fn flow_check(&mut self, tool: &str) -> Result<Option<String>, ExecError> {
        let flow = self.request.policy.flow();
        let Some(tree) = self.tree().filter(|_| flow.has_rules()) else {
            return Ok(None);
        };
        let verdict = tree.taint.with_read(|read| flow.decide(tool, read));
        let (decision, rule, label, message) = match verdict {
            FlowVerdict::Allow => return Ok(None),
            FlowVerdict::Deny {
                rule,
                label,
                message,
            } => ("deny", rule, label, message),
            FlowVerdict::Ask {
                rule,
                label,
                message,
            } => ("ask", rule, label, message),
        };
        self.traces.push(TraceEvent {
            kind: TraceKind::FlowDecision,
            tool: tool.to_string(),
            trace_id: new_trace_id(),
            parent_trace_id: self.request.parent_trace_id.clone(),
            ts: now_ms(),
            success: None,
            duration_ms: None,
            error: None,
            by: None,
            rule: Some(rule),
            transport: None,
            key: None,
            bytes: None,
            label: Some(label),
            decision: Some(decision.to_string()),
            approver: None,
        });
        match decision {
            "deny" => Err(ExecError::new(
                ErrorCode::PermissionDenied,
                format!("{message}; the call was not forwarded"),
            )
            .with_tool(tool)),
            _ => Ok(Some(message)),
        }
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
