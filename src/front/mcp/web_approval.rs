//! `serve --http`'s approver when the web view can answer: each question is registered on the
//! page ([`crate::gate::pending`]) and, when the client declared elicitation, asked to the client
//! as well. The first answer wins; the other way is withdrawn (the registration removed, the
//! elicitation request cancelled at the client). An elicitation that fails is not an answer: the
//! page may still answer until the approval timeout.

use crate::gate::approval::{Answered, ApprovalError, Approver, By, Question};
use crate::gate::pending::{Asker, PendingApprovals};
use futures::future::BoxFuture;
use std::sync::Arc;

pub struct PageOrClient {
    /// The client, when it declared elicitation.
    pub client: Option<Arc<dyn Approver>>,
    pub pending: Arc<PendingApprovals>,
    /// The principal and tenant of the executions this approver serves.
    pub asker: Asker,
}

impl Approver for PageOrClient {
    fn by(&self) -> By {
        match &self.client {
            Some(c) => c.by(),
            None => By::Web,
        }
    }

    fn ask(
        &self,
        question: Question,
    ) -> BoxFuture<'static, Result<crate::gate::approval::Answer, ApprovalError>> {
        let asked = self.ask_answered(question);
        Box::pin(async move { asked.await.map(|a| a.answer) })
    }

    fn ask_answered(
        &self,
        question: Question,
    ) -> BoxFuture<'static, Result<Answered, ApprovalError>> {
        let ticket = self.pending.register(&self.asker, &question);
        // A 2026-07-28 client is answered through the registration: it needs its id.
        let mut question = question;
        question.pending_id = ticket.as_ref().ok().map(|t| t.id().to_string());
        let client = self.client.as_ref().map(|c| c.ask_answered(question));
        Box::pin(async move {
            let (mut ticket, client) = match (ticket, client) {
                (Ok(t), client) => (t, client),
                // The page is full: the client alone, if there is one.
                (Err(full), Some(client)) => {
                    tracing::warn!("web view: {full}; this question is asked to the client only");
                    return client.await;
                }
                (Err(full), None) => {
                    return Err(ApprovalError::Failed(format!(
                        "{full}; answer those first, or retry later"
                    )))
                }
            };
            let page = async {
                let a = ticket.answer().await;
                Answered {
                    answer: a.answer,
                    by: a.by,
                    principal: Some(a.principal),
                }
            };
            match client {
                None => Ok(page.await),
                Some(client) => {
                    tokio::pin!(page);
                    tokio::select! {
                        a = &mut page => Ok(a),
                        r = client => match r {
                            Ok(a) => Ok(a),
                            Err(ApprovalError::Failed(why)) => {
                                tracing::info!("the elicitation failed ({why}); the question waits on the web view");
                                Ok(page.await)
                            }
                        },
                    }
                }
            }
        })
    }
}
