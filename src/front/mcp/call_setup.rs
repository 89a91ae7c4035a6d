//! What a `tools/call` sets up before its execution runs: the admission of an `execute_code`
//! call (its arguments checked, its caller's fair share counted, a refusal audited) and who may
//! answer the questions it asks (its client, the web view, neither).

use super::*;

impl GatewayServer {
    /// Checks an `execute_code` call's arguments (`Err`: the protocol error) and counts it in
    /// its caller's fair share (`Ok(Err)`: the refusal to answer, audited).
    pub(super) async fn admit_execution(
        &self,
        context: &RequestContext<RoleServer>,
        principal: &Principal,
        args: &JsonObject,
    ) -> Result<Result<Arc<crate::exec::fair_share::Admitted>, CallToolResult>, ErrorData> {
        let parsed = execute_code::parse(args)?;
        let over_http = context
            .extensions
            .get::<axum::http::request::Parts>()
            .is_some();
        let caller = caller_of(context, over_http, principal);
        let caps = self
            .gateway
            .fair_share
            .caps_of(principal, &self.gateway.policies);
        match self.gateway.sandbox.admit(&caller, caps) {
            Ok(admitted) => Ok(Ok(admitted)),
            Err(e) => {
                let outcome = crate::exec::outcome::Outcome::failed(e);
                let code = parsed.code();
                let outcome = self
                    .gateway
                    .sandbox
                    .audit_refusal(Some(caller), code, outcome)
                    .await;
                let error = outcome.error.unwrap_or_else(|| {
                    crate::error::ExecError::new(
                        crate::error::ErrorCode::LimitExceeded,
                        "fair share: refused",
                    )
                });
                Ok(Err(execute_code::refused(error)))
            }
        }
    }

    /// Who answers this request's questions: the client (an elicitation request, or for a
    /// 2026-07-28 client `input_required` through `questions`), and over HTTP the web view too
    /// when it can answer ([`web_approval`]); the first answer wins.
    pub(super) fn approvals(
        &self,
        context: &RequestContext<RoleServer>,
        over_http: bool,
        principal: &Principal,
        questions: Option<Arc<input_required::QuestionSlot>>,
    ) -> crate::gate::approval::Approvals {
        let (pre, timeout) = (
            self.gateway.pre_approved.clone(),
            self.gateway.approval_timeout,
        );
        let modern = speaks_2026(context);
        let own = !crate::config::gateway::refuses_own_approvals(principal, &self.gateway.policies);
        let client: Option<Arc<dyn crate::gate::approval::Approver>> = match questions {
            Some(slot) if own => Some(Arc::new(input_required::Asker::new(slot))),
            Some(_) => None,
            None if own && !modern && declares_elicitation(context) => {
                Some(elicit::client_approver(&context.peer))
            }
            None => None,
        };
        let page = over_http && self.gateway.web_approvals;
        // A 2026-07-28 client's answer comes through the question's registration.
        if !(page || modern && client.is_some()) {
            return elicit::approvals(client, pre, timeout, modern);
        }
        let page = web_approval::PageOrClient {
            client,
            pending: self.gateway.pending.clone(),
            asker: crate::gate::pending::Asker {
                tenant: principal.tenant.clone(),
                principal: principal.name.clone(),
            },
        };
        crate::gate::approval::Approvals::new(Arc::new(page), pre, timeout)
    }
}
