//! What a downstream MCP server says while an execution's call runs reaches the upstream client
//! through `mcp-sandbox serve` (the real binary, runner and fixture MCP server; the official
//! Python SDK as the client, tests/python/serve_passthrough.py): its progress notifications
//! become progress notifications of the `execute_code` request (when the client sent a progress
//! token), its log messages become the outcome's log lines tagged with the server, and its
//! elicitation and sampling requests are forwarded to the client when it declared those
//! capabilities (refused with a message otherwise).

use crate::common::{bin, chatty_logs, repo_root};
use serde_json::{json, Value};
use std::process::Command;

fn client(code: &str, mode: &str) -> Value {
    let text =
        json!({"mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}}});
    client_of(text, code, mode)
}

fn client_of(text: Value, code: &str, mode: &str) -> Value {
    client_in(&tempfile::tempdir().unwrap(), text, code, mode, &[])
}

/// The client with the config `text` in `dir`, `env` added to the client's (and `serve`'s).
pub(crate) fn client_in(
    dir: &tempfile::TempDir,
    text: Value,
    code: &str,
    mode: &str,
    env: &[(&str, &std::path::Path)],
) -> Value {
    let config = dir.path().join("config.json");
    std::fs::write(&config, text.to_string()).unwrap();
    let py = repo_root().join(".venv/bin/python");
    assert!(
        py.exists(),
        "run scripts/setup.sh (Python venv with mcp==2.3.0) first"
    );
    let out = Command::new(py)
        .arg(repo_root().join("tests/python/serve_passthrough.py"))
        .arg(bin("mcp-sandbox"))
        .arg(&config)
        .arg(code)
        .arg(mode)
        .env("MCP_SANDBOX_RUNNER", bin("sandbox-runner"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("one JSON report")
}

#[test]
fn downstream_progress_and_logs_reach_the_client() {
    let r = client(
        "console.log('before'); const d = await mcp.fixture.chatty({steps: 3, pause_ms: 20}); return d",
        "with_token",
    );
    let o = &r["outcome"];
    assert_eq!(o["result"], "done", "{r}");
    assert_eq!(
        r["progress"],
        json!([
            [1.0, null, "fixture: step 1 of 3 (1/3)"],
            [2.0, null, "fixture: step 2 of 3 (2/3)"],
            [3.0, null, "fixture: step 3 of 3 (3/3)"],
        ])
    );
    let mut logs = vec![json!({"level": "log", "message": "before"})];
    logs.extend(chatty_logs(3));
    assert_eq!(o["logs"], json!(logs), "{r}");
}

#[test]
fn progress_messages_reach_the_client_redacted_when_values_are_kept_from_the_model() {
    let text = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}},
        "sandbox": {"sensitive": {"detect": ["email"]}},
    });
    let r = client_of(
        text,
        "return await mcp.fixture.chatty({steps: 1, note: ' for ada@example.com'})",
        "with_token",
    );
    assert_eq!(r["outcome"]["result"], "done", "{r}");
    let said = r["progress"][0][2].as_str().unwrap_or_default();
    let tag = said
        .strip_prefix("fixture: step 1 of 1 for ⟪email:")
        .and_then(|s| s.strip_suffix(":1⟫ (1/1)"))
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        tag.len() == 5 && tag.bytes().all(|b| b.is_ascii_lowercase()),
        "{tag}"
    );
    assert_eq!(
        r["progress"],
        json!([[
            1.0,
            null,
            format!("fixture: step 1 of 1 for ⟪email:{tag}:1⟫ (1/1)")
        ]]),
        "{r}"
    );
    assert!(!r.to_string().contains("ada@example.com"), "{r}");
}

#[test]
fn without_a_progress_token_only_the_logs_pass() {
    let r = client(
        "return await mcp.fixture.chatty({steps: 2})",
        "without_token",
    );
    assert_eq!(r["outcome"]["result"], "done", "{r}");
    assert_eq!(r["progress"], json!([]));
    assert_eq!(r["outcome"]["logs"], json!(chatty_logs(2)), "{r}");
}

