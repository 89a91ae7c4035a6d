//! Python, one script per process, on monty (a Python subset interpreter in Rust) — behind the
//! same lockdown, frames and limits as the JavaScript engine.
//!
//! monty runs the script until it needs the host: a tool call (`await mcp.fixture.echo(...)`)
//! suspends it; the runner sends the `rpc_call`, resumes with a pending future and goes on, so
//! the calls of an `asyncio.gather` are all in flight before it blocks on the socket for the
//! first result. `print` lines are logs, sent as they are printed.

pub mod alloc;
mod host;
pub mod nesting;
mod os_calls;
mod outcome;
mod printer;
mod values;

use crate::engine::channel::Channel;
use crate::engine::cpu::CpuBudget;
use crate::engine::{EngineError, ExecuteRequest};
use crate::protocol::{raw, FrameError, WireError, STATE_SERVER};
use host::{Host, Route};
use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExtFunctionResult, MontyException, MontyObject, PrintWriter, ResourceLimits,
    ResourceTracker,
};
use outcome::Raised;
use printer::Printer;
use std::collections::HashMap;
use std::time::Duration;

/// The name monty gives the script in tracebacks (`File "script.py", line 3`).
pub const SCRIPT_NAME: &str = "script.py";

/// What a state call's answer becomes in the script.
#[derive(Clone, Copy)]
enum Shape {
    /// The tool's result, as is.
    Value,
    /// `store`: None.
    Nothing,
    /// `load`: the value, or None when there is none.
    Loaded,
}

/// One execution's state between the interpreter's suspensions.
struct Script<'c> {
    channel: &'c mut Channel,
    host: Host,
    /// `rpc_call` id → (monty's call id, what its answer becomes).
    waiting: HashMap<u64, (u32, Shape, String)>,
    /// Answers that came before the script waited on them, by monty's call id.
    ready: HashMap<u32, ExtFunctionResult>,
    next_id: u64,
    calls: u64,
    max_calls: u64,
    raised: Raised,
    /// The limits monty enforces (see [`outcome::Limits`]).
    limits: outcome::Limits,
    /// The execution's memory limit, which the runner checks itself on what it holds for the
    /// script (answers not yet awaited).
    memory_bytes: u64,
    printer: printer::Lines,
    budget: CpuBudget,
    cpu_ms: u64,
    broken: Option<String>,
    /// The clock of a recorded or replayed execution (`None`: the plain clock).
    clock: Option<crate::engine::replay_clock::ClockLog>,
}

/// What a script's first use of some modules would otherwise do after the seccomp filter is in
/// place: the regex engine sizes its cache pool once from `available_parallelism`, which reads
/// `/proc/self/cgroup` (an `openat`, which the filter kills). Run once before the lockdown (in a
/// zygote, before any fork): every such lazy value is then already set.
const WARM_UP: &str = "import re\nimport json\nimport datetime\nre.findall(r'[a-z]+', 'warm up')\nre.sub(r'(a)', r'\\1', 'a')\njson.loads(json.dumps({'a': [1.5]}))\ndatetime.date(2026, 1, 1).strftime('%Y')\nf'{1.5:.1f}'\n";

/// Runs [`WARM_UP`]; called before the lockdown.
pub fn preload() {
    if let Ok(run) = MontyRun::new(
        WARM_UP.to_string(),
        SCRIPT_NAME,
        Vec::new(),
        CompileOptions::default(),
    ) {
        let _ = run.run(
            Vec::new(),
            ResourceTracker::default(),
            PrintWriter::Disabled,
        );
    }
}

/// Runs the script and sends its `execution_complete` frame.
pub fn execute(mut channel: Channel, req: ExecuteRequest) -> Result<(), EngineError> {
    let limits = req.limits;
    channel.set_log_budget(limits.log_bytes);
    alloc::arm();
    let mut script = Script {
        host: Host::new(&req.tools, &req.unavailable),
        channel: &mut channel,
        waiting: HashMap::new(),
        ready: HashMap::new(),
        next_id: 1,
        calls: 0,
        max_calls: limits.max_calls,
        raised: Raised::default(),
        limits: outcome::Limits::new(limits.cpu_ms, limits.memory_bytes),
        memory_bytes: limits.memory_bytes,
        printer: printer::Lines::default(),
        budget: CpuBudget::start(Duration::from_millis(limits.cpu_ms)),
        cpu_ms: limits.cpu_ms,
        broken: None,
        clock: req
            .determinism
            .as_ref()
            .map(crate::engine::replay_clock::ClockLog::new),
    };
    // An interpreter bug that panics ends this one script with an error, not the runner unheard.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| script.run(&req)))
        .unwrap_or_else(|_| {
            Err(WireError::new(
                "RUNTIME_ERROR",
                "the Python interpreter failed on this script (an internal error of monty); \
                 simplify the construct on the failing line or write the script in JavaScript",
            ))
        });
    script.flush_print();
    if let Some(reason) = script.broken.take() {
        return Err(EngineError::Channel(reason));
    }
    if let Some(report) = script.clock.as_mut().map(|c| c.report()) {
        channel
            .send(&report)
            .map_err(|e| EngineError::Channel(e.to_string()))?;
    }
    let sent = match result.and_then(|v| outcome::result_json(&v, limits.result_bytes)) {
        Ok(json) => channel.send_result(&json),
        Err(err) => channel.send_error(err),
    };
    sent.map_err(|e| EngineError::Channel(e.to_string()))?;
    channel.flush_socket();
    Ok(())
}

