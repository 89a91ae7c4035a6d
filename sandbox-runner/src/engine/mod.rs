//! QuickJS, one script per process: the user's code runs as the body of an async function with
//! `mcp` and the context variables in scope. A single-threaded loop runs pending jobs and, while
//! the script waits on tools, blocks on the socket for `rpc_result` frames.

mod bridge;
pub mod channel;
mod clock;
mod convert;
pub mod cpu;
pub mod crypto;
pub mod heap;
mod intl;
pub mod preload;
pub mod replay_clock;
mod subtle;
pub mod suggest;
mod text;
mod timers;
mod web;
mod weburl;

use crate::protocol::{raw, Determinism, RunnerLimits, ToolRef, UnavailableServer, WireError};
use bridge::Bridge;
use channel::Channel;
use cpu::CpuBudget;
use rquickjs::context::EvalOptions;
use rquickjs::function::{Opt, Rest};
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Persistent, Promise, Runtime, Value};
use serde_json::{Map, Value as Json};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timers::Timers;

const PRELUDE: &str = include_str!("prelude.js");
/// The Node-style formatter of `console.*` arguments (see the file's header).
const INSPECT: &str = include_str!("inspect.js");
/// The name QuickJS gives the user's code in stack traces (`at script.js:3:7`).
pub const SCRIPT_NAME: &str = "script.js";

/// Errors that stop the runner without a normal completion (the host sees the socket close).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot create the QuickJS runtime: {0}")]
    Init(String),
    #[error("lost the connection to the host: {0}")]
    Channel(String),
}

/// What the host asked the runner to run.
pub struct ExecuteRequest {
    pub code: String,
    pub tools: Vec<ToolRef>,
    pub unavailable: Vec<UnavailableServer>,
    pub context: Map<String, Json>,
    pub limits: RunnerLimits,
    /// Set when the execution is recorded or replayed (seed, clock values).
    pub determinism: Option<Determinism>,
}

/// A QuickJS runtime and context, created before lockdown and used for exactly one script.
///
/// The prelude is compiled here, once: in a zygote, before any fork, so every forked runner
/// starts with it in its (copy-on-write) heap and an execution only calls it. It evaluates to
/// a function and touches no global until that call.
pub struct Engine {
    /// Dropped before the runtime (a value must not outlive its runtime).
    prelude: Persistent<Function<'static>>,
    /// Installs the per-execution web globals (timers); returned by [`web::install`].
    web_bind: Persistent<Function<'static>>,
    /// `inspect(value)` for `console.*`, made once from `inspect.js`.
    inspect: Persistent<Function<'static>>,
    rt: Runtime,
    ctx: Context,
    /// The generator behind `Math.random` and `crypto`, seeded per execution ([`Engine::seed`]).
    random: crypto::Random,
    /// The origin of `performance.now()`, reset when the execution starts.
    clock: clock::Clock,
}

impl Engine {
    pub fn new() -> Result<Self, EngineError> {
        let init = |e: rquickjs::Error| EngineError::Init(e.to_string());
        // The heap's budget is kept by the runner's allocator (`heap`), not QuickJS's limit.
        let rt = Runtime::new_with_alloc(heap::Heap).map_err(init)?;
        let ctx = Context::full(&rt).map_err(init)?;
        let random = crypto::Random::default();
        crypto::detect_cpu_features();
        let clock = clock::Clock::default();
        let (prelude, inspect, web_bind) = ctx.with(|ctx| {
            // `crypto` first: the web globals add `crypto.subtle` to it.
            crypto::install(&ctx, &random).map_err(init)?;
            clock::install(&ctx, &clock).map_err(init)?;
            let inspect = ctx
                .eval::<Function, _>(INSPECT)
                .and_then(|make| make.call::<_, Function>(()))
                .map(|f| Persistent::save(&ctx, f))
                .map_err(init)?;
            let prelude = ctx
                .eval::<Function, _>(PRELUDE)
                .map(|f| Persistent::save(&ctx, f))
                .map_err(init)?;
            // The web globals (`URL`, `TextDecoder`, `EventTarget`, …) are defined here, once:
            // in a zygote every forked runner finds them in its copy-on-write heap.
            let bind = web::install(&ctx)
                .map(|f| Persistent::save(&ctx, f))
                .map_err(init)?;
            // `Intl` likewise: its data is compiled in, its constructors are made once.
            intl::install(&ctx).map_err(init)?;
            Ok::<_, EngineError>((prelude, inspect, bind))
        })?;
        Ok(Engine {
            prelude,
            web_bind,
            inspect,
            rt,
            ctx,
            random,
            clock,
        })
    }

