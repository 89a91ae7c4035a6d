//! Malformed JSON-RPC gets the answers JSON-RPC prescribes from `mcp-sandbox serve` (the real
//! binary): over HTTP (raw sockets) malformed JSON → 400 with -32700, a wrong `jsonrpc`, a batch
//! or a bad id → 400 with -32600, `arguments: [1]` → -32602; over stdio a garbage line → -32700
//! with id null, a line over 16 MiB → an error for its id, and the server answers the next line.

use crate::common;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn error_of(a: &Answer) -> (Value, i64) {
    let m = a.messages();
    let m = m
        .first()
        .unwrap_or_else(|| panic!("no JSON-RPC message: {a:?}"));
    (m["id"].clone(), m["error"]["code"].as_i64().unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread")]
async fn http_malformed_messages_get_400_and_their_json_rpc_codes() {
    let h = start_http(&[]).await;
    let s = open_session(&h.addr).await;
    let cases: [(&str, u16, Value, i64); 6] = [
        ("{not json", 400, Value::Null, -32700),
        (
            r#"{"jsonrpc":"1.0","id":4,"method":"tools/list"}"#,
            400,
            json!(4),
            -32600,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]"#,
            400,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}"#,
            400,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
            400,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":[1]}}"#,
            200,
            json!(7),
            -32602,
        ),
    ];
    for (body, status, id, code) in cases {
        let a = exchange(&h.addr, &post_bytes(&h.addr, Some(&s), body, &[])).await;
        assert_eq!(a.status, status, "{body}: {a:?}");
        assert_eq!(error_of(&a), (id, code), "{body}: {a:?}");
    }
    // The session still works.
    let a = post(
        &h.addr,
        Some(&s),
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    )
    .await;
    assert!(a.reply(8)["result"]["tools"].is_array(), "{a:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_garbage_and_oversized_lines_are_answered_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .arg("serve")
        .arg("--state")
        .arg(dir.path().join("state.db"))
        .env("MCP_SANDBOX_RUNNER", common::bin("sandbox-runner"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("no answer within 20 s")
            .unwrap()
            .expect("stdout closed");
        serde_json::from_str(&line).unwrap()
    };
    let init = initialize_body(1).to_string() + "\n";
    stdin.write_all(init.as_bytes()).await.unwrap();
    assert_eq!(next().await["id"], json!(1));
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\nthis is not json\n",
        )
        .await
        .unwrap();
    let a = next().await;
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{a}"
    );
    // A 17 MiB request: refused for its id, and the next request is served.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{{\"name\":\"execute_code\",\"arguments\":{{\"code\":\"{}\"}}}}}}\n",
        "x".repeat(17 * 1024 * 1024)
    );
    let writer = tokio::spawn(async move {
        stdin.write_all(big.as_bytes()).await.unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":43,\"method\":\"tools/list\"}\n")
            .await
            .unwrap();
        stdin
    });
    let a = next().await;
    assert_eq!(
        (a["id"].clone(), a["error"]["code"].clone()),
        (json!(42), json!(-32600)),
        "{a}"
    );
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{a}"
    );
    let a = next().await;
    assert_eq!(a["id"], json!(43));
    assert!(a["result"]["tools"].is_array(), "{a}");
    drop(writer.await.unwrap());
}