impl Script<'_> {
    fn run(&mut self, req: &ExecuteRequest) -> Result<MontyObject, WireError> {
        if let Some(at) = req.code.find('\0') {
            return Err(outcome::nul_in_source(&req.code, at));
        }
        if let Err(at) = nesting::deepest_over(req.code.as_bytes(), nesting::MAX_NESTING) {
            return Err(WireError::new(
                "LIMIT_EXCEEDED",
                format!(
                    "line {}: the script nests expressions more than {} levels deep (each open \
                     bracket, and each operator of one chain such as 1+1+… or a.b.c…, is a \
                     level; monty accepts 200): build the value in steps, with a loop or \
                     intermediate variables",
                    nesting::line_of(&req.code, at),
                    nesting::MAX_NESTING
                ),
            ));
        }
        let mut names = vec!["mcp".to_string()];
        let mut inputs = vec![self.host.mcp_object()];
        for (name, value) in &req.context {
            if let Some(problem) = crate::protocol::python_context_key_problem(name) {
                return Err(WireError::new("INVALID_ARGUMENTS", problem));
            }
            names.push(name.clone());
            inputs.push(values::from_json(value));
        }
        let compiled = MontyRun::new(
            req.code.clone(),
            SCRIPT_NAME,
            names,
            CompileOptions::default(),
        )
        .map_err(|e| outcome::compile_error(&e))?;
        let limits = ResourceLimits {
            // Time spent running Python, not waiting on tools (monty stops its clock while
            // suspended); the runner's own CPU-time budget is checked at every suspension.
            max_duration: Some(self.limits.duration),
            max_memory: self.limits.memory,
            // monty's guard on recursion also bounds how deep a value it converts may be: one
            // more than the deepest value that may cross (the module's own frame counts).
            max_recursion_depth: values::MAX_DEPTH + 1,
            ..ResourceLimits::default()
        };
        let started = {
            let mut out = Printer::new(&mut *self.channel, &mut self.printer);
            compiled.start(
                inputs,
                ResourceTracker::new(limits),
                PrintWriter::Callback(&mut out),
            )
        };
        let mut progress = started.map_err(|e| self.failed(e))?;
        loop {
            if self.broken.is_some() {
                return Err(lost());
            }
            if self.budget.exceeded() {
                return Err(outcome::cpu_limit(self.cpu_ms));
            }
            let next = match progress {
                RunProgress::Complete(value) => return Ok(value),
                RunProgress::FunctionCall(call) => {
                    let answer = self.start_call(
                        &call.function_name,
                        call.object_id,
                        &call.args,
                        &call.kwargs,
                        call.call_id,
                    );
                    let mut out = Printer::new(&mut *self.channel, &mut self.printer);
                    call.resume(answer, PrintWriter::Callback(&mut out))
                }
                RunProgress::ResolveFutures(pending) => {
                    let results = self.wait(pending.pending_call_ids())?;
                    let mut out = Printer::new(&mut *self.channel, &mut self.printer);
                    pending.resume(results, PrintWriter::Callback(&mut out))
                }
                RunProgress::NameLookup(lookup) => {
                    let answer = match self.host.lookup(&lookup.name, lookup.object_id()) {
                        Ok(answer) => answer,
                        Err(err) => monty_types::NameLookupResult::Error(self.raised.note(err)),
                    };
                    let mut out = Printer::new(&mut *self.channel, &mut self.printer);
                    lookup.resume(answer, PrintWriter::Callback(&mut out))
                }
                RunProgress::OsCall(call) => {
                    let clock = self.clock.as_mut();
                    let mut out = Printer::new(&mut *self.channel, &mut self.printer);
                    call.resume_with(PrintWriter::Callback(&mut out), |c| {
                        os_calls::answer(c, clock)
                    })
                }
            };
            progress = next.map_err(|e| self.failed(e))?;
        }
    }

    /// The script's exception as its outcome.
    fn failed(&mut self, e: MontyException) -> WireError {
        if let Some(reason) = self.printer.broken.take() {
            self.broken = Some(reason);
            return lost();
        }
        if self.budget.tripped() {
            return outcome::cpu_limit(self.cpu_ms);
        }
        outcome::runtime_error(&e, &self.raised, &self.limits, self.cpu_ms)
    }

    /// A call the interpreter suspended on: sent to the host (the script gets a pending future),
    /// or refused in the script.
    fn start_call(
        &mut self,
        name: &str,
        object: Option<monty_types::MontyUuid>,
        args: &[MontyObject],
        kwargs: &[(MontyObject, MontyObject)],
        call_id: u32,
    ) -> ExtFunctionResult {
        let (server, tool) = match self.host.route(name, object) {
            Route::Call { server, tool } => (server, tool),
            Route::Raise(e) => return e.into(),
            Route::Fail(err) => return self.raised.note(err).into(),
            Route::NotFound(name) => return ExtFunctionResult::NotFound(name),
        };
        let (args_json, shape) = match call_arguments(&server, &tool, args, kwargs) {
            Ok(a) => a,
            Err((code, message)) => return self.raise(code, &message, &server, &tool),
        };
        if self.calls >= self.max_calls {
            let message = format!(
                "the script made more than {} tool calls (the max-calls limit)",
                self.max_calls
            );
            return self.raise("LIMIT_EXCEEDED", &message, &server, &tool);
        }
        self.calls += 1;
        let id = self.next_id;
        self.next_id += 1;
        match self.channel.send_rpc_call(id, &server, &tool, &args_json) {
            Ok(()) => {
                self.waiting
                    .insert(id, (call_id, shape, format!("{server}:{tool}")));
                ExtFunctionResult::Future(call_id)
            }
            Err(FrameError::TooDeep { depth, max }) => {
                let message = format!(
                    "arguments of {server}:{tool} are nested {depth} levels deep; values sent to \
                     or from tools may nest at most {max} levels"
                );
                self.raise("LIMIT_EXCEEDED", &message, &server, &tool)
            }
            Err(FrameError::TooLarge { len, max }) => {
                let message = format!(
                    "arguments of {server}:{tool} are {len} bytes; the frame limit is {max}"
                );
                self.raise("LIMIT_EXCEEDED", &message, &server, &tool)
            }
            Err(other) => {
                self.broken = Some(other.to_string());
                host::exception(
                    monty_types::ExcType::RuntimeError,
                    "RUNNER_CRASHED: lost the connection to the host".into(),
                )
                .into()
            }
        }
    }

    /// The exception of a failed call, noted so that it keeps its code if it ends the script.
    fn raise(&mut self, code: &str, message: &str, server: &str, tool: &str) -> ExtFunctionResult {
        let mut err = WireError::new(code, message);
        err.tool = Some(format!("{server}:{tool}"));
        self.raised.note(err).into()
    }

    /// Blocks until the host answers one of the calls the script waits on.
    fn wait(&mut self, pending: &[u32]) -> Result<Vec<(u32, ExtFunctionResult)>, WireError> {
        let early: Vec<u32> = pending
            .iter()
            .copied()
            .filter(|id| self.ready.contains_key(id))
            .collect();
        if !early.is_empty() {
            return Ok(early
                .into_iter()
                .filter_map(|id| self.ready.remove(&id).map(|answer| (id, answer)))
                .collect());
        }
        if self.waiting.is_empty() {
            return Err(crate::engine::deadlock());
        }
        loop {
            let frame = match self.channel.recv_owned() {
                Ok(f) => f,
                Err(e) => {
                    self.broken = Some(e.to_string());
                    return Err(lost());
                }
            };
            if frame == raw::WAKE {
                self.channel.restore(frame);
                continue;
            }
            let settled = match raw::decode_rpc_result(&frame) {
                Ok(r) => match self.waiting.remove(&r.id) {
                    Some((call_id, shape, tool)) => Ok((call_id, self.settle(r, shape, tool))),
                    None => Err(format!("rpc_result for unknown id {}", r.id)),
                },
                Err(e) => Err(format!("bad frame from host: {e}")),
            };
            self.channel.restore(frame);
            // Answers held for the script count against its memory limit, checked by the
            // runner itself: monty sees them only once they are handed over.
            if alloc::live() as u64 > self.memory_bytes {
                return Err(outcome::memory_limit());
            }
            match settled {
                Ok((call_id, answer)) if pending.contains(&call_id) => {
                    return Ok(vec![(call_id, answer)])
                }
                // Not awaited yet: kept for when it is.
                Ok((call_id, answer)) => {
                    self.ready.insert(call_id, answer);
                }
                Err(reason) => {
                    self.broken = Some(reason);
                    return Err(lost());
                }
            }
        }
    }

    fn settle(
        &mut self,
        r: raw::RpcResultRef<'_>,
        shape: Shape,
        tool: String,
    ) -> ExtFunctionResult {
        if !r.success {
            let err = r
                .error
                .unwrap_or_else(|| WireError::new("TOOL_ERROR", "the tool call failed"));
            return self.raised.note(err).into();
        }
        let value = match r.result.map(|raw| values::parse_answer(raw.get())) {
            None => serde_json::Value::Null,
            Some(Ok(value)) => value,
            Some(Err(why)) => {
                let mut err = WireError::new("LIMIT_EXCEEDED", format!("{tool}: {why}"));
                err.tool = Some(tool);
                return self.raised.note(err).into();
            }
        };
        match shape {
            Shape::Value => values::from_json(&value).into(),
            Shape::Nothing => MontyObject::None.into(),
            Shape::Loaded => match value.get("found") {
                Some(serde_json::Value::Bool(true)) => {
                    values::from_json(value.get("value").unwrap_or(&serde_json::Value::Null)).into()
                }
                _ => MontyObject::None.into(),
            },
        }
    }

    fn flush_print(&mut self) {
        let mut out = Printer::new(&mut *self.channel, &mut self.printer);
        out.finish();
        if let Some(reason) = self.printer.broken.take() {
            self.broken.get_or_insert(reason);
        }
    }
}