    /// Seeds `Math.random` and `crypto` from the kernel. Called once per runner, after the
    /// fork (or exec) that made it and before its seccomp filter: no two runners share a seed.
    pub fn seed(&self) -> Result<(), EngineError> {
        self.random
            .reseed()
            .map_err(|e| EngineError::Init(e.to_string()))
    }

    /// Runs the script and sends its `execution_complete` frame (or the socket error).
    pub fn execute(&self, channel: Channel, req: ExecuteRequest) -> Result<(), EngineError> {
        // `performance.now()` counts from here, and `timeOrigin` is this moment's wall time.
        self.clock.start();
        let limits = req.limits;
        // A recorded or replayed execution: the host's seed, and a clock that keeps what it gave.
        let replay_clock = match &req.determinism {
            Some(d) => {
                if let Some(seed) = d.seed_bytes() {
                    self.random.seed_from(seed);
                }
                Some(Rc::new(RefCell::new(replay_clock::ClockLog::new(d))))
            }
            None => None,
        };
        heap::start_execution(usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX));
        self.rt
            .set_max_stack_size(usize::try_from(limits.stack_bytes).unwrap_or(usize::MAX));
        let budget = CpuBudget::start(Duration::from_millis(limits.cpu_ms));
        let handler_budget = budget.clone();
        self.rt
            .set_interrupt_handler(Some(Box::new(move || handler_budget.exceeded())));

        // Set when a promise is rejected with "out of memory" and nothing handles it.
        let out_of_memory = Arc::new(AtomicBool::new(false));
        let flag = out_of_memory.clone();
        self.rt.set_host_promise_rejection_tracker(Some(Box::new(
            move |_ctx, _promise, reason, handled| {
                // Without room for the error object QuickJS rejects with `null` (see `classify`).
                // Only the allocator's own refusal counts: a script can reject with the same words.
                let oom = heap::refused() && (is_out_of_memory(&reason) || reason.is_null());
                if !handled && oom {
                    flag.store(true, Ordering::Relaxed);
                }
            },
        )));

        let channel = Rc::new(RefCell::new(channel));
        channel.borrow_mut().set_log_budget(limits.log_bytes);
        let outcome = self.ctx.with(|ctx| {
            let bridge = Rc::new(Bridge::new(
                channel.clone(),
                &req.tools,
                &req.unavailable,
                limits.max_calls,
            ));
            let timers = Rc::new(Timers::default());
            let setup = |e: rquickjs::Error| {
                WireError::new("RUNTIME_ERROR", format!("runner setup failed: {e}"))
            };
            if let Ok(inspect) = self.inspect.clone().restore(&ctx) {
                bridge.set_inspect(inspect);
            }
            let outcome = self
                .prelude
                .clone()
                .restore(&ctx)
                .and_then(|p| Ok((p, self.web_bind.clone().restore(&ctx)?)))
                .map_err(setup)
                .and_then(|(prelude, web_bind)| {
                    web::bind_timers(&ctx, &timers, web_bind).map_err(setup)?;
                    if let Some(clock) = &replay_clock {
                        replay_clock::install_date(&ctx, clock).map_err(setup)?;
                    }
                    let natives = Natives {
                        bridge: &bridge,
                        timers: &timers,
                    };
                    run_script(&ctx, natives, prelude, &budget, &req, &out_of_memory)
                });
            bridge.clear();
            timers.clear_all();
            let broken = bridge.broken.borrow().clone();
            match broken {
                Some(reason) => Err(EngineError::Channel(reason)),
                None => Ok(outcome),
            }
        })?;
        let mut ch = channel.borrow_mut();
        if let Some(clock) = &replay_clock {
            let report = clock.borrow_mut().report();
            ch.send(&report)
                .map_err(|e| EngineError::Channel(e.to_string()))?;
        }
        let sent = match outcome {
            Ok(json) if json.len() as u64 > limits.result_bytes => ch.send_error(WireError::new(
                "LIMIT_EXCEEDED",
                format!(
                    "the result is {} bytes; the limit is {} bytes. Return less data (or summarize it in the script)",
                    json.len(),
                    limits.result_bytes
                ),
            )),
            Ok(json) => ch.send_result(&json),
            Err(err) => ch.send_error(err),
        };
        sent.map_err(|e| EngineError::Channel(e.to_string()))?;
        ch.flush_socket();
        Ok(())
    }
}

