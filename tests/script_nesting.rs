//! Deeply nested scripts never take the host down (issue 12 item 1): 1,500, 3,000 and 100,000
//! nested parentheses or brackets, in JavaScript and TypeScript, through the real `run` CLI and
//! through a real `serve` (`execute_code` and `save_capability`), are refused with
//! `LIMIT_EXCEEDED` naming the limit — and the same server answers the next request.
//! Before the fix, 1,500 parentheses aborted the host with a stack overflow (SIGABRT).

use crate::common;
use crate::serve_support;

use common::run_stdin;
use serde_json::{json, Value};
use serve_support::{is_error, start, structured, text};

const DEPTHS: [usize; 3] = [1_500, 3_000, 100_000];

fn parens(n: usize) -> String {
    format!("return {}1{}", "(".repeat(n), ")".repeat(n))
}

fn brackets(n: usize) -> String {
    format!(
        "const x: number[] = []; return {}1{}",
        "[".repeat(n),
        "]".repeat(n)
    )
}

fn run_cli(code: &str, language: &str, state: &std::path::Path) -> (Option<i32>, Value) {
    let out = run_stdin(
        &[
            "--json".as_ref(),
            "--language".as_ref(),
            language.as_ref(),
            "--state".as_ref(),
            state.as_ref(),
        ],
        code,
    );
    let outcome = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON outcome (status {:?}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), outcome)
}

fn assert_refused(outcome: &Value, what: &str) {
    assert_eq!(outcome["success"], false, "{what}: {outcome}");
    assert_eq!(
        outcome["error"]["code"], "LIMIT_EXCEEDED",
        "{what}: {outcome}"
    );
    let message = outcome["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("more than 1000 levels deep"),
        "{what}: {message}"
    );
}

#[test]
fn run_refuses_deep_nesting_in_javascript_and_typescript() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.db");
    for n in DEPTHS {
        for language in ["javascript", "typescript"] {
            for (shape, code) in [("parentheses", parens(n)), ("brackets", brackets(n))] {
                let what = format!("{n} {shape} in {language}");
                let (status, outcome) = run_cli(&code, language, &state);
                assert_eq!(status, Some(1), "{what}: {outcome}");
                assert_refused(&outcome, &what);
            }
        }
    }
    // Nesting at the limit still runs.
    let (status, outcome) = run_cli(&parens(200), "typescript", &state);
    assert_eq!(status, Some(0), "{outcome}");
    assert_eq!(outcome["result"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_refuses_deep_nesting_and_keeps_serving() {
    let served = start(&[]).await;
    for n in DEPTHS {
        for language in ["javascript", "typescript"] {
            let r = served
                .call(
                    "execute_code",
                    json!({"code": parens(n), "language": language}),
                )
                .await
                .unwrap_or_else(|e| panic!("{n} in {language}: {e}; stderr: {}", served.stderr()));
            assert_refused(structured(&r), &format!("execute_code {n} {language}"));
        }
        let saved = served
            .call(
                "save_capability",
                json!({"name": "deep:nest", "code": brackets(n)}),
            )
            .await
            .unwrap_or_else(|e| panic!("save {n}: {e}; stderr: {}", served.stderr()));
        assert!(is_error(&saved), "{saved:?}");
        assert!(
            text(&saved).contains("more than 1000 levels deep"),
            "{}",
            text(&saved)
        );
    }
    // The same server still answers.
    let r = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.fixture.add({a: 2, b: 3})"}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&r)["result"]["sum"], 5, "{r:?}");
    assert!(serve_support::alive(served.pid));
}
