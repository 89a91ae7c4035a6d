//! Per-principal rate limits of `serve --http`: executions started in any 60 s and executions
//! running at once (`sandbox.policies.<name>.executions_per_minute`, `max_concurrent`). Over
//! either, the request is refused at once with 429 and `Retry-After`.
//!
//! On a PostgreSQL state store shared by several gateways, executions per minute are counted in
//! the database (`store::rate`), so the bound is the principal's across every gateway; running
//! executions are counted by each gateway (a principal may run `max_concurrent` on each). While
//! the database cannot be reached, each gateway counts alone, as with SQLite: after a failed
//! shared count the next [`LOCAL_AFTER_FAILURE`] are counted locally at once, then one request
//! tries the database again (a hung database costs that request the store's operation bound,
//! not every request).

use crate::store::rate::SharedStart;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The window of `executions_per_minute`.
pub const WINDOW: Duration = Duration::from_secs(60);
/// After the shared count failed, executions are counted by this gateway alone this long before
/// the database is tried again.
pub const LOCAL_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// A principal's bounds (`None`: unbounded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rate {
    pub per_minute: Option<u32>,
    pub concurrent: Option<u32>,
}

impl Rate {
    /// The tighter of two bounds.
    pub fn min(self, other: Rate) -> Rate {
        fn m(a: Option<u32>, b: Option<u32>) -> Option<u32> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        Rate {
            per_minute: m(self.per_minute, other.per_minute),
            concurrent: m(self.concurrent, other.concurrent),
        }
    }
}

#[derive(Default)]
struct Usage {
    starts: VecDeque<Instant>,
    running: u32,
}

/// Usage per principal.
#[derive(Default)]
pub struct RateLimiter {
    usage: Mutex<HashMap<String, Usage>>,
    /// Until when starts are counted locally because the shared count failed (or is being
    /// tried again by one request).
    local_until: Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// Whether this request counts in the database: not while it is known unreachable; the
    /// first request after [`LOCAL_AFTER_FAILURE`] tries it (the others stay local meanwhile).
    fn try_shared(&self) -> bool {
        let mut until = self.local_until.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if until.is_some_and(|t| now < t) {
            return false;
        }
        if until.is_some() {
            // This request tries; the others stay local for as long as it may take.
            *until = Some(now + crate::store::pg::OPERATION_TIMEOUT + LOCAL_AFTER_FAILURE);
        }
        true
    }

    fn shared_answered(&self, answered: bool) {
        let mut until = self.local_until.lock().unwrap_or_else(|p| p.into_inner());
        *until = (!answered).then(|| Instant::now() + LOCAL_AFTER_FAILURE);
    }
}

/// A running execution, counted until dropped.
pub struct RatePermit {
    limiter: Arc<RateLimiter>,
    principal: String,
}

impl Drop for RatePermit {
    fn drop(&mut self) {
        let mut usage = self.limiter.usage.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(u) = usage.get_mut(&self.principal) {
            u.running = u.running.saturating_sub(1);
            if u.running == 0 && u.starts.is_empty() {
                usage.remove(&self.principal);
            }
        }
    }
}

/// A [`RatePermit`] shared by the HTTP request that started the execution (its answer stream)
/// and the execution itself (the request's parts the handler keeps): the execution is counted
/// until both are gone, so dropping the connection does not free the slot while the execution
/// runs on.
#[derive(Clone)]
pub struct ExecutionPermit(pub Arc<RatePermit>);

/// Why an execution may not start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRefusal {
    pub retry_after: Duration,
    pub message: String,
}

