//! The web view's reads, bounded per principal: at most [`MAX_IN_FLIGHT`] at once and
//! [`READS_PER_SECOND`] a second (a burst of [`BURST`]), so one principal polling the API from
//! many threads cannot take the read connection from the others. A read past either bound is
//! refused at once with `429 UI_RATE_LIMITED`, a message saying which bound and what to do, and
//! `Retry-After`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Reads of one principal running at once.
pub const MAX_IN_FLIGHT: u32 = 2;
/// Reads one principal may start per second, on average.
pub const READS_PER_SECOND: f64 = 10.0;
/// Reads one principal may start at once after a pause.
pub const BURST: f64 = 20.0;
/// Principals remembered before idle ones are forgotten.
const MAX_PRINCIPALS: usize = 4096;

#[derive(Debug)]
struct Bucket {
    in_flight: u32,
    tokens: f64,
    at: Instant,
}

/// The per-principal bounds of the web view's reads.
#[derive(Debug, Default)]
pub struct ReadLimits {
    buckets: Mutex<HashMap<String, Bucket>>,
    /// The SHA-256 of each credential that recently authenticated a read → its principal's key,
    /// so a read past the bounds is refused before its credential is checked again
    /// ([`ReadLimits::refused_before_auth`]).
    credentials: Mutex<HashMap<[u8; 32], String>>,
}

/// The key of a principal's bounds: its tenant and name.
pub fn principal_key(p: &crate::context::principal::Principal) -> String {
    format!("{}\n{}", p.tenant, p.name)
}

impl ReadLimits {
    /// Remembers that `credential` (the SHA-256 of an `Authorization` value) authenticated
    /// principal `key` for a read.
    pub fn remember(&self, credential: [u8; 32], key: &str) {
        let mut c = self.credentials.lock().unwrap_or_else(|p| p.into_inner());
        if c.get(&credential).is_some_and(|k| k == key) {
            return;
        }
        if c.len() >= MAX_PRINCIPALS {
            c.clear();
        }
        c.insert(credential, key.to_string());
    }

    /// Forgets `credential` (it no longer authenticates: revoked, expired, refused).
    pub fn forget(&self, credential: &[u8; 32]) {
        self.credentials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(credential);
    }

    /// The refusal [`admit`] would give now to the principal `credential` last authenticated,
    /// without taking anything from its bounds: `None` when the credential is not known, or
    /// its principal is within its bounds (the read then goes through authentication and
    /// [`admit`] as any other). A refusal costs no credential check (no token lookup in the
    /// state store, no signature), so a principal polling past its bounds costs the gateway
    /// little. Only the holder of the credential gets it: the key is the credential's hash.
    pub fn refused_before_auth(&self, credential: &[u8; 32]) -> Option<Refused> {
        let key = self
            .credentials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(credential)
            .cloned()?;
        let now = Instant::now();
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = b.get_mut(&key)?;
        refill(bucket, now);
        over_bounds(bucket)
    }
}

fn refill(bucket: &mut Bucket, now: Instant) {
    bucket.tokens =
        (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * READS_PER_SECOND).min(BURST);
    bucket.at = now;
}

/// Why a read of this bucket's principal would be refused now.
fn over_bounds(bucket: &Bucket) -> Option<Refused> {
    if bucket.in_flight >= MAX_IN_FLIGHT {
        return Some(Refused {
            message: format!(
                "this principal already has {MAX_IN_FLIGHT} web-view reads in flight (the bound per principal); wait for their answers before asking again"
            ),
            retry_after: 1,
        });
    }
    if bucket.tokens < 1.0 {
        return Some(Refused {
            message: format!(
                "this principal asked the web view for more than {READS_PER_SECOND} reads a second (a burst of {BURST}, the bound per principal); poll less often, and page with `before` instead of asking for everything again"
            ),
            retry_after: 1,
        });
    }
    None
}

/// Why a read was refused (the message says what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub message: String,
    /// Seconds to wait before asking again (`Retry-After`).
    pub retry_after: u64,
}

