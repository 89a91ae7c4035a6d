//! Pending approvals in the store (`gate::pending`), so the web view of any gateway sharing the
//! store lists and answers the questions every live gateway's executions ask.
//!
//! One row per question waiting on a gateway's web view: what the page shows of it, the gateway
//! whose execution asks it, and — once someone answered it through any gateway — the answer, the
//! optional reason and who gave it. The owning gateway writes and deletes its rows in one
//! transaction per step ([`Store::sync_approvals`]): new questions added, questions gone from
//! its registry deleted, answered ones deleted and handed back to it. The first answer wins:
//! [`Store::answer_approval`] writes only into a row without one.
//!
//! Bounded: at most [`MAX_ROWS_PER_GATEWAY`] rows per gateway (its registry's bound), fields as
//! the registry cut them, the reason cut to [`MAX_REASON_BYTES`], at most [`MAX_LISTED`] rows
//! listed at once.

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

/// Rows one gateway keeps at most (`gate::pending::MAX_PENDING`).
pub const MAX_ROWS_PER_GATEWAY: usize = 256;
/// A denial's reason is cut past this many bytes (the script's error shows fewer).
pub const MAX_REASON_BYTES: usize = 1024;
/// Rows one listing reads at most (every gateway's, of one tenant or all).
pub const MAX_LISTED: i64 = 4096;

/// One waiting question as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingQuestion {
    /// Random, unguessable; the page answers by it.
    pub id: String,
    pub tenant: String,
    /// The principal whose execution made the call.
    pub principal: String,
    pub execution_id: Option<String>,
    /// `server:tool`.
    pub tool: String,
    pub rule: String,
    /// The same bounded text the elicitation shows (placeholders where secrets are kept from
    /// the model).
    pub arguments: String,
    pub arguments_bytes: usize,
    pub truncated: bool,
    /// Milliseconds since the Unix epoch.
    pub asked_at: f64,
}

/// An answer written through some gateway, for question `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    pub id: String,
    /// `approve`, `approve_for_execution` or `deny`.
    pub decision: String,
    pub reason: Option<String>,
    /// The principal who answered.
    pub by: String,
}

/// The columns of a question, in this order, for both backends.
pub(super) const COLUMNS: &str = "id, tenant, principal, execution_id, tool, rule, arguments, \
     arguments_bytes, truncated, asked_at";

/// `reason` cut to [`MAX_REASON_BYTES`] (at a character boundary).
pub(super) fn cut_reason(reason: &Option<String>) -> Option<String> {
    reason.as_ref().map(|r| {
        let mut end = r.len().min(MAX_REASON_BYTES);
        while !r.is_char_boundary(end) {
            end -= 1;
        }
        r[..end].to_string()
    })
}

/// Refuses a registry larger than a gateway may keep.
pub(super) fn check_live(live: &[String]) -> Result<(), StoreError> {
    if live.len() > MAX_ROWS_PER_GATEWAY {
        return Err(StoreError::QuotaExceeded(format!(
            "{} pending approvals; the store keeps at most {MAX_ROWS_PER_GATEWAY} per gateway",
            live.len()
        )));
    }
    Ok(())
}

/// A row's `id, answer, reason, answered_by`.
type AnswerColumns = (String, Option<String>, Option<String>, Option<String>);

