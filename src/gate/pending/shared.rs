//! Pending questions shared through the state store (`store::approvals`), so the web view of
//! any gateway sharing it lists and answers the questions of every live gateway. Used on
//! PostgreSQL only: on SQLite one gateway uses the file, so nobody else could list or answer,
//! and the registry alone is the whole truth (no store writes while questions wait).
//!
//! The owning gateway brings its rows in line with its registry ([`PendingApprovals::sync`]: new
//! questions added, those gone deleted, answers written through other gateways taken and their
//! calls woken as a page answer does, `By::Web` with the approving principal). The gateway runs
//! it every 100 ms while it has questions, and at once when one is asked or leaves
//! (`front::mcp::approvals_sync`). A poll, not LISTEN/NOTIFY: it needs no connection held per
//! gateway and no reconnect logic, costs one statement per step while questions wait (none
//! otherwise), and 100 ms is well within what a person answering notices.
//!
//! Answers ([`PendingApprovals::answer_anywhere`]): the first answer wins, whichever gateway's
//! page it comes through. A question of this gateway that is in the store is answered there
//! first (`UPDATE … WHERE answer IS NULL`), then woken at once; one answered already through
//! another gateway is `NotFound` (that answer wakes the call). Another gateway's question is
//! answered only in the store, after the same checks, when its gateway is alive.

use super::{AnswerError, PendingApprovals, PendingQuestion, WebAnswer};
use crate::gate::approval::Answer;
use crate::store::approvals::StoredAnswer;
use crate::store::{Store, StoreError};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where the questions are shared: the store and this gateway's id.
pub(super) struct Shared {
    store: Store,
    gateway: String,
}

/// `web`'s answer to question `id` as the store keeps it.
fn stored(id: &str, web: &WebAnswer) -> StoredAnswer {
    let (decision, reason) = match &web.answer {
        Answer::Once => ("approve", None),
        Answer::ToolForExecution => ("approve_for_execution", None),
        Answer::Deny(reason) => ("deny", reason.clone()),
    };
    StoredAnswer {
        id: id.to_string(),
        decision: decision.into(),
        reason,
        by: super::cut(&web.principal),
    }
}

/// An answer read from the store (an unknown decision, from a newer build, denies).
fn web(a: StoredAnswer) -> WebAnswer {
    let answer = match a.decision.as_str() {
        "approve" => Answer::Once,
        "approve_for_execution" => Answer::ToolForExecution,
        "deny" => Answer::Deny(a.reason),
        other => Answer::Deny(Some(format!("unknown answer {other:?}"))),
    };
    // The way is not kept in the row: an answer through another gateway shows as the web view's.
    WebAnswer {
        answer,
        principal: a.by,
        by: crate::gate::approval::By::Web,
    }
}

fn store_failed(e: StoreError) -> AnswerError {
    AnswerError::Store(e.to_string())
}

impl PendingApprovals {
    /// A registry whose questions are kept in `store` for every gateway's web view; `gateway`
    /// is this process's gateway id.
    pub fn shared(store: Store, gateway: String) -> Self {
        PendingApprovals {
            shared: Some(Shared { store, gateway }),
            ..Default::default()
        }
    }

    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Wakes when a question was asked or left.
    pub fn changed(&self) -> &tokio::sync::Notify {
        &self.changed
    }

    /// Whether the store's rows may be behind the registry (questions wait, or one left).
    pub fn needs_sync(&self) -> bool {
        self.shared.is_some() && (!self.is_empty() || self.stale.load(Ordering::SeqCst))
    }

    /// One step of the owning gateway: the store's rows brought in line with the registry, the
    /// answers written through other gateways delivered. How many it delivered.
    pub async fn sync(&self) -> Result<usize, StoreError> {
        let Some(sh) = &self.shared else {
            return Ok(0);
        };
        self.stale.store(false, Ordering::SeqCst);
        let (new, live) = match self.entries.lock() {
            Ok(e) => (
                e.values()
                    .filter(|x| !x.kept)
                    .map(|x| (*x.question).clone())
                    .collect::<Vec<_>>(),
                e.keys().cloned().collect::<Vec<_>>(),
            ),
            Err(_) => return Ok(0),
        };
        let added: Vec<String> = new.iter().map(|q| q.id.clone()).collect();
        let gateway = sh.gateway.clone();
        let answers = match sh
            .store
            .run(move |s| s.sync_approvals(&gateway, &new, &live))
            .await
        {
            Ok(a) => a,
            Err(e) => {
                self.stale.store(true, Ordering::SeqCst);
                return Err(e);
            }
        };
        if let Ok(mut e) = self.entries.lock() {
            for id in &added {
                if let Some(x) = e.get_mut(id) {
                    x.kept = true;
                }
            }
        }
        let mut delivered = 0;
        for a in answers {
            let id = a.id.clone();
            if self.deliver(&id, web(a)) {
                delivered += 1;
            }
        }
        Ok(delivered)
    }