#[test]
fn progress_of_parallel_calls_always_increases() {
    let r = client(
        "return await Promise.all([mcp.fixture.chatty({steps: 3, pause_ms: 10}), mcp.fixture.chatty({steps: 3, pause_ms: 10})])",
        "with_token",
    );
    assert_eq!(r["outcome"]["result"], json!(["done", "done"]), "{r}");
    let seen: Vec<f64> = r["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_f64().unwrap())
        .collect();
    assert_eq!(seen, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "{r}");
    // Both calls' log lines are the execution's.
    assert_eq!(r["outcome"]["logs"].as_array().unwrap().len(), 6, "{r}");
}

const ASK_BOTH: &str = "return [await mcp.fixture.ask_client({kind: 'elicit'}), await mcp.fixture.ask_client({kind: 'sample'})]";

#[test]
fn downstream_elicitation_and_sampling_are_forwarded_to_a_client_that_can_answer() {
    let r = client(ASK_BOTH, "answering");
    assert_eq!(
        r["asked"],
        json!([["elicit", "Which colour?"], ["sample", "Say hi"]]),
        "{r}"
    );
    assert_eq!(
        r["outcome"]["result"],
        json!([
            {"answer": {"action": "accept", "content": {"colour": "green"}}},
            {"answer": {"role": "assistant", "model": "test-model",
                        "content": {"type": "text", "text": "hi from the client"}}},
        ]),
        "{r}"
    );
}

#[test]
fn downstream_elicitation_and_sampling_are_refused_for_a_client_without_the_capability() {
    let r = client(ASK_BOTH, "not_answering");
    assert_eq!(r["asked"], json!([]), "{r}");
    assert_eq!(
        r["outcome"]["result"],
        json!([
            {"error": "Mcp error: -32600: elicitation is not supported: the MCP client of this execution did not declare the elicitation capability"},
            {"error": "Mcp error: -32600: sampling is not supported: the MCP client of this execution did not declare the sampling capability"},
        ]),
        "{r}"
    );
}

/// With `sandbox.sensitive`, a server's elicitation and sampling requests reach the client with
/// the session's placeholders (the same as the outcome's) in their text: the elicitation's
/// message, the sampling message and its system prompt. No byte `serve` wrote holds a real value.
#[test]
fn server_requests_reach_the_client_redacted_when_values_are_kept_from_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.log");
    let text = json!({
        "mcpServers": {"fixture": {"command": bin("fixture-mcp-server"), "args": []}},
        "sandbox": {"sensitive": {"detect": ["email", "card"]}},
    });
    let code = "const c = await mcp.fixture.get_customer({id: 7});\n\
                const text = 'write to ' + c.email + ' about ' + c.card;\n\
                return [c.email, await mcp.fixture.ask_client({kind: 'elicit', text}),\n\
                        await mcp.fixture.ask_client({kind: 'sample', text})];";
    let r = client_in(&dir, text, code, "answering", &[("MCP_RAW_LOG", &raw)]);
    let first = r["outcome"]["result"][0].as_str().unwrap_or_default();
    let tag = first
        .strip_prefix("⟪email:")
        .and_then(|s| s.strip_suffix(":1⟫"))
        .unwrap_or_else(|| panic!("{r}"));
    let said = format!("write to ⟪email:{tag}:1⟫ about ⟪card:{tag}:2⟫");
    assert_eq!(
        r["asked"],
        json!([["elicit", said], ["sample", said]]),
        "{r}"
    );
    assert_eq!(r["asked_params"][1]["systemPrompt"], said, "{r}");
    let result = &r["outcome"]["result"];
    assert_eq!(
        result[0],
        format!("⟪email:{tag}:1⟫"),
        "the outcome's placeholder is the same: {r}"
    );
    // The client's answers went back to the server as written.
    assert_eq!(
        result[1]["answer"]["content"],
        json!({"colour": "green"}),
        "{r}"
    );
    let bytes = std::fs::read(&raw).unwrap();
    assert!(!bytes.is_empty());
    for real in ["ada7@example.com", "4111 1111 1111 1111"] {
        assert!(
            !bytes.windows(real.len()).any(|w| w == real.as_bytes()),
            "the client received {real}"
        );
    }
}

/// The reference `everything` server's own tools that send progress, sampling and elicitation
/// requests (it offers the last two only to a client that declared them: the sandbox does).
#[test]
fn the_everything_server_reaches_the_client_through_the_sandbox() {
    let server = repo_root().join("node_modules/.bin/mcp-server-everything");
    assert!(server.exists(), "run scripts/setup.sh (npm ci) first");
    let code = "const e = mcp.everything;\n\
                return [await e['trigger-long-running-operation']({duration: 1, steps: 2}),\n\
                        await e['trigger-sampling-request']({prompt: 'hello', maxTokens: 5}),\n\
                        await e['trigger-elicitation-request']({})];";
    let r = client_of(
        json!({"mcpServers": {"everything": {"command": server, "args": []}}}),
        code,
        "answering",
    );
    let result = &r["outcome"]["result"];
    assert_eq!(
        result[0], "Long running operation completed. Duration: 1 seconds, Steps: 2.",
        "{r}"
    );
    assert_eq!(
        r["progress"],
        json!([
            [1.0, null, "everything: 1/2"],
            [2.0, null, "everything: 2/2"]
        ]),
        "{r}"
    );
    assert!(
        result[1]
            .as_str()
            .unwrap_or("")
            .contains("\"text\": \"hi from the client\""),
        "{r}"
    );
    assert_eq!(result[2][1]["text"], "User inputs:\n- Name: Ada", "{r}");
    assert_eq!(
        r["asked"],
        json!([
            ["sample", "Resource trigger-sampling-request context: hello"],
            ["elicit", "Please provide inputs for the following fields:"]
        ]),
        "{r}"
    );
}
