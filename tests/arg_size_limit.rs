//! Per-call argument size limit (issue 15 item 5): checked at the host before forwarding, with
//! `LIMIT_EXCEEDED` naming `max_arg_bytes`; the server is never sent the call and keeps running.
//! `--max-arg-bytes` and a server's `maxArgBytes` in the config change it.

use crate::common;
use common::*;
use serde_json::json;

const SCRIPT: &str = r#"
const pid = await mcp.fixture.pid({});
let code = null, message = null;
try {
  await mcp.fixture.echo({ message: "a".repeat(ARG) });
} catch (e) {
  code = e.code;
  message = e.message;
}
const after = await mcp.fixture.pid({});
return { code, message, same_server: pid === after, echo: await mcp.fixture.echo({ message: "ok" }) };
"#;

fn run_script(
    arg_bytes: usize,
    extra_config: serde_json::Value,
    flags: &[&str],
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), extra_config);
    let script = dir.path().join("s.js");
    std::fs::write(&script, SCRIPT.replace("ARG", &arg_bytes.to_string())).unwrap();
    let state = dir.path().join("state.db");
    let mut args = vec![
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
    ];
    let runner = bin("sandbox-runner");
    args.push(runner.to_str().unwrap());
    args.extend_from_slice(flags);
    args.push(script.to_str().unwrap());
    let run = cli_run(&args);
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    o["result"].clone()
}

#[test]
fn a_2_mib_argument_is_refused_and_the_server_keeps_running() {
    let r = run_script(2 * 1024 * 1024, json!({}), &[]);
    assert_eq!(r["code"], "LIMIT_EXCEEDED", "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("the arguments of fixture:echo are about 20972")
            && message.contains("bytes; the limit (max_arg_bytes) is 1048576 bytes"),
        "{message}"
    );
    assert_eq!(r["same_server"], true, "{r}");
    assert_eq!(r["echo"], "ok");
}

#[test]
fn the_flag_and_the_servers_max_arg_bytes_change_the_limit() {
    // Raised by the flag: 2 MiB goes through.
    let r = run_script(2 * 1024 * 1024, json!({}), &["--max-arg-bytes", "4194304"]);
    assert_eq!(r["code"], serde_json::Value::Null, "{r}");
    // Lowered for this server by the config: 100 bytes are too many.
    let r = run_script(100, json!({"maxArgBytes": 64}), &[]);
    assert_eq!(r["code"], "LIMIT_EXCEEDED", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("is 64 bytes"),
        "{r}"
    );
}
