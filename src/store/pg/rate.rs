//! Executions per minute across gateways on PostgreSQL (see `store::rate`). One transaction per
//! start: a transaction-scoped advisory lock on the principal (so two gateways never both take
//! the last slot), the principal's starts older than 60 s deleted, the rest counted, and this
//! start inserted when there is room. Times are the database's clock, so gateways whose clocks
//! differ still share one window.

use super::super::rate::SharedStart;
use super::super::StoreError;
use super::Pg;
use std::time::Duration;

/// Second argument of `hashtextextended`: keeps these lock keys apart from other advisory locks.
const LOCK_SEED: i64 = 0x7261_7465; // "rate"

impl Pg {
    pub fn start_execution_counted(
        &self,
        principal: &str,
        max: u32,
    ) -> Result<SharedStart, StoreError> {
        let max = i64::from(max);
        self.write(async |tx| {
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, $2))",
                &[&principal, &LOCK_SEED],
            )
            .await?;
            tx.execute(
                "DELETE FROM rate_starts WHERE principal = $1 \
                 AND at <= clock_timestamp() - interval '60 seconds'",
                &[&principal],
            )
            .await?;
            let row = tx
                .query_one(
                    "SELECT count(*), COALESCE(EXTRACT(EPOCH FROM \
                     (min(at) + interval '60 seconds' - clock_timestamp()))::float8, 0) \
                     FROM rate_starts WHERE principal = $1",
                    &[&principal],
                )
                .await?;
            let (count, wait): (i64, f64) = (row.get(0), row.get(1));
            if count >= max {
                let wait = if wait.is_finite() {
                    wait.clamp(0.0, 60.0)
                } else {
                    60.0
                };
                return Ok(SharedStart::Full {
                    retry_after: Duration::from_secs_f64(wait),
                });
            }
            tx.execute(
                "INSERT INTO rate_starts (principal, at) VALUES ($1, clock_timestamp())",
                &[&principal],
            )
            .await?;
            Ok(SharedStart::Counted)
        })
    }
}
