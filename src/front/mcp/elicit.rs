//! `serve`'s approver: the question as an MCP elicitation request (`elicitation/create`, form
//! mode) to the client that sent `execute_code`, only when that client declared the
//! `elicitation` capability. Otherwise nobody can be asked and a call that needs approval is
//! denied at once with a message saying so (unless `--approve` matches it).
//!
//! The form has one required choice, `decision` ([`APPROVE_ONCE`], [`APPROVE_TOOL`], [`DENY`]),
//! and an optional `reason`. `decline` and `cancel` from the client are a denial.

use crate::context::policy::PreApproved;
use crate::gate::approval::{Answer, ApprovalError, Approvals, Approver, By, Question};
use futures::future::BoxFuture;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, RequestId, ServerRequest,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub const APPROVE_ONCE: &str = "approve once";
pub const APPROVE_TOOL: &str = "approve this tool for the rest of this execution";
pub const DENY: &str = "deny";

/// The approvals of one `execute_code` request whose only possible approver is `client` (the
/// request's client, when it declared elicitation); `modern`: a 2026-07-28 request.
pub fn approvals(
    client: Option<Arc<dyn Approver>>,
    pre_approved: PreApproved,
    timeout: Duration,
    modern: bool,
) -> Approvals {
    match client {
        Some(client) => Approvals::new(client, pre_approved, timeout),
        None if modern => Approvals::nobody(
            By::Elicitation,
            "nobody can approve: the MCP client did not declare the elicitation capability in its request's _meta \
             (MCP 2026-07-28 clients declare it per request), so it cannot be asked; use a client that supports \
             elicitation, answer on the web view (serve --http with a state store), or start serve with --approve {call}",
            pre_approved,
        ),
        None => Approvals::nobody(
            By::Elicitation,
            "the MCP client did not declare the elicitation capability, so it cannot approve calls; \
             use a client that supports elicitation, or start serve with --approve {call}",
            pre_approved,
        ),
    }
}

/// The connected (legacy) client as an approver; the caller checked that it declared
/// elicitation.
pub fn client_approver(peer: &Peer<RoleServer>) -> Arc<dyn Approver> {
    Arc::new(ElicitationApprover { peer: peer.clone() })
}

/// Asks the connected client.
pub struct ElicitationApprover {
    peer: Peer<RoleServer>,
}

impl Approver for ElicitationApprover {
    fn by(&self) -> By {
        By::Elicitation
    }

    fn ask(&self, question: Question) -> BoxFuture<'static, Result<Answer, ApprovalError>> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let failed =
                |why: String| ApprovalError::Failed(format!("the elicitation request: {why}"));
            let params: ElicitRequestParams =
                serde_json::from_value(form(&question)).map_err(|e| failed(e.to_string()))?;
            let handle = peer
                .send_request_with_option(
                    ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                    PeerRequestOptions::no_options(),
                )
                .await
                .map_err(|e| failed(e.to_string()))?;
            // Withdrawn (approval timeout, execution ended or cancelled): the client is told.
            let mut guard = Withdraw {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let reply = handle.await_response().await;
            guard.id = None;
            let reply = reply.map_err(|e| failed(e.to_string()))?;
            let ClientResult::ElicitResult(result) = reply else {
                return Err(failed("the client answered with something else".into()));
            };
            Ok(answer_of(result))
        })
    }
}

/// The approval form of `question`: the `params` of an `elicitation/create` request (sent to a
/// legacy client, or carried in a 2026-07-28 client's `input_required` result).
pub fn form(question: &Question) -> serde_json::Value {
    json!({
        "mode": "form",
        "message": question.text(),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": [APPROVE_ONCE, APPROVE_TOOL, DENY],
                },
                "reason": {
                    "type": "string",
                    "title": "Reason (when denying)",
                },
            },
            "required": ["decision"],
        },
    })
}

/// The answer a client's result of the form says: `accept` with a valid decision, else a denial.
pub fn answer_of(result: ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let content = result.content.unwrap_or_default();
            let reason = content
                .get("reason")
                .and_then(|r| r.as_str())
                .map(str::to_string);
            match content.get("decision").and_then(|d| d.as_str()) {
                Some(APPROVE_ONCE) => Answer::Once,
                Some(APPROVE_TOOL) => Answer::ToolForExecution,
                Some(DENY) => Answer::Deny(reason),
                other => Answer::Deny(Some(format!(
                    "the client's answer had no valid decision ({}); the form's decision is one of \"{APPROVE_ONCE}\", \"{APPROVE_TOOL}\", \"{DENY}\"",
                    other.map_or("none".to_string(), |d| format!("{d:?}"))
                ))),
            }
        }
        ElicitationAction::Decline => Answer::Deny(Some("declined".into())),
        ElicitationAction::Cancel => Answer::Deny(Some("cancelled".into())),
        _ => Answer::Deny(Some("the client's answer was not accept".into())),
    }
}

/// Sends `notifications/cancelled` for an elicitation request still open when it drops.
struct Withdraw {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let params: Result<CancelledNotificationParam, _> = serde_json::from_value(json!({
            "requestId": id,
            "reason": "the approval is no longer needed (timed out, or the execution ended)",
        }));
        if let (Ok(params), Ok(rt)) = (params, tokio::runtime::Handle::try_current()) {
            rt.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}
