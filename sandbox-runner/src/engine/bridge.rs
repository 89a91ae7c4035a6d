//! The natives behind `mcp.<server>.<tool>(args)` and `console.*`: they check the name, send an
//! `rpc_call` frame and keep the promise's resolve/reject functions until the host answers.

use super::channel::Channel;
use super::convert::describe;
use crate::protocol::{
    is_reserved_name, raw::RpcResultRef, LogLevel, ToolRef, UnavailableServer, WireError,
};
use rquickjs::function::{Opt, Rest};
use rquickjs::{Ctx, Exception, Function, Object, Promise, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// State shared by the natives and the runner loop for one execution.
pub struct Bridge<'js> {
    pub channel: Rc<RefCell<Channel>>,
    tools: BTreeMap<String, BTreeSet<String>>,
    /// Each unavailable server's code and reason.
    unavailable: HashMap<String, (&'static str, String)>,
    pending: RefCell<HashMap<u64, (Function<'js>, Function<'js>)>>,
    next_id: Cell<u64>,
    calls: Cell<u64>,
    max_calls: u64,
    /// Set when the socket failed: the loop stops at the next turn.
    pub broken: RefCell<Option<String>>,
    /// How `console.*` shows values that are not strings (`inspect.js`).
    inspect: RefCell<Option<Function<'js>>>,
    /// The `JSON.stringify` replacer of tool arguments, made at the first call (stateless, so
    /// one serves every call).
    replacer: RefCell<Option<Function<'js>>>,
}

impl<'js> Bridge<'js> {
    pub fn new(
        channel: Rc<RefCell<Channel>>,
        tools: &[ToolRef],
        unavailable: &[UnavailableServer],
        max_calls: u64,
    ) -> Self {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for t in tools {
            if is_reserved_name(&t.server) || is_reserved_name(&t.name) {
                continue;
            }
            map.entry(t.server.clone())
                .or_default()
                .insert(t.name.clone());
        }
        for u in unavailable {
            map.entry(u.server.clone()).or_default();
        }
        Bridge {
            channel,
            tools: map,
            unavailable: unavailable
                .iter()
                .map(|u| (u.server.clone(), (u.code(), u.reason.clone())))
                .collect(),
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(1),
            calls: Cell::new(0),
            max_calls,
            broken: RefCell::new(None),
            inspect: RefCell::new(None),
            replacer: RefCell::new(None),
        }
    }

    /// The formatter `console.*` uses for values that are not strings.
    pub fn set_inspect(&self, inspect: Function<'js>) {
        *self.inspect.borrow_mut() = Some(inspect);
    }

    /// `{server: [tool, ...]}` for the prelude.
    pub fn tools_object(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
        let obj = Object::new(ctx.clone())?;
        for (server, tools) in &self.tools {
            let names: Vec<&str> = tools.iter().map(String::as_str).collect();
            obj.set(server.as_str(), names)?;
        }
        Ok(obj)
    }

    /// How many tool calls were sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.pending.borrow().len()
    }

    /// Drops every pending resolver (they hold JS values that must not outlive the context).
    pub fn clear(&self) {
        self.pending.borrow_mut().clear();
        self.inspect.borrow_mut().take();
        self.replacer.borrow_mut().take();
    }

    /// [`super::convert::finite_replacer`], made once per execution.
    fn replacer(&self, ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
        if let Some(f) = self.replacer.borrow().as_ref() {
            return Ok(f.clone());
        }
        let f = super::convert::finite_replacer(ctx)?;
        *self.replacer.borrow_mut() = Some(f.clone());
        Ok(f)
    }

    fn check(&self, server: &str, tool: &str) -> Result<(), WireError> {
        if let Some((code, reason)) = self.unavailable.get(server) {
            let mut e = WireError::new(
                *code,
                format!("MCP server '{server}' is unavailable: {reason}"),
            );
            e.tool = Some(format!("{server}:{tool}"));
            super::convert::note_call_error(&e);
            return Err(e);
        }
        // Session state goes to the host like a tool call; the host answers it from the store.
        if server == crate::protocol::STATE_SERVER
            && crate::protocol::STATE_OPERATIONS.contains(&tool)
        {
            return Ok(());
        }
        let known = !is_reserved_name(server)
            && !is_reserved_name(tool)
            && self.tools.get(server).is_some_and(|t| t.contains(tool));
        if known {
            return Ok(());
        }
        let alternatives = super::suggest::closest(&self.tools, server, tool);
        let hint = if alternatives.is_empty() {
            "list the available tools with `Object.keys(mcp)` and `Object.keys(mcp.<server>)`"
                .to_string()
        } else {
            format!("did you mean {}?", alternatives.join(", "))
        };
        let mut e = WireError::new(
            "TOOL_NOT_FOUND",
            format!("unknown tool '{server}:{tool}'; {hint}"),
        );
        e.tool = Some(format!("{server}:{tool}"));
        e.alternatives = Some(alternatives);
        Err(e)
    }

    /// The native behind every tool proxy. Always returns a promise; never throws synchronously.
    pub fn call(
        self: &Rc<Self>,
        ctx: Ctx<'js>,
        server: String,
        tool: String,
        args: Opt<Value<'js>>,
    ) -> rquickjs::Result<Promise<'js>> {
        let (promise, resolve, reject) = ctx.promise()?;
        match self.start_call(&ctx, &server, &tool, args.0) {
            Ok(id) => {
                self.pending.borrow_mut().insert(id, (resolve, reject));
            }
            Err(err) => {
                reject.call::<_, ()>((error_object(&ctx, &err)?,))?;
            }
        }
        Ok(promise)
    }

    fn start_call(
        &self,
        ctx: &Ctx<'js>,
        server: &str,
        tool: &str,
        args: Option<Value<'js>>,
    ) -> Result<u64, WireError> {
        self.check(server, tool)?;
        let tool_name = format!("{server}:{tool}");
        let invalid = |msg: String| {
            let mut e = WireError::new("INVALID_ARGUMENTS", msg);
            e.tool = Some(tool_name.clone());
            e
        };
        let args_json = match args {
            None => "{}".to_string(),
            Some(v) if v.is_undefined() || v.is_null() => "{}".to_string(),
            Some(v) if v.is_object() && !v.is_array() && !v.is_function() => {
                let replacer = self
                    .replacer(ctx)
                    .map_err(|e| invalid(format!("arguments of {tool_name}: {e}")))?;
                match ctx.json_stringify_replacer(v, replacer) {
                    Ok(Some(s)) => crate::protocol::replace_lone_surrogates(
                        s.to_string().map_err(|e| invalid(e.to_string()))?,
                    ),
                    Ok(None) => "{}".to_string(),
                    Err(_) => {
                        let thrown = ctx.catch();
                        if server == crate::protocol::STATE_SERVER {
                            // A value `store` cannot keep: the state's own code, in both
                            // languages.
                            let mut e = WireError::new(
                                "STATE_VALUE_INVALID",
                                format!(
                                    "{tool}() was refused: the value cannot be stored as JSON: {}; store plain data (objects, arrays, strings, numbers, booleans, null)",
                                    describe(ctx, thrown)
                                ),
                            );
                            e.tool = Some(tool_name.clone());
                            return Err(e);
                        }
                        return Err(invalid(format!(
                            "arguments of {tool_name} cannot be sent as JSON: {}",
                            describe(ctx, thrown)
                        )));
                    }
                }
            }
            Some(_) => {
                return Err(invalid(format!(
                    "arguments of {tool_name} must be an object, like {{ name: value }}"
                )))
            }
        };
        let n = self.calls.get() + 1;
        if n > self.max_calls {
            let mut e = WireError::new(
                "LIMIT_EXCEEDED",
                format!(
                    "the script made more than {} tool calls (the max-calls limit)",
                    self.max_calls
                ),
            );
            e.tool = Some(tool_name);
            return Err(e);
        }
        self.calls.set(n);
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let sent = self
            .channel
            .borrow_mut()
            .send_rpc_call(id, server, tool, &args_json);
        match sent {
            Ok(()) => Ok(id),
            Err(crate::protocol::FrameError::TooDeep { depth, max }) => {
                let mut e = WireError::new(
                    "LIMIT_EXCEEDED",
                    format!(
                        "arguments of {tool_name} are nested {depth} levels deep; values sent to \
                         or from tools may nest at most {max} levels"
                    ),
                );
                e.tool = Some(tool_name);
                Err(e)
            }
            Err(crate::protocol::FrameError::TooLarge { len, max }) => {
                let mut e = WireError::new(
                    "LIMIT_EXCEEDED",
                    format!("arguments of {tool_name} are {len} bytes; the frame limit is {max}"),
                );
                e.tool = Some(tool_name);
                Err(e)
            }
            Err(other) => {
                *self.broken.borrow_mut() = Some(other.to_string());
                Err(WireError::new(
                    "RUNNER_CRASHED",
                    "lost the connection to the host",
                ))
            }
        }
    }

    /// Settles the promise of an `rpc_result`. An id that is not pending means the host broke the
    /// protocol; the runner stops.
    pub fn settle(&self, ctx: &Ctx<'js>, r: RpcResultRef<'_>) -> rquickjs::Result<()> {
        let entry = self.pending.borrow_mut().remove(&r.id);
        let Some((resolve, reject)) = entry else {
            *self.broken.borrow_mut() = Some(format!("rpc_result for unknown id {}", r.id));
            return Ok(());
        };
        if r.success {
            let value = match r.result {
                Some(raw) => ctx.json_parse(raw.get())?,
                None => Value::new_null(ctx.clone()),
            };
            resolve.call::<_, ()>((value,))
        } else {
            let err = r
                .error
                .unwrap_or_else(|| WireError::new("TOOL_ERROR", "the tool call failed"));
            super::convert::note_call_error(&err);
            reject.call::<_, ()>((error_object(ctx, &err)?,))
        }
    }

    /// The native behind `console.*`.
    pub fn log(&self, ctx: Ctx<'js>, level: String, args: Rest<Value<'js>>) {
        let level = match level.as_str() {
            "info" => LogLevel::Info,
            "warn" => LogLevel::Warn,
            "error" => LogLevel::Error,
            "debug" => LogLevel::Debug,
            _ => LogLevel::Log,
        };
        let inspect = self.inspect.borrow().clone();
        let message = args
            .0
            .into_iter()
            .map(|v| super::convert::describe_with(&ctx, v, inspect.as_ref()))
            .collect::<Vec<_>>()
            .join(" ");
        if let Err(e) = self.channel.borrow_mut().send_log(level, message) {
            *self.broken.borrow_mut() = Some(e.to_string());
        }
    }
}

/// An `Error` carrying `code`, `tool` and `alternatives`, as scripts see tool failures.
pub fn error_object<'js>(ctx: &Ctx<'js>, err: &WireError) -> rquickjs::Result<Value<'js>> {
    let e = Exception::from_message(ctx.clone(), &err.message)?;
    e.set("code", err.code.as_str())?;
    if let Some(tool) = &err.tool {
        e.set("tool", tool.as_str())?;
    }
    if let Some(alts) = &err.alternatives {
        e.set("alternatives", alts.clone())?;
    }
    Ok(e.into_value())
}
