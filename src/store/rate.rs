//! Executions per minute counted across gateways (`sandbox.policies.<name>.executions_per_minute`
//! with several `serve --http` processes on one PostgreSQL database). A SQLite file belongs to
//! one gateway, whose own limiter (`front::mcp::rate`) counts alone; on PostgreSQL every gateway
//! records each start in one table and checks the window there, under a lock per principal, so
//! the bound holds for the principal across all of them.

use super::{Store, StoreError};
use std::time::Duration;

/// What the shared count says of one more start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedStart {
    /// This store is not shared (SQLite): the gateway's own limiter decides.
    NotShared,
    /// Counted.
    Counted,
    /// The window is full; the oldest start in it leaves after this long.
    Full { retry_after: Duration },
}

impl Store {
    /// Counts one execution start of `principal` in the last 60 s across every gateway on this
    /// store, unless `max` are already there.
    pub fn start_execution_counted(
        &self,
        principal: &str,
        max: u32,
    ) -> Result<SharedStart, StoreError> {
        match self.pg() {
            Some(pg) => pg.start_execution_counted(principal, max),
            None => Ok(SharedStart::NotShared),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Suite: the window's bound, per principal; on SQLite the store does not count.
    pub(crate) fn starts_are_counted_per_principal(s: &Store) {
        if s.pg().is_none() {
            assert_eq!(
                s.start_execution_counted("token:a", 1).unwrap(),
                SharedStart::NotShared
            );
            return;
        }
        for _ in 0..3 {
            assert_eq!(
                s.start_execution_counted("token:a", 3).unwrap(),
                SharedStart::Counted
            );
        }
        match s.start_execution_counted("token:a", 3).unwrap() {
            SharedStart::Full { retry_after } => {
                assert!(
                    retry_after > Duration::from_secs(55) && retry_after <= Duration::from_secs(60),
                    "{retry_after:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        // A larger bound counts on from the same starts; another principal has its own.
        assert_eq!(
            s.start_execution_counted("token:a", 4).unwrap(),
            SharedStart::Counted
        );
        assert_eq!(
            s.start_execution_counted("token:b", 1).unwrap(),
            SharedStart::Counted
        );
        assert!(matches!(
            s.start_execution_counted("token:b", 1).unwrap(),
            SharedStart::Full { .. }
        ));
    }
}
