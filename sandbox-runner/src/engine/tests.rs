//! The engine driven in-process over a real socketpair, with a thread playing the host.

use super::*;
use crate::protocol::{decode_payload, encode_frame, HostMessage, RunnerMessage};
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

/// Runs `code` with tools `fx.echo`, `fx.fail`; the fake host answers echo with its args and fail
/// with TOOL_ERROR. Returns every frame the runner sent.
fn run(code: &str, limits: RunnerLimits) -> Vec<RunnerMessage> {
    let (a, mut b) = UnixStream::pair().unwrap();
    let host = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        loop {
            let mut len = [0u8; 4];
            if b.read_exact(&mut len).is_err() {
                break;
            }
            let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
            b.read_exact(&mut payload).unwrap();
            let msg: RunnerMessage = decode_payload(&payload).unwrap();
            if let RunnerMessage::RpcCall { id, tool, args, .. } = &msg {
                let reply = if tool != "fail" {
                    HostMessage::RpcResult {
                        id: *id,
                        success: true,
                        result: Some(args.clone()),
                        error: None,
                    }
                } else {
                    HostMessage::RpcResult {
                        id: *id,
                        success: false,
                        result: None,
                        error: Some(WireError::new("TOOL_ERROR", "it failed")),
                    }
                };
                encode_frame(&reply, 1 << 20, &mut buf).unwrap();
                b.write_all(&buf).unwrap();
            }
            let done = matches!(msg, RunnerMessage::ExecutionComplete { .. });
            seen.push(msg);
            if done {
                break;
            }
        }
        seen
    });
    let engine = Engine::new().unwrap();
    let req = ExecuteRequest {
        code: code.to_string(),
        tools: vec![
            ToolRef {
                server: "fx".into(),
                name: "echo".into(),
            },
            ToolRef {
                server: "fx".into(),
                name: "fail".into(),
            },
            ToolRef {
                server: "fx".into(),
                name: "read-file".into(),
            },
        ],
        unavailable: vec![],
        context: serde_json::from_value(json!({"who": "world"})).unwrap(),
        limits,
        determinism: None,
    };
    engine.execute(Channel::new(a, 1 << 20), req).unwrap();
    host.join().unwrap()
}

fn outcome(code: &str) -> RunnerMessage {
    run(code, RunnerLimits::default()).pop().unwrap()
}

fn ok(v: serde_json::Value) -> RunnerMessage {
    // A JSON `null` result decodes as an absent one.
    let result = if v.is_null() { None } else { Some(v) };
    RunnerMessage::ExecutionComplete {
        success: true,
        result,
        error: None,
    }
}

