//! Pending approvals on PostgreSQL (see `store::approvals`). A gateway's step is one
//! transaction: its new questions inserted, then one `DELETE … RETURNING` takes away its rows
//! that are answered or no longer in its registry. An answer is one `UPDATE … WHERE answer IS
//! NULL`: of two answers at once, the row lock lets one write and the other find it answered.

use super::super::approvals::{PendingQuestion, StoredAnswer, COLUMNS, MAX_LISTED};
use super::super::StoreError;
use super::Pg;

fn question(r: &tokio_postgres::Row, at: usize) -> PendingQuestion {
    PendingQuestion {
        id: r.get(at),
        tenant: r.get(at + 1),
        principal: r.get(at + 2),
        execution_id: r.get(at + 3),
        tool: r.get(at + 4),
        rule: r.get(at + 5),
        arguments: r.get(at + 6),
        arguments_bytes: r.get::<_, i64>(at + 7).max(0) as usize,
        truncated: r.get(at + 8),
        asked_at: r.get(at + 9),
    }
}

impl Pg {
    pub fn sync_approvals(
        &self,
        gateway: &str,
        new: &[PendingQuestion],
        live: &[String],
    ) -> Result<Vec<StoredAnswer>, StoreError> {
        self.write(async |tx| {
            for q in new {
                let bytes = super::big(q.arguments_bytes as u64);
                tx.execute(
                    &format!(
                        "INSERT INTO pending_approvals (gateway, {COLUMNS})
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                         ON CONFLICT (id) DO NOTHING"
                    ),
                    &[
                        &gateway,
                        &q.id,
                        &q.tenant,
                        &q.principal,
                        &q.execution_id,
                        &q.tool,
                        &q.rule,
                        &q.arguments,
                        &bytes,
                        &q.truncated,
                        &q.asked_at,
                    ],
                )
                .await?;
            }
            let gone = tx
                .query(
                    "DELETE FROM pending_approvals
                     WHERE gateway = $1 AND (answer IS NOT NULL OR NOT (id = ANY($2)))
                     RETURNING id, answer, reason, answered_by",
                    &[&gateway, &live],
                )
                .await?;
            Ok(gone
                .iter()
                .filter_map(|r| {
                    let id: String = r.get(0);
                    let decision: Option<String> = r.get(1);
                    let decision = decision.filter(|_| live.contains(&id))?;
                    Some(StoredAnswer {
                        id,
                        decision,
                        reason: r.get(2),
                        by: r.get::<_, Option<String>>(3).unwrap_or_default(),
                    })
                })
                .collect())
        })
    }

    pub fn list_approvals(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<(String, PendingQuestion)>, StoreError> {
        self.read(async |c| {
            Ok(c.query(
                &format!(
                    "SELECT gateway, {COLUMNS} FROM pending_approvals
                     WHERE answer IS NULL AND ($1::TEXT IS NULL OR tenant = $1)
                     ORDER BY asked_at, id LIMIT $2"
                ),
                &[&tenant, &MAX_LISTED],
            )
            .await?
            .iter()
            .map(|r| (r.get(0), question(r, 1)))
            .collect())
        })
    }

    pub fn find_approval(&self, id: &str) -> Result<Option<(String, PendingQuestion)>, StoreError> {
        self.read(async |c| {
            Ok(c.query_opt(
                &format!(
                    "SELECT gateway, {COLUMNS} FROM pending_approvals
                     WHERE id = $1 AND answer IS NULL"
                ),
                &[&id],
            )
            .await?
            .map(|r| (r.get(0), question(&r, 1))))
        })
    }

    pub fn answer_approval(
        &self,
        a: &StoredAnswer,
        reason: &Option<String>,
    ) -> Result<bool, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "UPDATE pending_approvals SET answer = $2, reason = $3, answered_by = $4
                     WHERE id = $1 AND answer IS NULL",
                    &[&a.id, &a.decision, reason, &a.by],
                )
                .await?
                > 0)
        })
    }

    pub fn approval_gateways(&self) -> Result<Vec<String>, StoreError> {
        self.read(async |c| {
            Ok(
                c.query("SELECT DISTINCT gateway FROM pending_approvals", &[])
                    .await?
                    .iter()
                    .map(|r| r.get(0))
                    .collect(),
            )
        })
    }

    pub fn forget_approvals(&self, gateway: &str) -> Result<u64, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "DELETE FROM pending_approvals WHERE gateway = $1",
                    &[&gateway],
                )
                .await?)
        })
    }
}