/// The per-execution state the script's natives share with the loop.
#[derive(Clone, Copy)]
struct Natives<'a, 'js> {
    bridge: &'a Rc<Bridge<'js>>,
    timers: &'a Timers<'js>,
}

/// Installs globals, evaluates the code and drives the job queue until the script settles.
/// Returns the result as JSON text, or the structured error.
fn run_script<'js>(
    ctx: &Ctx<'js>,
    natives: Natives<'_, 'js>,
    prelude: Function<'js>,
    budget: &CpuBudget,
    req: &ExecuteRequest,
    out_of_memory: &AtomicBool,
) -> Result<String, WireError> {
    let Natives { bridge, timers } = natives;
    let internal =
        |e: rquickjs::Error| WireError::new("RUNTIME_ERROR", format!("runner setup failed: {e}"));
    if let Some(at) = req.code.find('\0') {
        return Err(nul_in_source(&req.code, at));
    }
    install_context(ctx, &req.context)?;
    install_prelude(ctx, bridge, prelude).map_err(internal)?;

    let promise = match start(ctx, &req.code) {
        Ok(p) => p,
        Err(thrown) if budget.tripped() => {
            return Err(classify(ctx, budget, req.limits.cpu_ms, thrown))
        }
        Err(thrown) if thrown.is_null() => {
            return Err(classify(ctx, budget, req.limits.cpu_ms, thrown))
        }
        Err(thrown) => return Err(convert::compile_error(ctx, thrown)),
    };
    let wrapped = promise.1;
    let promise = promise.0;
    loop {
        while ctx.execute_pending_job() {
            if budget.tripped() {
                break;
            }
        }
        if bridge.broken.borrow().is_some() {
            return Err(WireError::new(
                "RUNNER_CRASHED",
                "lost the connection to the host",
            ));
        }
        if budget.tripped() {
            return Err(cpu_limit(req.limits.cpu_ms));
        }
        match promise.state() {
            PromiseState::Resolved => {
                let value: Value = promise
                    .result()
                    .unwrap_or_else(|| Ok(Value::new_undefined(ctx.clone())))
                    .map_err(internal)?;
                let value = if wrapped {
                    value
                } else {
                    // Top-level-await scripts resolve to `{value: <completion value>}`.
                    value
                        .as_object()
                        .and_then(|o| o.get::<_, Value>("value").ok())
                        .unwrap_or_else(|| Value::new_undefined(ctx.clone()))
                };
                return convert::result_json(ctx, value);
            }
            PromiseState::Rejected => {
                let _ = promise.result::<Value>();
                let thrown = ctx.catch();
                return Err(classify(ctx, budget, req.limits.cpu_ms, thrown));
            }
            PromiseState::Pending => {}
        }
        // The script waits: a due timer runs first (then its microtasks, at the top).
        let now = Instant::now();
        match timers.run_due(now) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => return Err(classify_err(ctx, budget, req.limits.cpu_ms, e)),
        }
        if bridge.in_flight() == 0 && timers.is_empty() {
            // The job queue is empty, no tool call is outstanding and no timer is pending: the
            // sandbox has no other I/O, so nothing can ever settle the script's promise.
            // Unless a job ran out of memory: its promise was rejected with QuickJS's
            // "out of memory" and nothing handled it (a growing promise chain just stops),
            // which is the memory budget, not the script's own deadlock.
            if out_of_memory.load(Ordering::Relaxed) {
                return Err(convert::memory_limit());
            }
            return Err(deadlock());
        }
        wait_for_host(ctx, natives, now)
            .map_err(|e| e.unwrap_or_else(|e| classify_err(ctx, budget, req.limits.cpu_ms, e)))?;
    }
}

