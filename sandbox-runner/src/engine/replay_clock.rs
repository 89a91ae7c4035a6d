//! The clock of an execution that is recorded or replayed (`--audit-record full`,
//! `mcp-sandbox replay`): every value the script reads from the wall clock (`Date.now()`,
//! `new Date()`, `Date()` in JavaScript; `datetime.now()`, `date.today()` in Python) goes through
//! one [`ClockLog`], which keeps the first [`MAX_CLOCK_VALUES`] of them for the host
//! ([`RunnerMessage::Clock`]) and, in a replay, gives back the recorded values in order (past the
//! last one, the real clock).
//!
//! Executions that are neither recorded nor replayed do not use it: QuickJS's own `Date` and
//! the plain clock answer them, as before.

use crate::protocol::{Determinism, RunnerMessage, MAX_CLOCK_VALUES};
use rquickjs::{Ctx, Function};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The values given to the script, and those to give back in a replay.
#[derive(Debug, Default)]
pub struct ClockLog {
    replayed: Vec<i64>,
    next: usize,
    given: Vec<i64>,
    dropped: u64,
}

impl ClockLog {
    pub fn new(d: &Determinism) -> Self {
        let mut replayed = d.clock.clone().unwrap_or_default();
        replayed.truncate(MAX_CLOCK_VALUES);
        ClockLog {
            replayed,
            ..Default::default()
        }
    }

    /// The time now, in microseconds since the Unix epoch: the next recorded value in a replay,
    /// else the real clock.
    pub fn now_us(&mut self) -> i64 {
        let value = match self.replayed.get(self.next) {
            Some(v) => {
                self.next += 1;
                *v
            }
            None => real_us(),
        };
        if self.given.len() < MAX_CLOCK_VALUES {
            self.given.push(value);
        } else {
            self.dropped += 1;
        }
        value
    }

    /// The frame that reports the values given.
    pub fn report(&mut self) -> RunnerMessage {
        RunnerMessage::Clock {
            values: std::mem::take(&mut self.given),
            dropped: self.dropped,
        }
    }
}

fn real_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A shared [`ClockLog`] (the JavaScript natives hold it while the engine reports it).
pub type SharedClock = Rc<RefCell<ClockLog>>;

/// Replaces the global `Date` for this execution by one whose `Date.now()`, `new Date()` and
/// `Date()` read `clock` (in whole milliseconds, as QuickJS's); every other use (`new Date(ms)`,
/// `Date.parse`, `Date.UTC`, the prototype) is the original's.
pub fn install_date<'js>(ctx: &Ctx<'js>, clock: &SharedClock) -> rquickjs::Result<()> {
    let c = clock.clone();
    let now = Function::new(ctx.clone(), move || {
        c.borrow_mut().now_us().div_euclid(1000) as f64
    })?
    .with_name("now")?;
    let define: Function = ctx.eval(
        r#"(now) => {
          const D = globalThis.Date;
          const Date = function Date(...args) {
            if (new.target === undefined) return new D(now()).toString();
            return Reflect.construct(D, args.length === 0 ? [now()] : args, new.target);
          };
          Object.defineProperty(Date, 'length', { value: 7 });
          Object.defineProperty(Date, 'prototype', { value: D.prototype, writable: false });
          Object.defineProperty(D.prototype, 'constructor', { value: Date, writable: true, configurable: true, enumerable: false });
          for (const name of ['now', 'parse', 'UTC']) {
            Object.defineProperty(Date, name, { value: name === 'now' ? now : D[name], writable: true, configurable: true, enumerable: false });
          }
          Object.defineProperty(globalThis, 'Date', { value: Date, writable: true, configurable: true, enumerable: false });
        }"#,
    )?;
    define.call::<_, ()>((now,))
}