    /// Wakes question `id`'s call with `answer`; `false` when it is gone.
    fn deliver(&self, id: &str, answer: WebAnswer) -> bool {
        let entry = match self.entries.lock() {
            Ok(mut e) => e.remove(id),
            Err(_) => None,
        };
        let Some(entry) = entry else {
            return false;
        };
        self.left();
        entry.reply.send(answer).is_ok()
    }

    /// The questions the web view lists: this gateway's and, when shared, those of the other
    /// live gateways (of `tenant` only, when given), that `visible` lets through, oldest first.
    /// When the store fails, this gateway's only (logged).
    pub async fn list_anywhere(
        &self,
        tenant: Option<String>,
        visible: impl Fn(&PendingQuestion) -> bool,
    ) -> Vec<PendingQuestion> {
        let mut out = self.list(&visible);
        let Some(sh) = &self.shared else {
            return out;
        };
        let me = sh.gateway.clone();
        match sh
            .store
            .run(move |s| s.list_approvals(tenant.as_deref(), &me))
            .await
        {
            Ok(rows) => out.extend(
                rows.into_iter()
                    .filter(|(g, q)| *g != sh.gateway && visible(q))
                    .map(|(_, q)| q),
            ),
            Err(e) => tracing::warn!(
                "web view: the questions of other gateways could not be read from the state store: {e}"
            ),
        }
        out.sort_by(|a, b| a.asked_at.total_cmp(&b.asked_at));
        out
    }

    /// Answers question `id` — this gateway's or, when shared, another live gateway's — when
    /// `allowed` says the caller may. The first answer wins (a second is `NotFound`).
    pub async fn answer_anywhere(
        &self,
        id: &str,
        allowed: impl Fn(&PendingQuestion) -> Result<(), AnswerError>,
        answer: WebAnswer,
    ) -> Result<Arc<PendingQuestion>, AnswerError> {
        let Some(sh) = &self.shared else {
            return self.answer(id, allowed, answer);
        };
        let not_found = || AnswerError::NotFound(super::cut(id));
        let mine = match self.entries.lock() {
            Ok(e) => e.get(id).map(|x| (x.question.clone(), x.kept)),
            Err(_) => None,
        };
        let row = stored(id, &answer);
        if let Some((question, kept)) = mine {
            allowed(&question)?;
            if kept {
                match sh.store.run(move |s| s.answer_approval(&row)).await {
                    Ok(true) => {
                        // Won: wake the call now (the next sync deletes the row).
                        self.deliver(id, answer);
                        return Ok(question);
                    }
                    // Answered through another gateway just before: that answer wakes it.
                    Ok(false) => return Err(not_found()),
                    Err(e) => tracing::warn!(
                        "approval {id}: the state store failed ({e}); answered on this gateway only"
                    ),
                }
            }
            return self.answer(id, allowed, answer);
        }
        let key = id.to_string();
        let found = sh
            .store
            .run(move |s| s.find_approval(&key))
            .await
            .map_err(store_failed)?;
        // Not in the store, or this gateway's but no longer waiting.
        let (gateway, question) = found
            .filter(|(g, _)| *g != sh.gateway)
            .ok_or_else(not_found)?;
        let (g, me) = (gateway.clone(), sh.gateway.clone());
        let alive = sh
            .store
            .run(move |s| s.gateway_alive(&g, &me))
            .await
            .map_err(store_failed)?;
        if !alive {
            return Err(not_found());
        }
        allowed(&question)?;
        if !sh
            .store
            .run(move |s| s.answer_approval(&row))
            .await
            .map_err(store_failed)?
        {
            return Err(not_found());
        }
        tracing::info!(
            "approval {id} of gateway {gateway} answered through this gateway's web view"
        );
        Ok(Arc::new(question))
    }