/// Nothing left to run: waits for the host to answer a call or wake a timer, and settles the
/// call's promise. `Err(Ok(_))` ends the script with that error; `Err(Err(_))` is an exception
/// thrown while settling.
fn wait_for_host<'js>(
    ctx: &Ctx<'js>,
    natives: Natives<'_, 'js>,
    now: Instant,
) -> Result<(), Result<WireError, rquickjs::Error>> {
    let Natives { bridge, timers } = natives;
    let lost = |e: String| {
        *bridge.broken.borrow_mut() = Some(e);
        Ok(WireError::new(
            "RUNNER_CRASHED",
            "lost the connection to the host",
        ))
    };
    if let Some(ms) = timers.sleep_request(now) {
        if let Err(e) = bridge.channel.borrow_mut().send_sleep(ms) {
            return Err(lost(e.to_string()));
        }
    }
    let received = bridge.channel.borrow_mut().recv_owned();
    let frame = received.map_err(|e| lost(e.to_string()))?;
    if frame == raw::WAKE {
        timers.woken();
        bridge.channel.borrow_mut().restore(frame);
        return Ok(());
    }
    let settled = match raw::decode_rpc_result(&frame) {
        // Settling runs JS, which may send frames: the channel is not borrowed here.
        Ok(r) => bridge.settle(ctx, r).map_err(Err),
        Err(reason) => {
            *bridge.broken.borrow_mut() = Some(format!("bad frame from host: {reason}"));
            Err(Ok(WireError::new(
                "RUNNER_CRASHED",
                "bad frame from the host",
            )))
        }
    };
    bridge.channel.borrow_mut().restore(frame);
    settled
}

/// A NUL character in the source: QuickJS takes the source as a C string and cannot compile it.
pub fn nul_in_source(code: &str, at: usize) -> WireError {
    let before = &code[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    WireError::new(
        "SYNTAX_ERROR",
        format!(
            "the script contains a NUL character (U+0000) at line {line}, column {column}; \
             remove it (inside a string literal, write \\0 or \\u0000 instead)"
        ),
    )
}

/// The error of a script waiting on a promise that nothing can settle.
pub fn deadlock() -> WireError {
    WireError::new(
        "DEADLOCK",
        "the script is waiting on a promise that nothing can settle: no tool call is in flight \
         and no timer is pending. Await only promises that a tool call, a timer or your own \
         code settles",
    )
}

pub fn cpu_limit(cpu_ms: u64) -> WireError {
    WireError::new(
        "CPU_LIMIT",
        format!("the script used more than {cpu_ms} ms of CPU time (time waiting on tools does not count); look for an endless loop or raise --cpu-ms"),
    )
}

fn classify<'js>(ctx: &Ctx<'js>, budget: &CpuBudget, cpu_ms: u64, thrown: Value<'js>) -> WireError {
    if budget.tripped() {
        return cpu_limit(cpu_ms);
    }
    // When QuickJS cannot even allocate the error object it throws `null`; the heap is then at
    // its limit (the garbage stays until the runtime is freed).
    if thrown.is_null() && heap::refused() {
        return convert::memory_limit();
    }
    convert::thrown_to_error(ctx, thrown)
}

