//! Yielded executions on PostgreSQL (see `store::yielded`). A read locks the row
//! (`SELECT … FOR UPDATE`) and deletes it in the same transaction when it holds the outcome,
//! so of two gateways taking it at once, one gets it and the other finds nothing.

use super::super::session_state::StoredValue;
use super::super::yielded::{outcome_of, Look};
use super::super::StoreError;
use super::Pg;
use crate::context::session::SessionScope;

impl Pg {
    pub fn record_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        gateway: &str,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        let key = scope.key();
        self.write(async |tx| {
            tx.execute(
                "INSERT INTO yielded_executions (id, scope, gateway, started_at, updated_at)
                 VALUES ($1, $2, $3, $4, $4)",
                &[&id, &key, &gateway, &now_ms],
            )
            .await?;
            Ok(())
        })
    }

    pub fn finish_yield(
        &self,
        id: &str,
        gateway: &str,
        outcome: &StoredValue,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        let (text, nonce, sealed) = outcome.columns();
        let bytes = super::big(outcome.bytes());
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "UPDATE yielded_executions SET outcome = $3, outcome_nonce = $4,
                        outcome_sealed = $5, outcome_bytes = $6, updated_at = $7
                     WHERE id = $1 AND gateway = $2 AND outcome_bytes IS NULL",
                    &[&id, &gateway, &text, &nonce, &sealed, &bytes, &now_ms],
                )
                .await?
                > 0)
        })
    }

    pub fn take_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
    ) -> Result<Look, StoreError> {
        self.look_yield(scope, id, now_ms, false)
    }

    pub fn request_cancel(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
    ) -> Result<Look, StoreError> {
        self.look_yield(scope, id, now_ms, true)
    }

    async fn row(
        tx: &super::Transaction<'_>,
        key: &str,
        id: &str,
    ) -> Result<Option<(String, f64, f64, Option<StoredValue>)>, StoreError> {
        Ok(tx
            .query_opt(
                "SELECT gateway, started_at, updated_at, outcome, outcome_nonce, outcome_sealed,
                    outcome_bytes
                 FROM yielded_executions WHERE id = $1 AND scope = $2 FOR UPDATE",
                &[&id, &key],
            )
            .await?
            .map(|r| {
                (
                    r.get(0),
                    r.get(1),
                    r.get(2),
                    outcome_of(r.get(3), r.get(4), r.get(5), r.get(6)),
                )
            }))
    }

    fn look_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
        cancel: bool,
    ) -> Result<Look, StoreError> {
        let key = scope.key();
        self.write(async |tx| {
            let Some((gateway, started_at, updated_at, outcome)) = Self::row(tx, &key, id).await?
            else {
                return Ok(Look::Unknown);
            };
            match &outcome {
                Some(_) if !cancel => {
                    tx.execute("DELETE FROM yielded_executions WHERE id = $1", &[&id])
                        .await?;
                }
                Some(_) => {}
                None => {
                    tx.execute(
                        "UPDATE yielded_executions SET updated_at = $2,
                            cancel_requested = cancel_requested OR $3 WHERE id = $1",
                        &[&id, &now_ms, &cancel],
                    )
                    .await?;
                }
            }
            Ok(Look::of(gateway, started_at, updated_at, outcome))
        })
    }

    pub fn forget_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        gateway: &str,
    ) -> Result<bool, StoreError> {
        let key = scope.key();
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "DELETE FROM yielded_executions
                     WHERE id = $1 AND scope = $2 AND gateway = $3 AND outcome_bytes IS NULL",
                    &[&id, &key, &gateway],
                )
                .await?
                > 0)
        })
    }

    pub fn delete_yield(&self, id: &str) -> Result<bool, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute("DELETE FROM yielded_executions WHERE id = $1", &[&id])
                .await?
                > 0)
        })
    }

    pub fn cancel_requests(&self, gateway: &str) -> Result<Vec<String>, StoreError> {
        self.read(async |c| {
            Ok(c.query(
                "SELECT id FROM yielded_executions
                 WHERE gateway = $1 AND cancel_requested AND outcome_bytes IS NULL",
                &[&gateway],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }

    pub fn sweep_yields(&self, cutoff: f64) -> Result<u64, StoreError> {
        self.write(async |tx| {
            Ok(tx
                .execute(
                    "DELETE FROM yielded_executions WHERE updated_at < $1",
                    &[&cutoff],
                )
                .await?)
        })
    }
}
