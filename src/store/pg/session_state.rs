//! Session state on PostgreSQL (see `store::session_state`). Every operation first renews its
//! session's row, which locks it until the transaction ends: two gateways writing one session
//! at once take turns, so the quotas they check hold for both.

use super::super::session_state::{
    labels_of, labels_text, SealedMap, StateEntry, StateQuotaError, Stored, StoredValue,
};
use super::super::StoreError;
use super::{big, Pg, Transaction};
use crate::context::flow::LabelSource;
use crate::context::session::{SessionOptions, SessionScope};

async fn renew(
    tx: &Transaction<'_>,
    scope: &SessionScope,
    scope_key: &str,
    options: &SessionOptions,
    now_ms: f64,
) -> Result<(), StoreError> {
    let used_at: Option<f64> = tx
        .query_opt(
            "SELECT used_at FROM state_sessions WHERE scope = $1 FOR UPDATE",
            &[&scope_key],
        )
        .await?
        .map(|r| r.get(0));
    if used_at.is_some_and(|t| now_ms - t > options.ttl_ms as f64) {
        tx.execute("DELETE FROM state_values WHERE scope = $1", &[&scope_key])
            .await?;
        tx.execute(
            "UPDATE state_sessions SET placeholders_nonce = NULL, placeholders = NULL WHERE scope = $1",
            &[&scope_key],
        )
        .await?;
    }
    tx.execute(
        "INSERT INTO state_sessions (scope, tenant, used_at) VALUES ($1, $2, $3)
         ON CONFLICT (scope) DO UPDATE SET used_at = excluded.used_at",
        &[&scope_key, &scope.tenant, &now_ms],
    )
    .await?;
    Ok(())
}

