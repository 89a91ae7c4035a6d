//! Yielded executions in the store (`execute_code {yield_after_ms}` answered `running`), so any
//! gateway sharing the store can wait for, read or cancel one that another gateway runs.
//!
//! One row per yielded execution: its id, the owner's session scope, the gateway running it,
//! when it started, whether a cancel was asked for, and — once the owning gateway wrote it — its
//! outcome (opaque to the store: JSON text, or sealed by the front, see [`StoredValue`]). The
//! outcome is read once: [`Store::take_yield`] deletes the row in the same transaction that
//! reads it, so two gateways cannot both return it. A row is renewed when written and when a
//! wait finds it running; [`Store::sweep_yields`] deletes rows not renewed for the session TTL.
//!
//! Which gateways are alive: [`Store::gateway_alive`]. On SQLite there is one gateway (this
//! process): any other id is a process that stopped. On PostgreSQL each gateway holds a session
//! advisory lock on its id (`pg::liveness`); it is alive while that lock is held.

use super::session_state::StoredValue;
use super::{Store, StoreError};
use crate::context::session::SessionScope;
use rusqlite::{params, OptionalExtension};

/// The most bytes of one outcome the store takes (it is already cut to its request's output
/// budget; this bounds what a misconfigured budget could write).
pub const MAX_OUTCOME_BYTES: u64 = 16 * 1024 * 1024;

/// What the store knows of one execution id, for one scope.
#[derive(Debug, Clone, PartialEq)]
pub enum Look {
    /// No such row for this scope (unknown, read already, expired, or another scope's).
    Unknown,
    /// Its outcome, written at `at` (ms since the epoch); the row is deleted when this is the
    /// answer of [`Store::take_yield`].
    Finished { outcome: StoredValue, at: f64 },
    /// Still running on `gateway`, started at `started_at` (ms since the epoch).
    Running { gateway: String, started_at: f64 },
}

impl Look {
    pub(super) fn of(
        gateway: String,
        started_at: f64,
        updated_at: f64,
        outcome: Option<StoredValue>,
    ) -> Look {
        match outcome {
            Some(outcome) => Look::Finished {
                outcome,
                at: updated_at,
            },
            None => Look::Running {
                gateway,
                started_at,
            },
        }
    }
}

/// The row's outcome columns `(outcome, nonce, sealed, bytes)` as a value (`None`: running).
pub(super) fn outcome_of(
    text: Option<String>,
    nonce: Option<Vec<u8>>,
    sealed: Option<Vec<u8>>,
    bytes: Option<i64>,
) -> Option<StoredValue> {
    let bytes = bytes?;
    Some(StoredValue::of_row(
        text.unwrap_or_default(),
        nonce,
        sealed,
        bytes,
    ))
}

/// Refuses an outcome larger than [`MAX_OUTCOME_BYTES`] (counting its ciphertext when sealed).
pub(super) fn check_size(outcome: &StoredValue) -> Result<(), StoreError> {
    let bytes = match outcome {
        StoredValue::Json(t) => t.len() as u64,
        StoredValue::Sealed { sealed, .. } => sealed.len() as u64,
    };
    if bytes > MAX_OUTCOME_BYTES {
        return Err(StoreError::QuotaExceeded(format!(
            "the outcome is {bytes} bytes; the store keeps at most {MAX_OUTCOME_BYTES} bytes of one yielded execution's outcome"
        )));
    }
    Ok(())
}