fn lost() -> WireError {
    WireError::new("RUNNER_CRASHED", "lost the connection to the host")
}

/// A call's arguments as the JSON object sent to the host: keyword arguments, or one dict.
/// `Err((code, message))`: `INVALID_ARGUMENTS`, or `STATE_VALUE_INVALID` for a value `store`
/// cannot keep.
fn call_arguments(
    server: &str,
    tool: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Result<(String, Shape), (&'static str, String)> {
    let what = format!("the arguments of {server}:{tool}");
    if server == STATE_SERVER {
        return state_arguments(tool, args, kwargs);
    }
    let invalid = |r: values::Refusal| (r.code("INVALID_ARGUMENTS"), r.message());
    let object = match (args, kwargs) {
        ([], kw) => {
            values::to_json(&MontyObject::Dict(kw.to_vec().into()), &what).map_err(invalid)?
        }
        ([dict @ MontyObject::Dict(_)], []) => values::to_json(dict, &what).map_err(invalid)?,
        ([MontyObject::None], []) => serde_json::json!({}),
        _ => {
            return Err((
                "INVALID_ARGUMENTS",
                format!(
                "{what} must be keyword arguments, like mcp.{server}.{tool}(name=value), or one \
                 dict, like mcp.{server}.{tool}({{\"name\": value}})"
            ),
            ))
        }
    };
    Ok((object.to_string(), Shape::Value))
}

/// `store(key, value)`, `load(key)`, `keys()`, `remove(key)` as the host's `$state` operations.
fn state_arguments(
    op: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Result<(String, Shape), (&'static str, String)> {
    let arg = |i: usize, name: &str| -> Option<&MontyObject> {
        args.get(i).or_else(|| {
            kwargs
                .iter()
                .find(|(k, _)| matches!(k, MontyObject::String(s) if s == name))
                .map(|(_, v)| v)
        })
    };
    let key = || match arg(0, "key") {
        Some(MontyObject::String(k)) => Ok(k.clone()),
        _ => Err((
            "INVALID_ARGUMENTS",
            format!("{op}() takes the key as a str first: {op}(\"name\"…)"),
        )),
    };
    let body = match op {
        "store" => {
            let value = arg(1, "value").ok_or_else(|| {
                (
                    "INVALID_ARGUMENTS",
                    "store() takes a key and a value: store(\"name\", value)".to_string(),
                )
            })?;
            let key = key()?;
            let what = format!("the value stored under {key:?}");
            let value = values::to_json(value, &what)
                .map_err(|r| (r.code("STATE_VALUE_INVALID"), r.message()))?;
            serde_json::json!({"key": key, "value": value})
        }
        "load" | "remove" => serde_json::json!({"key": key()?}),
        _ => serde_json::json!({}),
    };
    let shape = match op {
        "store" => Shape::Nothing,
        "load" => Shape::Loaded,
        _ => Shape::Value,
    };
    Ok((body.to_string(), shape))
}
