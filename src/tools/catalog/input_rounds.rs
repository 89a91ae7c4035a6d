//! A downstream MCP 2026-07-28 server that answers a call with `input_required` (SEP-2322: it
//! asks its user) has its questions carried to the upstream client through the execution's
//! [`Feedback`] — as an elicitation or sampling request to a legacy client, as `input_required`
//! to a 2026-07-28 one, redacted with the session's placeholders as any server question — and
//! the call is retried with the answers and the server's `requestState`, for at most
//! [`MAX_ROUNDS`] rounds. A question nobody can answer ends the call as a tool error naming
//! why; `roots/list` is not offered (the gateway has no roots).

use crate::tools::passthrough::{Feedback, Forward, Routes};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, InputResponses};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use std::sync::Arc;

/// Rounds of one call (the SDKs' default).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// `params` called on `peer` with `feedback` routed, its `input_required` rounds driven.
pub async fn call(
    peer: &Peer<RoleClient>,
    routes: &Arc<Routes>,
    params: CallToolRequestParams,
    feedback: Arc<dyn Feedback>,
    server: &str,
) -> Result<CallToolResponse, ServiceError> {
    let mut response =
        crate::tools::passthrough::call_tool(peer, routes, params.clone(), feedback.clone())
            .await?;
    for _ in 0..MAX_ROUNDS {
        let CallToolResponse::InputRequired(asked) = &response else {
            return Ok(response);
        };
        let mut answers = InputResponses::new();
        for (key, request) in asked.input_requests.clone().unwrap_or_default() {
            let request = serde_json::to_value(&request).unwrap_or_default();
            let method = request["method"].as_str().unwrap_or_default().to_string();
            let question = request.get("params").cloned().unwrap_or_default();
            let forward = match method.as_str() {
                "elicitation/create" => Forward::Elicit(question),
                "sampling/createMessage" => Forward::Sample(question),
                other => {
                    return Ok(refused(format!(
                        "{server} asked for {other:?} input, which the gateway does not provide"
                    )))
                }
            };
            match feedback.forward(server, forward).await {
                Ok(answer) => answers.insert(key, answer),
                Err(why) => {
                    return Ok(refused(format!(
                        "{server} asked its user a question ({method}) that could not be answered: {why}"
                    )))
                }
            };
        }
        let mut retry = params.clone().with_input_responses(answers);
        if let Some(state) = &asked.request_state {
            retry = retry.with_request_state(state.clone());
        }
        response =
            crate::tools::passthrough::call_tool(peer, routes, retry, feedback.clone()).await?;
    }
    Ok(match response {
        CallToolResponse::InputRequired(_) => refused(format!(
            "{server} still asked for input after {MAX_ROUNDS} rounds; the call was given up"
        )),
        other => other,
    })
}

/// The call's failure: a tool error with `why`.
fn refused(why: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![
        rmcp::model::ContentBlock::text(why),
    ]))
}
