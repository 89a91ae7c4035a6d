//! Hang guards: the only upper bounds on wall time a test may assert (CONTRIBUTING.md,
//! "Tests and the machine's speed"). A test checks what happened (an outcome code, what a server
//! saw, the order of events), never how fast; a bound on a step's time is there only so that a
//! hang fails the test instead of stalling the suite, and it is at least [`HANG_FACTOR`] times
//! what the step takes on an idle machine, so that a machine busy with other work (a build, two
//! CPU burners: `scripts/stress-test.sh`) still passes.

use std::time::Duration;

/// How many times a step's idle duration its hang guard allows.
pub const HANG_FACTOR: u32 = 10;

/// Asserts that a step which took `took` did not hang: `took` is under `bound`, which must be at
/// least [`HANG_FACTOR`] × `idle`, what the step measured on an idle machine (dev profile, rounded
/// up; written at the call so that the bound's reason is visible). Prints the measurement (seen
/// with `--no-capture`) so that the idle figure can be measured again.
#[track_caller]
pub fn assert_not_hung(took: Duration, bound: Duration, idle: Duration, what: &str) {
    eprintln!("hang guard: {what} took {took:?} (idle {idle:?}, bound {bound:?})");
    assert!(
        bound >= idle * HANG_FACTOR,
        "the hang guard of {what} ({bound:?}) is under {HANG_FACTOR} × its idle time {idle:?}"
    );
    assert!(
        took < bound,
        "{what} took {took:?}: a hang (bound {bound:?}, idle {idle:?})"
    );
}

/// [`assert_not_hung`] without printing: for the deadline of a polling loop, checked each turn.
#[track_caller]
pub fn assert_still_waiting(waited: Duration, bound: Duration, idle: Duration, what: &str) {
    assert!(
        bound >= idle * HANG_FACTOR,
        "the hang guard of {what} ({bound:?}) is under {HANG_FACTOR} × its idle time {idle:?}"
    );
    assert!(
        waited < bound,
        "{what}: still waiting after {waited:?}, a hang (bound {bound:?}, idle {idle:?})"
    );
}

/// `n` milliseconds (the hang guards' figures read better as `ms(300)`).
pub const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