fn code_of(m: RunnerMessage) -> (String, String) {
    match m {
        RunnerMessage::ExecutionComplete {
            success: false,
            error: Some(e),
            ..
        } => (e.code, e.message),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn last_expression_and_return_both_give_the_result() {
    assert_eq!(outcome("1 + 1"), ok(json!(2)));
    assert_eq!(outcome("const x = 3; return x * 2;"), ok(json!(6)));
    assert_eq!(outcome("`hello ${who}`"), ok(json!("hello world")));
    assert_eq!(outcome("undefined"), ok(json!(null)));
    assert_eq!(outcome("let a = 1;"), ok(json!(null)));
}

#[test]
fn tool_calls_resolve_and_reject_with_codes() {
    assert_eq!(outcome("await mcp.fx.echo({a: 1})"), ok(json!({"a": 1})));
    assert_eq!(
        outcome("return (await mcp.fx['read-file']({p: 'x'})).p"),
        ok(json!("x"))
    );
    assert_eq!(
        outcome("try { await mcp.fx.fail({}) } catch (e) { return [e.code, e.message] }"),
        ok(json!(["TOOL_ERROR", "it failed"]))
    );
    let all =
        "const r = await Promise.all([1,2,3].map(n => mcp.fx.echo({n}))); return r.map(x => x.n)";
    assert_eq!(outcome(all), ok(json!([1, 2, 3])));
}

/// The arguments' replacer is made once per execution and serves every call after: a call
/// refused for a non-finite number leaves the calls before and after it as they were.
#[test]
fn one_replacer_serves_every_call_of_an_execution() {
    let code = "const a = await mcp.fx.echo({n: 1, s: [2.5, null]});
        let refused;
        try { await mcp.fx.echo({m: {x: -Infinity}}) } catch (e) { refused = [e.code, e.message] }
        const b = await Promise.all([3, 4].map(n => mcp.fx.echo({n})));
        return [a, refused, b.map(x => x.n)]";
    let RunnerMessage::ExecutionComplete {
        success: true,
        result: Some(r),
        ..
    } = outcome(code)
    else {
        panic!("the script failed");
    };
    assert_eq!(r[0], json!({"n": 1, "s": [2.5, null]}));
    assert_eq!(r[1][0], "INVALID_ARGUMENTS");
    let message = r[1][1].as_str().unwrap();
    assert!(
        message.starts_with("arguments of fx:echo cannot be sent as JSON: ")
            && message.contains(
                "it contains the number -Infinity (key \"x\"), which JSON cannot represent"
            ),
        "{message}"
    );
    assert_eq!(r[2], json!([3, 4]));
}

#[test]
fn unknown_and_reserved_names_reject_with_alternatives() {
    let (code, msg) = code_of(outcome("await mcp.fx.ecko({})"));
    assert_eq!(code, "TOOL_NOT_FOUND");
    assert!(msg.contains("fx:echo"), "{msg}");
    let r =
        outcome("try { await mcp.nosuch.tool() } catch (e) { return [e.code, e.alternatives] }");
    assert_eq!(r, ok(json!(["TOOL_NOT_FOUND", []])));
    for name in ["constructor", "__proto__", "toString", "hasOwnProperty"] {
        let r = outcome(&format!(
            "try {{ await mcp.fx[{name:?}]({{}}); return 'called' }} catch (e) {{ return e.code }}"
        ));
        assert_eq!(r, ok(json!("TOOL_NOT_FOUND")), "{name}");
    }
    assert_eq!(
        outcome("Object.keys(mcp.fx)"),
        ok(json!(["echo", "fail", "read-file"]))
    );
}

#[test]
fn script_errors_have_codes() {
    let (code, msg) = code_of(outcome("let x = ;"));
    assert_eq!(code, "SYNTAX_ERROR");
    assert!(msg.contains("line 1"), "{msg}");
    let (code, msg) = code_of(outcome("\n\nthrow new TypeError('bad thing')"));
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("RUNTIME_ERROR", "TypeError: bad thing")
    );
    let (code, _) = code_of(outcome("return () => 1"));
    assert_eq!(code, "RESULT_NOT_SERIALIZABLE");
    let (code, _) = code_of(outcome("const a = {}; a.a = a; return a"));
    assert_eq!(code, "RESULT_NOT_SERIALIZABLE");
    let (code, _) = code_of(outcome("return {n: 10n}"));
    assert_eq!(code, "RESULT_NOT_SERIALIZABLE");
    // A Map or a Set would become {} without a word: refused, with how to convert it.
    let (code, msg) = code_of(outcome("return {m: new Map([['a', 1]])}"));
    assert_eq!(code, "RESULT_NOT_SERIALIZABLE");
    assert_eq!(msg, "the result contains a Map (key \"m\"), which JSON cannot represent; convert it first: Object.fromEntries(map) for string keys, or [...map] for its [key, value] pairs. Return plain data: objects, arrays, strings, numbers, booleans, null.");
    let (code, msg) = code_of(outcome("return new Set([1])"));
    assert_eq!(code, "RESULT_NOT_SERIALIZABLE");
    assert!(msg.starts_with("the result contains a Set (the result itself), which JSON cannot represent; convert it first: [...set]"), "{msg}");
    assert!(matches!(
        outcome("return Object.fromEntries(new Map([['a', 1]]))"),
        RunnerMessage::ExecutionComplete { success: true, .. }
    ));
}

#[test]
fn limits_end_the_script_with_codes() {
    let limits = RunnerLimits {
        cpu_ms: 200,
        ..Default::default()
    };
    let (code, _) = code_of(run("while (true) {}", limits).pop().unwrap());
    assert_eq!(code, "CPU_LIMIT");
    let limits = RunnerLimits {
        memory_bytes: 16 << 20,
        ..Default::default()
    };
    let (code, msg) = code_of(
        run(
            "const a = []; while (true) a.push('x'.repeat(1000) + a.length)",
            limits,
        )
        .pop()
        .unwrap(),
    );
    assert_eq!(code, "MEMORY_LIMIT", "{msg}");
    let (code, msg) = code_of(outcome("function f(n) { return f(n + 1) + 1 } f(0)"));
    assert_eq!(code, "RUNTIME_ERROR");
    assert!(msg.contains("stack"), "{msg}");
    let limits = RunnerLimits {
        max_calls: 2,
        ..Default::default()
    };
    let (code, _) = code_of(
        run("for (let i = 0; i < 3; i++) await mcp.fx.echo({})", limits)
            .pop()
            .unwrap(),
    );
    assert_eq!(code, "LIMIT_EXCEEDED");
}

#[test]
fn console_lines_are_forwarded_in_order_and_bounded() {
    let frames = run(
        "console.log('a', 1, {b: 2}); console.error(new Error('e')); 0",
        RunnerLimits::default(),
    );
    assert_eq!(
        frames[..2],
        [
            RunnerMessage::Log {
                level: crate::protocol::LogLevel::Log,
                message: "a 1 { b: 2 }".into()
            },
            RunnerMessage::Log {
                level: crate::protocol::LogLevel::Error,
                message: "Error: e".into()
            },
        ]
    );
    let limits = RunnerLimits {
        log_bytes: 100,
        ..Default::default()
    };
    let frames = run(
        "for (let i = 0; i < 100; i++) console.log('0123456789'); 1",
        limits,
    );
    assert_eq!(
        frames.len(),
        10 + 1 + 1,
        "10 lines, one truncation marker, completion"
    );
}

#[test]
fn hostile_overrides_do_not_reach_other_tools() {
    let code = "Object.prototype.server = 'evil'; JSON.stringify = () => '{}'; \
                Promise.prototype.then = function () { return 1 }; \
                try { mcp.__proto__ = {}; } catch (e) {} \
                return await mcp.fx.echo({k: 1})";
    // `then` was replaced, so `await` of the tool promise still works through the engine's own
    // resolution; the call goes to fx.echo and nowhere else.
    let frames = run(code, RunnerLimits::default());
    let calls: Vec<_> = frames
        .iter()
        .filter_map(|m| match m {
            RunnerMessage::RpcCall { server, tool, .. } => Some(format!("{server}:{tool}")),
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["fx:echo"]);
}

#[test]
fn script_globals_list_matches_the_engine() {
    // Every own property of a fresh context's global object, plus what the prelude adds, is in
    // SCRIPT_GLOBALS, and every listed name exists: the host's context-key check relies on it.
    let engine = Engine::new().unwrap();
    let mut live: Vec<String> = engine.ctx.with(|ctx| {
        ctx.eval::<Vec<String>, _>("Object.getOwnPropertyNames(globalThis)")
            .unwrap()
    });
    live.extend(
        ["mcp", "console", "store", "load", "keys", "remove"]
            .into_iter()
            .map(String::from),
    );
    live.sort();
    live.dedup();
    let mut listed: Vec<String> = crate::protocol::SCRIPT_GLOBALS
        .iter()
        .map(|s| s.to_string())
        .collect();
    listed.sort();
    assert_eq!(live, listed);
}

#[test]
fn context_keys_that_shadow_globals_are_refused() {
    for key in [
        "Object",
        "Proxy",
        "undefined",
        "mcp",
        "console",
        "globalThis",
        "__proto__",
    ] {
        let mut context = Map::new();
        context.insert(key.to_string(), json!(1));
        let (a, _b) = UnixStream::pair().unwrap();
        let engine = Engine::new().unwrap();
        let channel = Rc::new(RefCell::new(Channel::new(a, 1 << 20)));
        let err = engine.ctx.with(|ctx| {
            let bridge = Rc::new(Bridge::new(channel.clone(), &[], &[], 10));
            let req = ExecuteRequest {
                code: "1".into(),
                tools: vec![],
                unavailable: vec![],
                context,
                limits: RunnerLimits::default(),
                determinism: None,
            };
            let budget = CpuBudget::start(Duration::from_secs(1));
            let prelude = engine.prelude.clone().restore(&ctx).unwrap();
            let timers = Timers::default();
            let natives = Natives {
                bridge: &bridge,
                timers: &timers,
            };
            let r = run_script(
                &ctx,
                natives,
                prelude,
                &budget,
                &req,
                &AtomicBool::new(false),
            );
            bridge.clear();
            r.unwrap_err()
        });
        assert_eq!(err.code, "INVALID_ARGUMENTS", "{key}");
        assert!(
            err.message.contains(&format!("'{key}'")),
            "{key}: {}",
            err.message
        );
    }
}
