//! Tool results are bounded before they reach the runner (issue 12 item 6, host part): a result
//! over `max_tool_result_bytes` (default 8 MiB, `--max-tool-result-bytes`) fails that call with
//! `LIMIT_EXCEEDED` naming its size and the limit; the script can catch it and go on.

use crate::common;
use common::*;

const SCRIPT: &str = r#"
let code = null, message = null;
try { await mcp.fixture.big({ bytes: BYTES }) } catch (e) { code = e.code; message = e.message }
return { code, message, small: (await mcp.fixture.big({ bytes: 10 })).length };
"#;

fn run(bytes: u64, flags: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), serde_json::json!({}));
    let script = dir.path().join("s.js");
    std::fs::write(&script, SCRIPT.replace("BYTES", &bytes.to_string())).unwrap();
    let state = dir.path().join("state.db");
    let runner = bin("sandbox-runner");
    let mut args = vec![
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--runner",
        runner.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    args.push(script.to_str().unwrap());
    let o = cli_run(&args).outcome();
    assert_eq!(o["success"], true, "{o}");
    o["result"].clone()
}

#[test]
fn a_result_over_the_default_limit_fails_its_call() {
    let r = run(9 * 1024 * 1024, &[]);
    assert_eq!(r["code"], "LIMIT_EXCEEDED", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains(
            "the result of fixture:big is 9437186 bytes; the tool-result limit (max_tool_result_bytes) is 8388608 bytes"
        ),
        "{r}"
    );
    assert_eq!(r["small"], 10);
}

#[test]
fn the_flag_sets_the_limit() {
    let r = run(2000, &["--max-tool-result-bytes", "1000"]);
    assert_eq!(r["code"], "LIMIT_EXCEEDED", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("is 2002 bytes"),
        "{r}"
    );
    let r = run(900, &["--max-tool-result-bytes", "1000"]);
    assert_eq!(r["code"], serde_json::Value::Null, "{r}");
}