/// A read admitted: its slot is given back when this is dropped.
#[derive(Debug)]
pub struct Admitted {
    limits: Arc<ReadLimits>,
    key: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut b = self
            .limits
            .buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(bucket) = b.get_mut(&self.key) {
            bucket.in_flight = bucket.in_flight.saturating_sub(1);
        }
    }
}

/// Admits one read of principal `key`, or says why not.
pub fn admit(limits: &Arc<ReadLimits>, key: &str) -> Result<Admitted, Refused> {
    let now = Instant::now();
    let mut b = limits.buckets.lock().unwrap_or_else(|p| p.into_inner());
    if b.len() >= MAX_PRINCIPALS && !b.contains_key(key) {
        // Forget the principals with nothing in flight whose bucket has refilled.
        b.retain(|_, v| {
            v.in_flight > 0
                || v.tokens + now.duration_since(v.at).as_secs_f64() * READS_PER_SECOND < BURST
        });
    }
    let bucket = b.entry(key.to_string()).or_insert(Bucket {
        in_flight: 0,
        tokens: BURST,
        at: now,
    });
    refill(bucket, now);
    if let Some(refused) = over_bounds(bucket) {
        return Err(refused);
    }
    bucket.tokens -= 1.0;
    bucket.in_flight += 1;
    Ok(Admitted {
        limits: limits.clone(),
        key: key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_and_rate_are_bounded_per_principal() {
        let limits = Arc::new(ReadLimits::default());
        let a = admit(&limits, "t/alice").unwrap();
        let b = admit(&limits, "t/alice").unwrap();
        let refused = admit(&limits, "t/alice").unwrap_err();
        assert_eq!(
            refused.message,
            "this principal already has 2 web-view reads in flight (the bound per principal); wait for their answers before asking again"
        );
        // Another principal is not held by alice's reads.
        drop(admit(&limits, "t/bob").unwrap());
        drop((a, b));
        // 20 in a burst (2 taken above), then refused until the bucket refills.
        for _ in 0..18 {
            drop(admit(&limits, "t/alice").unwrap());
        }
        let refused = admit(&limits, "t/alice").unwrap_err();
        assert!(
            refused.message.starts_with(
                "this principal asked the web view for more than 10 reads a second (a burst of 20"
            ),
            "{}",
            refused.message
        );
        assert_eq!(refused.retry_after, 1);
    }

    #[test]
    fn a_known_credential_past_its_bounds_is_refused_before_authentication() {
        let limits = Arc::new(ReadLimits::default());
        let (alice, bob, stranger) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        // Unknown credentials and principals without a bucket go through authentication.
        assert_eq!(limits.refused_before_auth(&stranger), None);
        limits.remember(alice, "t\nalice");
        limits.remember(bob, "t\nbob");
        assert_eq!(limits.refused_before_auth(&alice), None);
        // Two reads in flight: alice's next is refused without authentication, bob's is not.
        let held = (
            admit(&limits, "t\nalice").unwrap(),
            admit(&limits, "t\nalice").unwrap(),
        );
        let early = limits.refused_before_auth(&alice).unwrap();
        assert_eq!(early, admit(&limits, "t\nalice").unwrap_err());
        assert_eq!(limits.refused_before_auth(&bob), None);
        assert_eq!(limits.refused_before_auth(&stranger), None);
        // A refusal before authentication takes nothing from the bounds: once the reads end,
        // the next read is admitted.
        drop(held);
        assert_eq!(limits.refused_before_auth(&alice), None);
        drop(admit(&limits, "t\nalice").unwrap());
        // A credential that no longer authenticates is forgotten: it goes through
        // authentication again (and gets its 401) whatever its principal's bounds.
        let held = (
            admit(&limits, "t\nalice").unwrap(),
            admit(&limits, "t\nalice").unwrap(),
        );
        assert!(limits.refused_before_auth(&alice).is_some());
        limits.forget(&alice);
        assert_eq!(limits.refused_before_auth(&alice), None);
        drop(held);
    }
}
