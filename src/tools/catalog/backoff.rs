//! The back-off between reconnect attempts to a remote MCP server that could not be reached:
//! 250 ms after the first failure, doubling to at most 10 s, reset by a successful connect.
//! A call during the back-off fails at once with the last reason.

use std::time::{Duration, Instant};

/// First wait after a failed connect.
pub const FIRST: Duration = Duration::from_millis(250);
/// Longest wait between attempts.
pub const MAX: Duration = Duration::from_secs(10);

#[derive(Debug, Default, Clone)]
pub struct Backoff {
    delay: Option<Duration>,
    next_at: Option<Instant>,
}

impl Backoff {
    /// Records a failed attempt: the next one waits twice as long as the last (from [`FIRST`]
    /// to [`MAX`]).
    pub fn failed(&mut self) {
        let delay = self.delay.map_or(FIRST, |d| (d * 2).min(MAX));
        self.delay = Some(delay);
        self.next_at = Some(Instant::now() + delay);
    }

    /// How long until the next attempt may be made (`None`: now).
    pub fn wait(&self) -> Option<Duration> {
        self.next_at
            .map(|at| at.saturating_duration_since(Instant::now()))
            .filter(|d| !d.is_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap() {
        let mut b = Backoff::default();
        assert_eq!(b.wait(), None);
        let mut delays = Vec::new();
        for _ in 0..8 {
            b.failed();
            delays.push(b.delay.unwrap().as_millis());
        }
        assert_eq!(delays, [250, 500, 1000, 2000, 4000, 8000, 10000, 10000]);
        assert!(b.wait().unwrap() > Duration::from_secs(9));
    }
}