impl RateLimiter {
    /// Counts one execution of `principal` under `rate`, or says when to retry.
    pub fn acquire(
        self: &Arc<Self>,
        principal: &str,
        rate: Rate,
    ) -> Result<Option<RatePermit>, RateRefusal> {
        if rate == Rate::default() {
            return Ok(None);
        }
        let now = Instant::now();
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        let u = usage.entry(principal.to_string()).or_default();
        while u
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            u.starts.pop_front();
        }
        if let Some(max) = rate.concurrent {
            if u.running >= max {
                return Err(RateRefusal {
                    retry_after: Duration::from_secs(1),
                    message: format!(
                        "rate limit: {principal} may run {max} executions at once and has {} running; retry when one finishes",
                        u.running
                    ),
                });
            }
        }
        if let Some(max) = rate.per_minute {
            if u.starts.len() >= max as usize {
                let oldest = u.starts.front().copied().unwrap_or(now);
                let wait = WINDOW.saturating_sub(now.duration_since(oldest));
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                return Err(RateRefusal {
                    retry_after: Duration::from_secs(secs.max(1)),
                    message: format!(
                        "rate limit: {principal} may start {max} executions per minute; retry in {} s",
                        secs.max(1)
                    ),
                });
            }
            u.starts.push_back(now);
        }
        u.running += 1;
        Ok(Some(RatePermit {
            limiter: self.clone(),
            principal: principal.to_string(),
        }))
    }
}

/// Counts one execution of `principal` under `rate`: its starts per minute in `shared` when the
/// store is shared by several gateways, else (and while it is unreachable) in `limiter`.
pub async fn admit(
    limiter: &Arc<RateLimiter>,
    shared: Option<&crate::store::Store>,
    principal: &str,
    rate: Rate,
) -> Result<Option<RatePermit>, RateRefusal> {
    let Some((store, max)) = shared.filter(|s| s.pg().is_some()).zip(rate.per_minute) else {
        return limiter.acquire(principal, rate);
    };
    if !limiter.try_shared() {
        return limiter.acquire(principal, rate);
    }
    // Running executions first (local, and freed at once on a refusal below), so a request
    // refused for concurrency is not counted as a start.
    let permit = limiter.acquire(
        principal,
        Rate {
            per_minute: None,
            ..rate
        },
    )?;
    let who = principal.to_string();
    let counted = store
        .run(move |s| s.start_execution_counted(&who, max))
        .await;
    limiter.shared_answered(counted.is_ok());
    match counted {
        Ok(SharedStart::Counted | SharedStart::NotShared) => Ok(permit),
        Ok(SharedStart::Full { retry_after }) => {
            let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            Err(RateRefusal {
                retry_after: Duration::from_secs(secs.max(1)),
                message: format!(
                    "rate limit: {principal} may start {max} executions per minute (counted across every gateway of this database); retry in {} s",
                    secs.max(1)
                ),
            })
        }
        Err(e) => {
            unshared_warning(&e.to_string());
            drop(permit);
            limiter.acquire(principal, rate)
        }
    }
}

/// Logs, at most once a minute, that executions per minute are counted by this gateway alone.
fn unshared_warning(why: &str) {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    if last.is_none_or(|t| t.elapsed() >= WINDOW) {
        *last = Some(Instant::now());
        tracing::warn!(
            "rate limits: the state store cannot count executions per minute across gateways ({why}); this gateway counts its own until it can"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_concurrent_and_per_minute() {
        let l = Arc::new(RateLimiter::default());
        let rate = Rate {
            per_minute: Some(3),
            concurrent: Some(2),
        };
        let a = l.acquire("p", rate).unwrap();
        let b = l.acquire("p", rate).unwrap();
        let e = l.acquire("p", rate).err().unwrap();
        assert_eq!(e.retry_after, Duration::from_secs(1));
        drop(a);
        let _c = l.acquire("p", rate).unwrap();
        drop(b);
        let e = l.acquire("p", rate).err().unwrap();
        assert!(
            e.message.contains("3 executions per minute"),
            "{}",
            e.message
        );
        assert!(e.retry_after > Duration::from_secs(55));
        assert!(l.acquire("q", rate).is_ok());
        assert!(l.acquire("p", Rate::default()).unwrap().is_none());
    }
}