fn sqlite_question(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<PendingQuestion> {
    Ok(PendingQuestion {
        id: r.get(at)?,
        tenant: r.get(at + 1)?,
        principal: r.get(at + 2)?,
        execution_id: r.get(at + 3)?,
        tool: r.get(at + 4)?,
        rule: r.get(at + 5)?,
        arguments: r.get(at + 6)?,
        arguments_bytes: r.get::<_, i64>(at + 7)?.max(0) as usize,
        truncated: r.get(at + 8)?,
        asked_at: r.get(at + 9)?,
    })
}

impl Store {
    /// Brings `gateway`'s rows in line with its registry: `new` questions are added, every row
    /// of `gateway` whose id is not in `live` is deleted (answered on its page, timed out, its
    /// execution ended), and the rows of `live` answered through any gateway are deleted and
    /// returned (the gateway wakes their calls). At most [`MAX_ROWS_PER_GATEWAY`] live ids.
    pub fn sync_approvals(
        &self,
        gateway: &str,
        new: &[PendingQuestion],
        live: &[String],
    ) -> Result<Vec<StoredAnswer>, StoreError> {
        check_live(live)?;
        if let Some(pg) = self.pg() {
            return pg.sync_approvals(gateway, new, live);
        }
        self.write(|tx| {
            for q in new {
                tx.execute(
                    &format!(
                        "INSERT OR IGNORE INTO pending_approvals (gateway, {COLUMNS})
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
                    ),
                    params![
                        gateway,
                        q.id,
                        q.tenant,
                        q.principal,
                        q.execution_id,
                        q.tool,
                        q.rule,
                        q.arguments,
                        q.arguments_bytes as i64,
                        q.truncated,
                        q.asked_at
                    ],
                )?;
            }
            let rows: Vec<AnswerColumns> = tx
                .prepare_cached(
                    "SELECT id, answer, reason, answered_by FROM pending_approvals
                     WHERE gateway = ?1",
                )?
                .query_map(params![gateway], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<Result<_, _>>()?;
            let mut answers = Vec::new();
            for (id, answer, reason, by) in rows {
                let is_live = live.contains(&id);
                if answer.is_none() && is_live {
                    continue;
                }
                tx.execute("DELETE FROM pending_approvals WHERE id = ?1", params![id])?;
                if let (true, Some(decision)) = (is_live, answer) {
                    answers.push(StoredAnswer {
                        id,
                        decision,
                        reason,
                        by: by.unwrap_or_default(),
                    });
                }
            }
            Ok(answers)
        })
    }

    /// The unanswered questions of every live gateway (as `mine` judges: [`Store::gateway_alive`];
    /// a stopped gateway's rows are left out), each with its gateway's id, oldest first; of
    /// `tenant` only when given. At most [`MAX_LISTED`] rows are read.
    pub fn list_approvals(
        &self,
        tenant: Option<&str>,
        mine: &str,
    ) -> Result<Vec<(String, PendingQuestion)>, StoreError> {
        let rows = match self.pg() {
            Some(pg) => pg.list_approvals(tenant)?,
            None => self.with(|c| {
                let mut stmt = c.prepare_cached(&format!(
                    "SELECT gateway, {COLUMNS} FROM pending_approvals
                     WHERE answer IS NULL AND (?1 IS NULL OR tenant = ?1)
                     ORDER BY asked_at, id LIMIT ?2"
                ))?;
                let rows = stmt.query_map(params![tenant, MAX_LISTED], |r| {
                    Ok((r.get(0)?, sqlite_question(r, 1)?))
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })?,
        };
        let mut alive = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(rows.len());
        for (gateway, q) in rows {
            let is = match alive.get(&gateway) {
                Some(a) => *a,
                None => {
                    let a = self.gateway_alive(&gateway, mine)?;
                    alive.insert(gateway.clone(), a);
                    a
                }
            };
            if is {
                out.push((gateway, q));
            }
        }
        Ok(out)
    }

    /// The unanswered question `id` and the id of the gateway whose execution asks it.
    pub fn find_approval(&self, id: &str) -> Result<Option<(String, PendingQuestion)>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.find_approval(id);
        }
        self.with(|c| {
            Ok(c.prepare_cached(&format!(
                "SELECT gateway, {COLUMNS} FROM pending_approvals
                 WHERE id = ?1 AND answer IS NULL"
            ))?
            .query_row(params![id], |r| Ok((r.get(0)?, sqlite_question(r, 1)?)))
            .optional()?)
        })
    }

    /// Writes `a` into its question's row if nobody answered it yet: whether it did (the first
    /// answer wins; `false` when it was answered already or is gone).
    pub fn answer_approval(&self, a: &StoredAnswer) -> Result<bool, StoreError> {
        let reason = cut_reason(&a.reason);
        if let Some(pg) = self.pg() {
            return pg.answer_approval(a, &reason);
        }
        self.write(|tx| {
            Ok(tx.execute(
                "UPDATE pending_approvals SET answer = ?2, reason = ?3, answered_by = ?4
                 WHERE id = ?1 AND answer IS NULL",
                params![a.id, a.decision, reason, a.by],
            )? > 0)
        })
    }

    /// The gateways that have rows.
    pub fn approval_gateways(&self) -> Result<Vec<String>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.approval_gateways();
        }
        self.with(|c| {
            let mut stmt = c.prepare_cached("SELECT DISTINCT gateway FROM pending_approvals")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<String>, _>>()?)
        })
    }

    /// Deletes every row of `gateway` (it stopped); how many.
    pub fn forget_approvals(&self, gateway: &str) -> Result<u64, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.forget_approvals(gateway);
        }
        self.write(|tx| {
            Ok(tx.execute(
                "DELETE FROM pending_approvals WHERE gateway = ?1",
                params![gateway],
            )? as u64)
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn question(id: &str, tenant: &str, at: f64) -> PendingQuestion {
        PendingQuestion {
            id: id.into(),
            tenant: tenant.into(),
            principal: "token:alice".into(),
            execution_id: Some(format!("exec-{id}")),
            tool: "fixture:echo".into(),
            rule: "config rule ask".into(),
            arguments: "{\n  \"message\": \"hi\"\n}".into(),
            arguments_bytes: 20,
            truncated: false,
            asked_at: at,
        }
    }

    fn answer(id: &str, by: &str) -> StoredAnswer {
        StoredAnswer {
            id: id.into(),
            decision: "deny".into(),
            reason: Some("not today".into()),
            by: by.into(),
        }
    }

    fn ids(list: &[(String, PendingQuestion)]) -> Vec<(&str, &str)> {
        list.iter()
            .map(|(g, q)| (g.as_str(), q.id.as_str()))
            .collect()
    }

    /// Questions are kept per gateway, listed (per tenant, oldest first), answered once (a
    /// second answer is refused), handed back to their gateway once and removed; rows gone from
    /// the registry are removed; a stopped gateway's rows are forgotten; the bounds hold.
    pub(crate) fn kept_listed_answered_once(s: &Store) {
        let live = |ids: &[&str]| ids.iter().map(|i| i.to_string()).collect::<Vec<_>>();
        let (q1, q2, q3) = (
            question("q1", "red", 3.0),
            question("q2", "blue", 2.0),
            question("q3", "red", 1.0),
        );
        assert!(s
            .sync_approvals("ga", &[q1.clone(), q2.clone()], &live(&["q1", "q2"]))
            .unwrap()
            .is_empty());
        // Added again (the same id): left as it is.
        s.sync_approvals("ga", std::slice::from_ref(&q1), &live(&["q1", "q2"]))
            .unwrap();
        s.sync_approvals("gb", std::slice::from_ref(&q3), &live(&["q3"]))
            .unwrap();
        // A stopped gateway's rows are not listed (on SQLite every other gateway is stopped).
        assert_eq!(
            ids(&s.list_approvals(None, "ga").unwrap()),
            [("ga", "q2"), ("ga", "q1")]
        );
        assert_eq!(ids(&s.list_approvals(None, "gb").unwrap()), [("gb", "q3")]);
        assert_eq!(
            ids(&s.list_approvals(Some("red"), "ga").unwrap()),
            [("ga", "q1")]
        );
        assert_eq!(s.list_approvals(Some("red"), "ga").unwrap()[0].1, q1);
        // On PostgreSQL a gateway holding its liveness lock is listed to the others.
        if let Some(pg) = s.pg() {
            let held = pg.hold_liveness("gb").unwrap();
            assert_eq!(
                ids(&s.list_approvals(Some("red"), "ga").unwrap()),
                [("gb", "q3"), ("ga", "q1")]
            );
            drop(held);
            let since = std::time::Instant::now();
            while s.list_approvals(None, "ga").unwrap().len() != 2 {
                assert!(since.elapsed() < std::time::Duration::from_secs(2));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        assert_eq!(s.find_approval("q1").unwrap(), Some(("ga".into(), q1)));
        assert_eq!(s.find_approval("nope").unwrap(), None);

        // Answered once: the second answer is refused; no longer listed or found.
        let mut long = answer("q1", "token:bob");
        long.reason = Some("é".repeat(MAX_REASON_BYTES));
        assert!(s.answer_approval(&long).unwrap());
        assert!(!s.answer_approval(&answer("q1", "token:ops")).unwrap());
        assert!(!s.answer_approval(&answer("nope", "token:ops")).unwrap());
        assert_eq!(s.find_approval("q1").unwrap(), None);
        assert!(s.list_approvals(Some("red"), "ga").unwrap().is_empty());
        // Handed back to its gateway once, the reason cut; another gateway's sync leaves it.
        assert!(s
            .sync_approvals("gb", &[], &live(&["q3"]))
            .unwrap()
            .is_empty());
        let got = s.sync_approvals("ga", &[], &live(&["q1", "q2"])).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].id.as_str(), got[0].by.as_str()),
            ("q1", "token:bob")
        );
        assert_eq!(got[0].reason.as_ref().unwrap().len(), MAX_REASON_BYTES);
        assert!(s
            .sync_approvals("ga", &[], &live(&["q1", "q2"]))
            .unwrap()
            .is_empty());
        // Gone from the registry (timed out): removed, no longer answerable.
        s.sync_approvals("ga", &[], &[]).unwrap();
        assert!(s.list_approvals(None, "ga").unwrap().is_empty());
        assert_eq!(ids(&s.list_approvals(None, "gb").unwrap()), [("gb", "q3")]);
        assert!(!s.answer_approval(&answer("q2", "token:bob")).unwrap());
        assert_eq!(s.approval_gateways().unwrap(), ["gb"]);
        // A stopped gateway's rows are forgotten.
        assert_eq!(s.forget_approvals("gb").unwrap(), 1);
        assert!(s.list_approvals(None, "gb").unwrap().is_empty());
        assert!(s.approval_gateways().unwrap().is_empty());
        // Bounded per gateway.
        let many: Vec<String> = (0..=MAX_ROWS_PER_GATEWAY).map(|i| i.to_string()).collect();
        assert!(matches!(
            s.sync_approvals("ga", &[], &many),
            Err(StoreError::QuotaExceeded(_))
        ));
    }

    /// Two gateways answering the same question at once (separate handles): one wins.
    pub(crate) fn the_first_answer_wins(s: &Store) {
        for round in 0..10 {
            let id = format!("r{round}");
            s.sync_approvals(
                "ga",
                &[question(&id, "red", 1.0)],
                std::slice::from_ref(&id),
            )
            .unwrap();
            let won = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|scope| {
                for by in ["token:bob", "token:ops"] {
                    let (store, id, won) = (super::super::suites::reopen(s), &id, &won);
                    scope.spawn(move || {
                        if store.answer_approval(&answer(id, by)).unwrap() {
                            won.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    });
                }
            });
            assert_eq!(won.into_inner(), 1, "round {round}");
            let got = s
                .sync_approvals("ga", &[], std::slice::from_ref(&id))
                .unwrap();
            assert_eq!(got.len(), 1, "round {round}");
        }
        assert_eq!(
            super::super::suites::count(s, "SELECT COUNT(*) FROM pending_approvals"),
            0
        );
    }
}
