//! The sessions of session handles on PostgreSQL (see `store::session_handles`).

use super::super::session_state::labels_of;
use super::super::StoreError;
use super::Pg;
use crate::context::flow::LabelSource;
use crate::context::session::{SessionOptions, SessionScope};

impl Pg {
    pub fn open_handle_session(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<u64, StoreError> {
        let key = scope.key();
        let prefix = super::super::session_handles::handle_prefix(scope, &key).to_string();
        let live_since = now_ms - options.ttl_ms as f64;
        let max = options.max_handles;
        self.write(async |tx| {
            let live = tx
                .query(
                    "SELECT scope FROM state_sessions
                     WHERE left(scope, length($1)) = $1 AND used_at >= $2 AND scope <> $3
                     ORDER BY used_at ASC FOR UPDATE",
                    &[&prefix, &live_since, &key],
                )
                .await?;
            let over = (live.len() as u64 + 1).saturating_sub(max);
            for row in live.iter().take(over as usize) {
                let old: String = row.get(0);
                tx.execute("DELETE FROM state_values WHERE scope = $1", &[&old])
                    .await?;
                tx.execute("DELETE FROM state_sessions WHERE scope = $1", &[&old])
                    .await?;
            }
            tx.execute(
                "INSERT INTO state_sessions (scope, tenant, used_at) VALUES ($1, $2, $3)
                 ON CONFLICT (scope) DO UPDATE SET used_at = excluded.used_at",
                &[&key, &scope.tenant, &now_ms],
            )
            .await?;
            Ok(over)
        })
    }

    pub fn resume_handle_session(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        let key = scope.key();
        let oldest = now_ms - options.ttl_ms as f64;
        self.write(async |tx| {
            let n = tx
                .execute(
                    "UPDATE state_sessions SET used_at = GREATEST(used_at, $2)
                     WHERE scope = $1 AND used_at >= $3",
                    &[&key, &now_ms, &oldest],
                )
                .await?;
            Ok(n > 0)
        })
    }

    pub fn clear_session_labels(&self, scope: &SessionScope) -> Result<bool, StoreError> {
        let key = scope.key();
        self.write(async |tx| {
            let n = tx
                .execute(
                    "UPDATE state_sessions SET labels = '[]' WHERE scope = $1 AND labels <> '[]'",
                    &[&key],
                )
                .await?;
            Ok(n > 0)
        })
    }

    pub fn live_session_labels(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Vec<LabelSource>, StoreError> {
        let key = scope.key();
        let oldest = now_ms - options.ttl_ms as f64;
        self.read(async |c| {
            Ok(c.query_opt(
                "SELECT labels FROM state_sessions WHERE scope = $1 AND used_at >= $2",
                &[&key, &oldest],
            )
            .await?
            .map(|r| labels_of(r.get(0)))
            .unwrap_or_default())
        })
    }
}