    /// Deletes the rows of gateways that `stopped` judges stopped (asked with whether each is
    /// alive now); how many rows.
    pub async fn sweep(&self, stopped: impl Fn(&str, bool) -> bool) -> Result<u64, StoreError> {
        let Some(sh) = &self.shared else {
            return Ok(0);
        };
        let gateways = sh.store.run(|s| s.approval_gateways()).await?;
        let mut swept = 0;
        for g in gateways.into_iter().filter(|g| *g != sh.gateway) {
            let (id, me) = (g.clone(), sh.gateway.clone());
            let alive = sh.store.run(move |s| s.gateway_alive(&id, &me)).await?;
            if stopped(&g, alive) {
                swept += sh.store.run(move |s| s.forget_approvals(&g)).await?;
            }
        }
        Ok(swept)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Asker, Ticket};
    use super::*;
    use crate::gate::approval::Question;
    use serde_json::json;

    fn ask(reg: &Arc<PendingApprovals>, message: &str) -> Ticket {
        let asker = Asker {
            tenant: "red".into(),
            principal: "token:alice".into(),
        };
        let q = Question::new("fixture", "echo", &json!({ "message": message }), "rule");
        reg.register(&asker, &q).unwrap()
    }

    fn by(principal: &str, answer: Answer) -> WebAnswer {
        WebAnswer {
            answer,
            principal: principal.into(),
            by: crate::gate::approval::By::Web,
        }
    }

    /// The owning gateway's side, on a SQLite store (the code is the same on both backends):
    /// questions kept and removed with the registry, an answer written by another gateway
    /// delivered with its principal and reason, and this gateway's page losing to it.
    #[tokio::test]
    async fn rows_follow_the_registry_and_answers_from_elsewhere_wake_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let reg = Arc::new(PendingApprovals::shared(store.clone(), "ga".into()));
        let rows = |s: &Store| s.list_approvals(None, "ga").unwrap().len();
        assert!(!reg.needs_sync());
        let mut t1 = ask(&reg, "one");
        let t2 = ask(&reg, "two");
        assert!(reg.needs_sync());
        assert_eq!(reg.sync().await.unwrap(), 0);
        assert_eq!(rows(&store), 2);
        // Another gateway denies t1 with a reason: delivered at the next step, row gone.
        let elsewhere = stored(t1.id(), &by("token:bob", Answer::Deny(Some("no".into()))));
        assert!(store.answer_approval(&elsewhere).unwrap());
        assert_eq!(reg.sync().await.unwrap(), 1);
        let got = t1.answer().await;
        assert_eq!(got.principal, "token:bob");
        assert!(matches!(got.answer, Answer::Deny(Some(ref r)) if r == "no"));
        drop(t1);
        reg.sync().await.unwrap();
        assert_eq!(rows(&store), 1);
        // Answered through another gateway first: this gateway's page answer is refused.
        let id = t2.id().to_string();
        assert!(store
            .answer_approval(&stored(&id, &by("token:ops", Answer::Once)))
            .unwrap());
        let page = reg
            .answer_anywhere(&id, |_| Ok(()), by("token:carl", Answer::Once))
            .await;
        assert_eq!(page.unwrap_err(), AnswerError::NotFound(id.clone()));
        // Gone from the registry (its wait ended): the row goes at the next step.
        drop(t2);
        assert!(reg.needs_sync());
        reg.sync().await.unwrap();
        assert_eq!(store.approval_gateways().unwrap().len(), 0);
        assert!(!reg.needs_sync());
        // A page answer to a kept question claims the row and wakes the call at once.
        let mut t3 = ask(&reg, "three");
        reg.sync().await.unwrap();
        let id = t3.id().to_string();
        let q = reg
            .answer_anywhere(&id, |_| Ok(()), by("token:bob", Answer::Once))
            .await
            .unwrap();
        assert_eq!(q.tool, "fixture:echo");
        assert_eq!(t3.answer().await.principal, "token:bob");
        assert!(!store
            .answer_approval(&stored(&id, &by("token:ops", Answer::Once)))
            .unwrap());
        // Unknown ids, and this gateway's own rows once gone, are not found.
        let none = reg
            .answer_anywhere("nope", |_| Ok(()), by("token:bob", Answer::Once))
            .await;
        assert_eq!(none.unwrap_err(), AnswerError::NotFound("nope".into()));
    }
}