impl Pg {
    pub fn store_state(
        &self,
        scope: &SessionScope,
        key: &str,
        value: &StoredValue,
        labels: &str,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Stored, StoreError> {
        let scope_key = scope.key();
        let bytes = value.bytes();
        let (text, nonce, sealed) = value.columns();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            let row = tx
                .query_one(
                    "SELECT count(*), coalesce(sum(bytes + octet_length(key)), 0)::BIGINT
                     FROM state_values WHERE scope = $1 AND key <> $2",
                    &[&scope_key, &key],
                )
                .await?;
            let (keys, held) = (row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64);
            if keys >= options.max_keys {
                return Ok(Err(StateQuotaError::Keys { keys }));
            }
            let total = held + bytes + key.len() as u64;
            if total > options.max_bytes {
                return Ok(Err(StateQuotaError::Bytes {
                    bytes: total,
                    max: options.max_bytes,
                }));
            }
            tx.execute(
                "INSERT INTO state_values
                    (scope, key, value, bytes, stored_at, labels, value_nonce, value_sealed)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (scope, key) DO UPDATE SET
                    value = excluded.value, bytes = excluded.bytes, stored_at = excluded.stored_at,
                    labels = excluded.labels, value_nonce = excluded.value_nonce,
                    value_sealed = excluded.value_sealed",
                &[
                    &scope_key,
                    &key,
                    &text,
                    &big(bytes),
                    &now_ms,
                    &labels,
                    &nonce,
                    &sealed,
                ],
            )
            .await?;
            Ok(Ok(()))
        })
    }

    pub fn load_state(
        &self,
        scope: &SessionScope,
        key: &str,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Option<(StoredValue, Vec<LabelSource>)>, StoreError> {
        let scope_key = scope.key();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            Ok(tx
                .query_opt(
                    "SELECT value, labels, value_nonce, value_sealed, bytes FROM state_values
                     WHERE scope = $1 AND key = $2",
                    &[&scope_key, &key],
                )
                .await?
                .map(|r| {
                    let value = StoredValue::of_row(r.get(0), r.get(2), r.get(3), r.get(4));
                    (value, labels_of(r.get(1)))
                }))
        })
    }

    pub fn session_labels(&self, scope: &SessionScope) -> Result<Vec<LabelSource>, StoreError> {
        let scope_key = scope.key();
        self.read(async |c| {
            Ok(c.query_opt(
                "SELECT labels FROM state_sessions WHERE scope = $1",
                &[&scope_key],
            )
            .await?
            .map(|r| labels_of(r.get(0)))
            .unwrap_or_default())
        })
    }

    pub fn add_session_labels(
        &self,
        scope: &SessionScope,
        labels: &[LabelSource],
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        let scope_key = scope.key();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            let text: String = tx
                .query_one(
                    "SELECT labels FROM state_sessions WHERE scope = $1",
                    &[&scope_key],
                )
                .await?
                .get(0);
            let mut held = labels_of(&text);
            for l in labels {
                crate::context::flow::join(&mut held, l.clone());
            }
            tx.execute(
                "UPDATE state_sessions SET labels = $2 WHERE scope = $1",
                &[&scope_key, &labels_text(&held)],
            )
            .await?;
            Ok(())
        })
    }

    pub fn remove_state(
        &self,
        scope: &SessionScope,
        key: &str,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        let scope_key = scope.key();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            let n = tx
                .execute(
                    "DELETE FROM state_values WHERE scope = $1 AND key = $2",
                    &[&scope_key, &key],
                )
                .await?;
            Ok(n > 0)
        })
    }

    pub fn list_state(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<Vec<StateEntry>, StoreError> {
        let scope_key = scope.key();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            Ok(tx
                .query(
                    "SELECT key, bytes, stored_at, labels FROM state_values WHERE scope = $1
                     ORDER BY key COLLATE \"C\"",
                    &[&scope_key],
                )
                .await?
                .iter()
                .map(|r| {
                    let sources = labels_of(r.get(3));
                    StateEntry {
                        key: r.get(0),
                        bytes: r.get::<_, i64>(1) as u64,
                        stored_at: r.get(2),
                        labels: sources.iter().map(|s| s.label.clone()).collect(),
                        sources,
                    }
                })
                .collect())
        })
    }

    pub fn load_placeholders(
        &self,
        scope: &SessionScope,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<SealedMap, StoreError> {
        let scope_key = scope.key();
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            let r = tx
                .query_one(
                    "SELECT placeholders_next, placeholders_nonce, placeholders FROM state_sessions WHERE scope = $1",
                    &[&scope_key],
                )
                .await?;
            let next: i64 = r.get(0);
            let nonce: Option<Vec<u8>> = r.get(1);
            let sealed: Option<Vec<u8>> = r.get(2);
            Ok(SealedMap {
                next: next.max(1) as u64,
                sealed: nonce.zip(sealed),
            })
        })
    }

    pub fn save_placeholders(
        &self,
        scope: &SessionScope,
        map: &SealedMap,
        options: &SessionOptions,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        let scope_key = scope.key();
        let (nonce, sealed) = map.sealed.clone().unzip();
        let next = big(map.next);
        self.write(async |tx| {
            renew(tx, scope, &scope_key, options, now_ms).await?;
            tx.execute(
                "UPDATE state_sessions SET placeholders_next = $2, placeholders_nonce = $3, placeholders = $4 WHERE scope = $1",
                &[&scope_key, &next, &nonce, &sealed],
            )
            .await?;
            Ok(())
        })
    }

    pub fn sweep_state(&self, options: &SessionOptions, now_ms: f64) -> Result<u64, StoreError> {
        let cutoff = now_ms - options.ttl_ms as f64;
        self.write(async |tx| {
            tx.execute(
                "DELETE FROM state_values WHERE scope IN
                    (SELECT scope FROM state_sessions WHERE used_at < $1)",
                &[&cutoff],
            )
            .await?;
            Ok(tx
                .execute("DELETE FROM state_sessions WHERE used_at < $1", &[&cutoff])
                .await?)
        })
    }
}
