//! `setTimeout` / `setInterval` / `clearTimeout` / `clearInterval`.
//!
//! The runner keeps its timers here, ordered by when they are due; its loop runs the due ones
//! (one callback per turn, then the microtasks it queued, as HTML does) and, when it has to
//! wait, asks the host for a `wake` frame at the earliest one (`sleep`). After the lockdown the
//! runner cannot wait on a clock itself — `poll`, `nanosleep` and socket timeouts are not in the
//! seccomp allowlist — and it needs no new system call this way: it blocks on `read` as before,
//! and the host, which already owns the execution's wall clock, answers when a timer is due.
//! A timer due after the wall clock therefore ends the execution with `EXECUTION_TIMEOUT`;
//! callbacks run JavaScript, which counts against the CPU budget like any other code.

use super::bridge::error_object;
use crate::protocol::WireError;
use rquickjs::function::{Opt, Rest};
use rquickjs::{Coerced, Ctx, Exception, FromJs, Function, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Timers that may be pending at once; one more is refused with `LIMIT_EXCEEDED`.
pub const MAX_PENDING: usize = 10_000;
/// The largest delay, in ms (HTML's and Node's 32-bit bound); larger delays are clamped to it,
/// which is far past any wall clock.
const MAX_DELAY_MS: f64 = 2_147_483_647.0;
/// An interval repeats at most this often (Node's minimum), so `setInterval(f, 0)` is not a
/// loop that never yields to the host.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

struct Timer<'js> {
    callback: Function<'js>,
    args: Vec<Value<'js>>,
    due: Instant,
    interval: Option<Duration>,
}

/// The pending timers of one execution.
#[derive(Default)]
pub struct Timers<'js> {
    /// `(due, id)`: ids break ties, so timers due together run in the order they were made.
    order: RefCell<BTreeSet<(Instant, u64)>>,
    timers: RefCell<HashMap<u64, Timer<'js>>>,
    next_id: Cell<u64>,
    /// The wake the host was last asked for, so one is not asked for twice.
    asked: Cell<Option<Instant>>,
}

impl<'js> Timers<'js> {
    /// The native behind `setTimeout` (`repeat == false`) and `setInterval`.
    pub fn add(
        &self,
        ctx: &Ctx<'js>,
        callback: Value<'js>,
        delay: Opt<Value<'js>>,
        args: Rest<Value<'js>>,
        repeat: bool,
    ) -> rquickjs::Result<u64> {
        let name = if repeat { "setInterval" } else { "setTimeout" };
        let Some(callback) = callback.into_function() else {
            return Err(Exception::throw_type(
                ctx,
                &format!(
                    "{name} needs a function as its first argument (strings are not evaluated)"
                ),
            ));
        };
        if self.timers.borrow().len() >= MAX_PENDING {
            let err = WireError::new(
                "LIMIT_EXCEEDED",
                format!(
                    "{name}: {MAX_PENDING} timers are already pending, the most a script may have; \
                     clear timers you no longer need or await them a few at a time"
                ),
            );
            return Err(ctx.throw(error_object(ctx, &err)?));
        }
        let ms = match delay.0 {
            None => 0.0,
            Some(v) => Coerced::<f64>::from_js(ctx, v)?.0,
        };
        let ms = if ms.is_nan() {
            0.0
        } else {
            ms.clamp(0.0, MAX_DELAY_MS)
        };
        let delay = Duration::from_micros((ms * 1000.0) as u64);
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        let due = Instant::now() + delay;
        self.order.borrow_mut().insert((due, id));
        self.timers.borrow_mut().insert(
            id,
            Timer {
                callback,
                args: args.0,
                due,
                interval: repeat.then(|| delay.max(MIN_INTERVAL)),
            },
        );
        Ok(id)
    }

    /// The native behind `clearTimeout` and `clearInterval` (either clears either, as in HTML).
    pub fn clear(&self, ctx: &Ctx<'js>, id: Opt<Value<'js>>) {
        let Some(v) = id.0 else { return };
        let Ok(Coerced(n)) = Coerced::<f64>::from_js(ctx, v) else {
            ctx.catch();
            return;
        };
        if !(n >= 1.0 && n.fract() == 0.0 && n <= u64::MAX as f64) {
            return;
        }
        let id = n as u64;
        if let Some(t) = self.timers.borrow_mut().remove(&id) {
            self.order.borrow_mut().remove(&(t.due, id));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.timers.borrow().is_empty()
    }

    /// When the earliest timer is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.order.borrow().first().map(|(due, _)| *due)
    }

    /// Runs the earliest timer if it is due. An interval is rescheduled before its callback runs,
    /// so the callback can clear it. Returns whether a callback ran; an exception it throws is
    /// the caller's (it ends the script, as an uncaught error in a Node timer does).
    pub fn run_due(&self, now: Instant) -> rquickjs::Result<bool> {
        let Some((due, id)) = self.order.borrow().first().copied() else {
            return Ok(false);
        };
        if due > now {
            return Ok(false);
        }
        self.order.borrow_mut().remove(&(due, id));
        let (callback, args) = {
            let mut timers = self.timers.borrow_mut();
            let Some(timer) = timers.get_mut(&id) else {
                return Ok(false);
            };
            match timer.interval {
                Some(every) => {
                    timer.due = now + every;
                    self.order.borrow_mut().insert((timer.due, id));
                    (timer.callback.clone(), timer.args.clone())
                }
                None => {
                    let Some(t) = timers.remove(&id) else {
                        return Ok(false);
                    };
                    (t.callback, t.args)
                }
            }
        };
        callback.call::<_, ()>((Rest(args),))?;
        Ok(true)
    }

    /// How long to ask the host to sleep before the earliest timer is due, when that was not
    /// asked already: `Some(ms)`, rounded up so the wake is never early.
    pub fn sleep_request(&self, now: Instant) -> Option<u64> {
        let due = self.next_due()?;
        if self.asked.get() == Some(due) {
            return None;
        }
        self.asked.set(Some(due));
        let wait = due.saturating_duration_since(now);
        Some(wait.as_micros().div_ceil(1000).min(u64::MAX as u128) as u64)
    }

    /// A `wake` arrived: the next wait must ask again.
    pub fn woken(&self) {
        self.asked.set(None);
    }

    /// Drops every callback (they hold JS values that must not outlive the context).
    pub fn clear_all(&self) {
        self.timers.borrow_mut().clear();
        self.order.borrow_mut().clear();
    }
}