impl Store {
    /// Records that `gateway` runs execution `id` of `scope`, which yielded.
    pub fn record_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        gateway: &str,
        now_ms: f64,
    ) -> Result<(), StoreError> {
        if let Some(pg) = self.pg() {
            return pg.record_yield(scope, id, gateway, now_ms);
        }
        self.write(|tx| {
            tx.execute(
                "INSERT INTO yielded_executions (id, scope, gateway, started_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![id, scope.key(), gateway, now_ms],
            )?;
            Ok(())
        })
    }

    /// `gateway` writes the outcome of its execution `id`; `false` when the row is gone (read
    /// as stopped, or expired).
    pub fn finish_yield(
        &self,
        id: &str,
        gateway: &str,
        outcome: &StoredValue,
        now_ms: f64,
    ) -> Result<bool, StoreError> {
        check_size(outcome)?;
        if let Some(pg) = self.pg() {
            return pg.finish_yield(id, gateway, outcome, now_ms);
        }
        let (text, nonce, sealed) = outcome.columns();
        self.write(|tx| {
            let n = tx.execute(
                "UPDATE yielded_executions SET outcome = ?3, outcome_nonce = ?4,
                    outcome_sealed = ?5, outcome_bytes = ?6, updated_at = ?7
                 WHERE id = ?1 AND gateway = ?2 AND outcome_bytes IS NULL",
                params![
                    id,
                    gateway,
                    text,
                    nonce,
                    sealed,
                    outcome.bytes() as i64,
                    now_ms
                ],
            )?;
            Ok(n > 0)
        })
    }

    /// `scope`'s execution `id`: its outcome, taken (the row deleted in the same transaction),
    /// or where it runs (the row renewed).
    pub fn take_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
    ) -> Result<Look, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.take_yield(scope, id, now_ms);
        }
        self.look_yield(scope, id, now_ms, "")
    }

    /// Asks the gateway running `scope`'s execution `id` to cancel it. The answer is what the
    /// row holds (a finished outcome is not taken: [`Store::take_yield`] does that).
    pub fn request_cancel(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
    ) -> Result<Look, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.request_cancel(scope, id, now_ms);
        }
        self.look_yield(scope, id, now_ms, ", cancel_requested = 1")
    }

    /// The SQLite side of `take_yield` (`set` empty) and `request_cancel`.
    fn look_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        now_ms: f64,
        set: &str,
    ) -> Result<Look, StoreError> {
        let key = scope.key();
        self.write(|tx| {
            let row = tx
                .prepare_cached(
                    "SELECT gateway, started_at, updated_at, outcome, outcome_nonce, outcome_sealed,
                        outcome_bytes
                     FROM yielded_executions WHERE id = ?1 AND scope = ?2",
                )?
                .query_row(params![id, key], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, f64>(1)?,
                        r.get::<_, f64>(2)?,
                        outcome_of(r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
                    ))
                })
                .optional()?;
            let Some((gateway, started_at, updated_at, outcome)) = row else {
                return Ok(Look::Unknown);
            };
            if outcome.is_some() && set.is_empty() {
                tx.execute("DELETE FROM yielded_executions WHERE id = ?1", params![id])?;
            } else if outcome.is_none() {
                tx.execute(
                    &format!("UPDATE yielded_executions SET updated_at = ?2{set} WHERE id = ?1"),
                    params![id, now_ms],
                )?;
            }
            Ok(Look::of(gateway, started_at, updated_at, outcome))
        })
    }

    /// Deletes `scope`'s execution `id` if it is still running on `gateway` (which stopped);
    /// `false` when it finished meanwhile or is gone.
    pub fn forget_yield(
        &self,
        scope: &SessionScope,
        id: &str,
        gateway: &str,
    ) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.forget_yield(scope, id, gateway);
        }
        self.write(|tx| {
            Ok(tx.execute(
                "DELETE FROM yielded_executions
                 WHERE id = ?1 AND scope = ?2 AND gateway = ?3 AND outcome_bytes IS NULL",
                params![id, scope.key(), gateway],
            )? > 0)
        })
    }

    /// Deletes the row of execution `id` whatever it holds (its owner read the outcome
    /// itself); whether there was one.
    pub fn delete_yield(&self, id: &str) -> Result<bool, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.delete_yield(id);
        }
        self.write(|tx| {
            Ok(tx.execute("DELETE FROM yielded_executions WHERE id = ?1", params![id])? > 0)
        })
    }

    /// The ids of `gateway`'s running executions whose cancel was asked for.
    pub fn cancel_requests(&self, gateway: &str) -> Result<Vec<String>, StoreError> {
        if let Some(pg) = self.pg() {
            return pg.cancel_requests(gateway);
        }
        self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id FROM yielded_executions
                 WHERE gateway = ?1 AND cancel_requested = 1 AND outcome_bytes IS NULL",
            )?;
            let ids = stmt.query_map(params![gateway], |r| r.get(0))?;
            Ok(ids.collect::<Result<Vec<String>, _>>()?)
        })
    }

    /// Deletes rows not renewed for `ttl_ms`; how many.
    pub fn sweep_yields(&self, ttl_ms: u64, now_ms: f64) -> Result<u64, StoreError> {
        let cutoff = now_ms - ttl_ms as f64;
        if let Some(pg) = self.pg() {
            return pg.sweep_yields(cutoff);
        }
        self.write(|tx| {
            Ok(tx.execute(
                "DELETE FROM yielded_executions WHERE updated_at < ?1",
                params![cutoff],
            )? as u64)
        })
    }

    /// Whether `gateway` is alive, asked by gateway `mine` (always alive). SQLite: one gateway
    /// per store, so any other is a stopped process. PostgreSQL: it holds its liveness lock.
    pub fn gateway_alive(&self, gateway: &str, mine: &str) -> Result<bool, StoreError> {
        if gateway == mine {
            return Ok(true);
        }
        match self.pg() {
            Some(pg) => pg.gateway_alive(gateway),
            None => Ok(false),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn json(text: &str) -> StoredValue {
        StoredValue::Json(text.into())
    }

    fn finished(text: &str, at: f64) -> Look {
        Look::Finished {
            outcome: json(text),
            at,
        }
    }

    fn running(gateway: &str, started_at: f64) -> Look {
        Look::Running {
            gateway: gateway.into(),
            started_at,
        }
    }

    /// The owner's scope sees its row; any other scope sees nothing (not even to cancel); the
    /// outcome is read once, sealed or not.
    pub(crate) fn read_once_by_its_scope(s: &Store) {
        let a = SessionScope::new("t", "p", "s");
        s.record_yield(&a, "e1", "g1", 10.0).unwrap();
        assert_eq!(s.take_yield(&a, "e1", 11.0).unwrap(), running("g1", 10.0));
        for other in [
            SessionScope::new("t2", "p", "s"),
            SessionScope::new("t", "p2", "s"),
            SessionScope::new("t", "p", "s2"),
        ] {
            assert_eq!(s.take_yield(&other, "e1", 12.0).unwrap(), Look::Unknown);
            assert_eq!(s.request_cancel(&other, "e1", 12.0).unwrap(), Look::Unknown);
            assert!(!s.forget_yield(&other, "e1", "g1").unwrap());
        }
        assert!(s.cancel_requests("g1").unwrap().is_empty());
        assert_eq!(
            s.request_cancel(&a, "e1", 13.0).unwrap(),
            running("g1", 10.0)
        );
        assert_eq!(s.cancel_requests("g1").unwrap(), vec!["e1".to_string()]);
        assert!(s.cancel_requests("g2").unwrap().is_empty());
        assert!(
            !s.finish_yield("e1", "g2", &json("1"), 14.0).unwrap(),
            "not g2's"
        );
        assert!(s
            .finish_yield("e1", "g1", &json("{\"a\":1}"), 14.0)
            .unwrap());
        assert!(
            !s.finish_yield("e1", "g1", &json("2"), 14.0).unwrap(),
            "once"
        );
        assert!(s.cancel_requests("g1").unwrap().is_empty(), "it ended");
        assert!(!s.forget_yield(&a, "e1", "g1").unwrap(), "finished");
        assert_eq!(
            s.request_cancel(&a, "e1", 15.0).unwrap(),
            finished("{\"a\":1}", 14.0),
            "a cancel does not take the outcome"
        );
        assert_eq!(
            s.take_yield(&a, "e1", 16.0).unwrap(),
            finished("{\"a\":1}", 14.0)
        );
        assert_eq!(s.take_yield(&a, "e1", 17.0).unwrap(), Look::Unknown);
        let sealed = StoredValue::Sealed {
            nonce: vec![1; 24],
            sealed: vec![2; 40],
            bytes: 24,
        };
        s.record_yield(&a, "e2", "g1", 20.0).unwrap();
        assert!(s.finish_yield("e2", "g1", &sealed, 21.0).unwrap());
        assert_eq!(
            s.take_yield(&a, "e2", 22.0).unwrap(),
            Look::Finished {
                outcome: sealed,
                at: 21.0
            }
        );
        s.record_yield(&a, "e3", "g1", 30.0).unwrap();
        assert!(s.forget_yield(&a, "e3", "g1").unwrap(), "stopped gateway");
        assert_eq!(s.take_yield(&a, "e3", 31.0).unwrap(), Look::Unknown);
        s.record_yield(&a, "e4", "g1", 40.0).unwrap();
        assert!(s.delete_yield("e4").unwrap());
        assert!(!s.delete_yield("e4").unwrap());
        let big = json(&"x".repeat(MAX_OUTCOME_BYTES as usize + 1));
        s.record_yield(&a, "e5", "g1", 50.0).unwrap();
        assert!(s.finish_yield("e5", "g1", &big, 51.0).is_err());
        assert_eq!(s.take_yield(&a, "e5", 52.0).unwrap(), running("g1", 50.0));
    }

    /// Two takers at once (separate handles, as two gateways): exactly one gets the outcome.
    pub(crate) fn two_takers_get_it_once(s: &Store) {
        let a = SessionScope::new("t", "p", "s");
        for round in 0..20 {
            let id = format!("r{round}");
            s.record_yield(&a, &id, "g1", 1.0).unwrap();
            s.finish_yield(&id, "g1", &json("\"done\""), 2.0).unwrap();
            let got = std::sync::atomic::AtomicUsize::new(0);
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    let (store, a, id, got) = (super::super::suites::reopen(s), &a, &id, &got);
                    scope.spawn(move || {
                        if let Look::Finished { outcome, .. } =
                            store.take_yield(a, id, 3.0).unwrap()
                        {
                            assert_eq!(outcome, json("\"done\""));
                            got.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    });
                }
            });
            assert_eq!(got.into_inner(), 1, "round {round}");
        }
    }

    /// Rows expire when not renewed for the TTL; a wait that finds one running renews it.
    pub(crate) fn rows_expire(s: &Store) {
        let a = SessionScope::new("t", "p", "s");
        s.record_yield(&a, "old", "g1", 1000.0).unwrap();
        s.record_yield(&a, "done", "g1", 1000.0).unwrap();
        s.finish_yield("done", "g1", &json("1"), 1500.0).unwrap();
        s.record_yield(&a, "renewed", "g1", 1000.0).unwrap();
        s.take_yield(&a, "renewed", 1900.0).unwrap();
        assert_eq!(s.sweep_yields(1000, 2000.0).unwrap(), 0);
        assert_eq!(s.sweep_yields(1000, 2100.0).unwrap(), 1);
        assert_eq!(s.take_yield(&a, "old", 2100.0).unwrap(), Look::Unknown);
        assert_eq!(s.sweep_yields(1000, 2600.0).unwrap(), 1);
        assert_eq!(s.take_yield(&a, "done", 2600.0).unwrap(), Look::Unknown);
        assert_eq!(
            s.take_yield(&a, "renewed", 2600.0).unwrap(),
            running("g1", 1000.0)
        );
    }

    /// This gateway is alive; on SQLite any other is not (on PostgreSQL see
    /// `pg::liveness::tests`).
    pub(crate) fn liveness_of_unknown_gateways(s: &Store) {
        assert!(s.gateway_alive("me", "me").unwrap());
        assert!(!s.gateway_alive("someone-else", "me").unwrap());
    }
}