/// Whether a thrown value is QuickJS's "out of memory" error.
fn is_out_of_memory(thrown: &Value<'_>) -> bool {
    thrown
        .as_object()
        .and_then(|o| o.get::<_, String>("message").ok())
        .is_some_and(|m| m == "out of memory")
}

fn classify_err<'js>(
    ctx: &Ctx<'js>,
    budget: &CpuBudget,
    cpu_ms: u64,
    e: rquickjs::Error,
) -> WireError {
    if e.is_exception() {
        let thrown = ctx.catch();
        return classify(ctx, budget, cpu_ms, thrown);
    }
    WireError::new("RUNTIME_ERROR", e.to_string())
}

/// Evaluates the user's code. Returns the promise and whether the code was wrapped in an async
/// function (because it uses a top-level `return`).
fn start<'js>(ctx: &Ctx<'js>, code: &str) -> Result<(Promise<'js>, bool), Value<'js>> {
    let opts = || {
        let mut o = EvalOptions::default();
        o.global = true;
        o.strict = true;
        o.filename = Some(SCRIPT_NAME.to_string());
        o
    };
    // First as a script with top-level await: its completion value is the result when there is
    // no `return`. A top-level `return` is a syntax error there (nothing has run yet), so the
    // code is then compiled as the body of an async function, kept on the same first line so
    // line numbers in errors match the user's source.
    let mut o = opts();
    o.promise = true;
    match ctx.eval_with_options::<Promise, _>(code, o) {
        Ok(p) => return Ok((p, false)),
        Err(e) if e.is_exception() => {
            let thrown = ctx.catch();
            if !is_top_level_return(&thrown) {
                return Err(thrown);
            }
        }
        Err(e) => {
            return Err(rquickjs::String::from_str(ctx.clone(), &e.to_string())
                .map(|s| s.into_value())
                .unwrap_or_else(|_| Value::new_undefined(ctx.clone())))
        }
    }
    let wrapped = format!("(async () => {{{code}\n}})()");
    match ctx.eval_with_options::<Promise, _>(wrapped, opts()) {
        Ok(p) => Ok((p, true)),
        Err(e) if e.is_exception() => Err(ctx.catch()),
        Err(e) => Err(rquickjs::String::from_str(ctx.clone(), &e.to_string())
            .map(|s| s.into_value())
            .unwrap_or_else(|_| Value::new_undefined(ctx.clone()))),
    }
}

fn is_top_level_return(thrown: &Value<'_>) -> bool {
    thrown
        .as_exception()
        .and_then(|e| e.message())
        .is_some_and(|m| m.contains("return not in a function"))
}

fn install_context<'js>(ctx: &Ctx<'js>, context: &Map<String, Json>) -> Result<(), WireError> {
    let globals = ctx.globals();
    for (name, value) in context {
        if let Some(problem) = crate::protocol::context_key_problem(name) {
            return Err(WireError::new("INVALID_ARGUMENTS", problem));
        }
        let text = value.to_string();
        let v = ctx
            .json_parse(text)
            .map_err(|e| WireError::new("INVALID_ARGUMENTS", format!("context '{name}': {e}")))?;
        globals
            .set(name.as_str(), v)
            .map_err(|e| WireError::new("INVALID_ARGUMENTS", format!("context '{name}': {e}")))?;
    }
    Ok(())
}

pub use crate::protocol::is_identifier;

fn install_prelude<'js>(
    ctx: &Ctx<'js>,
    bridge: &Rc<Bridge<'js>>,
    prelude: Function<'js>,
) -> rquickjs::Result<()> {
    let b = bridge.clone();
    let call = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, server: String, tool: String, args: Opt<Value<'js>>| {
            b.call(ctx, server, tool, args)
        },
    )?;
    let b = bridge.clone();
    let log = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, level: String, args: Rest<Value<'js>>| b.log(ctx, level, args),
    )?;
    let tools = bridge.tools_object(ctx)?;
    prelude.call::<_, ()>((call, log, tools))
}

#[cfg(test)]
mod tests;
