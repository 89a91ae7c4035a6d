//! `performance.now()` and `performance.timeOrigin`, per execution.
//!
//! QuickJS's own `performance` takes its origin when the context is created: in a zygote that
//! is once, before any fork, so `performance.now()` would count from the zygote's start (its age
//! and, through it, other activity) and `timeOrigin` is the machine's monotonic uptime, not a
//! time of day. Here the object is replaced once, when the engine is created, by one whose
//! natives read a [`Clock`] that [`Clock::start`] resets when the execution starts:
//! `performance.now()` is 0 at that moment (monotonic, in milliseconds with sub-millisecond
//! digits) and `performance.timeOrigin` is the wall-clock time of that moment in milliseconds
//! since the Unix epoch, as in browsers and Node.

use rquickjs::{Ctx, Function};
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The origin of one execution: a monotonic instant and the wall-clock time it stands for.
#[derive(Clone)]
pub struct Clock(Rc<Cell<(Instant, f64)>>);

impl Default for Clock {
    fn default() -> Self {
        Clock(Rc::new(Cell::new((Instant::now(), wall_ms()))))
    }
}

impl Clock {
    /// Makes now the origin (called when an execution starts, before any user code).
    pub fn start(&self) {
        self.0.set((Instant::now(), wall_ms()));
    }

    fn now_ms(&self) -> f64 {
        self.0.get().0.elapsed().as_secs_f64() * 1000.0
    }

    fn origin_ms(&self) -> f64 {
        self.0.get().1
    }
}

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Replaces the `performance` global with one that reads `clock`. Called once per engine.
pub fn install<'js>(ctx: &Ctx<'js>, clock: &Clock) -> rquickjs::Result<()> {
    let c = clock.clone();
    let now = Function::new(ctx.clone(), move || c.now_ms())?.with_name("now")?;
    let c = clock.clone();
    let origin = Function::new(ctx.clone(), move || c.origin_ms())?.with_name("get timeOrigin")?;
    let define: Function = ctx.eval(
        "(now, origin) => {
           const p = {};
           Object.defineProperty(p, 'now', { value: now, writable: true, enumerable: true, configurable: true });
           Object.defineProperty(p, 'timeOrigin', { get: origin, enumerable: true, configurable: true });
           Object.defineProperty(globalThis, 'performance', { value: p, writable: true, enumerable: true, configurable: true });
         }",
    )?;
    define.call::<_, ()>((now, origin))
}
