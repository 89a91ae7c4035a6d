//! Hostile scripts through the real CLI and the real, locked-down runner: no ambient authority in
//! the global scope, no module loading, and no way to make the host call a tool it does not list.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs a script with the fixture server configured; returns the `--json` outcome.
fn run_json(script: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let text = json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server")}}});
    std::fs::write(&config, text.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["run", "-", "--json", "--timeout-ms", "5000", "--config"])
        .arg(&config)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        // `run` learns into the state file: keep it out of the real data directory.
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join(format!("mcp-sandbox-cli-tests-{}", std::process::id())),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "host crashed: {out:?}"
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

fn tools_called(o: &Value) -> Vec<String> {
    o["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "tool_start")
        .map(|t| t["tool"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_global_scope_has_no_ambient_authority() {
    let o = run_json(
        r#"const names = ["std", "os", "Deno", "process", "require", "XMLHttpRequest",
            "WebSocket", "importScripts", "Bun", "module", "exports"];
        return names.filter((n) => typeof globalThis[n] !== "undefined");"#,
    );
    assert_eq!(o["result"], json!([]), "{o}");
    // `fetch` exists only to say there is no network (issue 26): it rejects, reaching nothing.
    let o = run_json(
        r#"try { await fetch("http://127.0.0.1:1/"); return "fetched"; }
        catch (e) { return [e.name, e.message.startsWith("fetch is not available: the sandbox has no network")]; }"#,
    );
    assert_eq!(o["result"], json!(["TypeError", true]), "{o}");
    let o = run_json(
        "return Object.getOwnPropertyNames(globalThis).filter(n => /^(__|std|os|sys)/i.test(n))",
    );
    assert_eq!(o["result"], json!([]), "{o}");
}

#[test]
fn modules_cannot_be_loaded() {
    let o = run_json("try { await import('os'); return 'loaded' } catch (e) { return String(e) }");
    assert_ne!(o["result"], "loaded", "{o}");
    let o = run_json("import * as os from 'os'; return 1");
    assert_eq!(o["error"]["code"], "SYNTAX_ERROR", "{o}");
    let o = run_json(
        "try { return await (0, eval)(\"import('std')\") } catch (e) { return 'refused' }",
    );
    assert_eq!(o["result"], "refused", "{o}");
}

#[test]
fn eval_and_function_reach_nothing_more() {
    let o = run_json(
        r#"const g = Function("return this")();
        const viaEval = (0, eval)("typeof std + typeof os + typeof process + typeof require");
        return [g === globalThis, viaEval, typeof g.XMLHttpRequest];"#,
    );
    assert_eq!(
        o["result"],
        json!([true, "undefinedundefinedundefinedundefined", "undefined"]),
        "{o}"
    );
}

#[test]
fn overriding_builtins_cannot_route_to_unlisted_tools() {
    let o = run_json(
        r#"
        Object.prototype.server = "evil"; Object.prototype.tool = "crash";
        JSON.stringify = () => '{"server":"evil"}';
        const then = Promise.prototype.then;
        Promise.prototype.then = function (a, b) { return then.call(this, a, b); };
        try { mcp.__proto__ = { evil: { crash: () => 1 } }; } catch (e) {}
        try { Object.setPrototypeOf(mcp, { evil: {} }); } catch (e) {}
        try { mcp.fixture = { crash: () => "replaced" }; } catch (e) {}
        const results = [];
        for (const name of ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty"]) {
            try { await mcp.fixture[name]({}); results.push(name + ": called"); }
            catch (e) { results.push(name + ": " + e.code); }
        }
        // A computed name: a static `mcp.evil.crash` fails the whole run before spawning
        // (docs/learning.md); this checks the runtime route too.
        const evil = ["evil"][0];
        try { await mcp[evil].crash({}); results.push("evil: called"); } catch (e) { results.push("evil: " + e.code); }
        results.push(await mcp.fixture.echo({ message: "still fine" }));
        return results;
        "#,
    );
    assert_eq!(
        o["result"],
        json!([
            "__proto__: TOOL_NOT_FOUND",
            "constructor: TOOL_NOT_FOUND",
            "prototype: TOOL_NOT_FOUND",
            "toString: TOOL_NOT_FOUND",
            "hasOwnProperty: TOOL_NOT_FOUND",
            "evil: TOOL_NOT_FOUND",
            "still fine"
        ]),
        "{o}"
    );
    // Only the one legitimate call ever reached the host.
    assert_eq!(tools_called(&o), ["fixture:echo"]);
}

#[test]
fn reserved_names_are_never_servers() {
    let o = run_json("return [typeof mcp.constructor, Object.keys(mcp), 'then' in mcp, mcp.then]");
    // `mcp.constructor` is just an (empty) server proxy: every call on it rejects.
    assert_eq!(
        o["result"],
        json!(["object", ["fixture"], false, null]),
        "{o}"
    );
    let o = run_json("try { await mcp.constructor.constructor({}) } catch (e) { return e.code }");
    assert_eq!(o["result"], "TOOL_NOT_FOUND", "{o}");
}
