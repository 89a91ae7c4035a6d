//! Who a capability runs for besides its caller: the principal who saved the version that runs
//! (its author). A capability can never do what its author could not: its calls must pass the
//! caller's policy **and** the rules of the author's policies (`sandbox.policies`, by the names
//! the author had when it saved; the local CLI and `anonymous` have the config's policy, which
//! every caller's policy already contains). Saving and removing are audited (see
//! [`crate::store::Store::save_capability_audited`]); a call of a version whose author differs
//! from the previous version's is traced (`capability_author_changed`).

use crate::config::gateway::PrincipalPolicy;
use crate::context::policy::{Policy, Rules};
use crate::context::principal::Caller;
use crate::exec::audit::AuditCode;
use crate::store::audit::AuditRecord;
use crate::store::CapabilityRecord;
use crate::trace::{now_ms, TraceEvent, TraceKind};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The config's per-principal policies, by name: where authors' rules come from.
#[derive(Clone, Debug, Default)]
pub struct AuthorPolicies(pub Arc<BTreeMap<String, PrincipalPolicy>>);

impl AuthorPolicies {
    /// `caller` narrowed by the rules of the author of `rec` (called as `qualified`). A policy
    /// name the config no longer has allows nothing (fail closed).
    pub fn narrow(&self, caller: Policy, rec: &CapabilityRecord, qualified: &str) -> Policy {
        let Some(author) = rec.author.as_deref() else {
            return caller;
        };
        let mut policy = caller;
        for name in &rec.author_policies {
            let origin = format!(
                "policy '{name}' of {author} (author of {qualified} v{})",
                rec.version
            );
            let rules = match self.0.get(name) {
                Some(p) => Rules::from_entries(origin.clone(), p.allow.as_deref(), &p.deny)
                    .unwrap_or_else(|_| Rules::deny_all(origin)),
                None => Rules::deny_all(format!("{origin}, no longer in sandbox.policies")),
            };
            policy = policy.with(rules);
        }
        policy
    }
}

/// The audit record of a capability write (save, remove) by `caller`: who, from where, the
/// code's hash and size. The store adds the one call row that says
/// what was written.
pub fn write_record(keep: AuditCode, caller: &Caller, code: &str) -> AuditRecord {
    AuditRecord {
        id: 0,
        execution_id: None,
        ts: now_ms(),
        // Every string a client chose is bounded, as in an execution's record.
        principal: crate::exec::audit::bounded(&caller.principal, keep),
        tenant: crate::exec::audit::bounded(&caller.tenant, keep),
        client: caller
            .client
            .as_deref()
            .map(|c| crate::exec::audit::bounded(c, keep)),
        front: caller.front.to_string(),
        // The hash and size only, whatever `--audit-code` says: the code itself is the saved
        // version's (the call row names it), and a second copy would let saves grow the state
        // file past the capability quota.
        code: None,
        code_sha256: crate::store::audit_options::sha256_hex(code.as_bytes()),
        code_bytes: Some(code.len() as u64),
        outcome: "OK".into(),
        duration_ms: 0.0,
        calls: Vec::new(),
        detail: None,
        write_key: None,
        labels: Vec::new(),
    }
}

/// The `capability_author_changed` event of the call `trace_id`, when the version that runs was
/// saved by another principal than the version before it (`previous`: that version's author,
/// `None` when there is no earlier version).
pub fn author_changed(
    rec: &CapabilityRecord,
    previous: Option<&Option<String>>,
    trace_id: &str,
    parent_trace_id: Option<&String>,
) -> Option<TraceEvent> {
    let previous = previous?;
    if previous.as_deref() == rec.author.as_deref() {
        return None;
    }
    Some(TraceEvent {
        kind: TraceKind::CapabilityAuthorChanged,
        tool: rec.name.clone(),
        trace_id: trace_id.to_string(),
        parent_trace_id: parent_trace_id.cloned(),
        ts: now_ms(),
        success: None,
        duration_ms: None,
        error: None,
        by: Some(rec.author_shown().to_string()),
        rule: Some(format!(
            "version {} was saved by {}, the version before it by {}",
            rec.version,
            rec.author_shown(),
            previous.as_deref().unwrap_or("unknown")
        )),
        transport: None,
        key: None,
        bytes: None,
        label: None,
        decision: None,
        approver: None,
    })
}
