//! Messages that used to mislead (issue 26), one test each: the code is right and the message
//! says what to do.

use crate::common;
use common::*;
use serde_json::json;

fn message(o: &mcp_sandbox::Outcome) -> String {
    o.error
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn json_parse_failing_at_run_time_is_a_runtime_error() {
    let o = run(&local_catalog(), "const x = 1;\nJSON.parse('{oops');").await;
    assert_eq!(code(&o), "RUNTIME_ERROR", "{o:?}");
    let m = message(&o);
    // QuickJS's own text with the position in the JSON; the script's location (line 2) is in
    // the stack only, not added to the message as for a script that does not compile.
    assert_eq!(
        m,
        "SyntaxError: Expected property name or '}' in JSON at position 1 (line 1 column 2)"
    );
    let stack = o.error.as_ref().unwrap().stack.clone().unwrap_or_default();
    assert!(stack.contains("script.js:2"), "{stack}");
    // A script that does not compile is still SYNTAX_ERROR, with its location once.
    let o = run(&local_catalog(), "let = ;").await;
    assert_eq!(code(&o), "SYNTAX_ERROR", "{o:?}");
    assert_eq!(message(&o).matches("line 1").count(), 1, "{}", message(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_sent_as_javascript_says_to_use_typescript() {
    let o = run(
        &local_catalog(),
        "const n: number = 2;\ninterface P { x: number }\nreturn n as number;",
    )
    .await;
    assert_eq!(code(&o), "SYNTAX_ERROR", "{o:?}");
    let m = message(&o);
    assert!(m.contains("TypeScript syntax"), "{m}");
    assert!(m.contains("language: \"typescript\""), "{m}");
    assert!(m.contains(".ts file"), "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn import_and_export_say_what_the_sandbox_offers() {
    for code_ in ["import fs from 'fs';\nreturn 1", "export const x = 1;"] {
        let o = run(&local_catalog(), code_).await;
        assert_eq!(code(&o), "SYNTAX_ERROR", "{o:?}");
        let m = message(&o);
        assert!(
            m.contains("import/export is not available in the sandbox"),
            "{m}"
        );
        assert!(m.contains("mcp.<server>.<tool>"), "{m}");
        assert!(m.contains("line 1, column 1"), "{m}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nul_byte_in_the_source_is_named_with_its_position() {
    let o = run(&local_catalog(), "const a = 1;\nconst b = '\0';").await;
    assert_eq!(code(&o), "SYNTAX_ERROR", "{o:?}");
    let m = message(&o);
    assert!(
        m.contains("NUL character (U+0000) at line 2, column 12"),
        "{m}"
    );
    assert!(m.contains("\\u0000"), "{m}");
    assert!(!m.contains("internal null bytes"), "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn console_log_shows_maps_sets_dates_errors_and_cycles_like_node() {
    let o = run(
        &local_catalog(),
        r#"
        console.log(new Map([[1, 2]]));
        console.log(new Set(['a', 'b']), new Map());
        console.log(new Date(0));
        console.log(new Error('boom'));
        console.log({ a: 1, b: 'x', c: [1, 2], d: { e: { f: { g: 1 } } } });
        const o = { name: 'loop' }; o.self = o;
        console.log(o);
        console.log([undefined, null, -0, 10n, Symbol('s')], function named() {});
        console.log(new Map([['k', new Set([1])]]), new Uint8Array([1, 2]));
        console.log('text stays text', 42);
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    let lines: Vec<&str> = o.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(
        lines,
        vec![
            "Map(1) { 1 => 2 }",
            "Set(2) { 'a', 'b' } Map(0) {}",
            "1970-01-01T00:00:00.000Z",
            "Error: boom",
            "{ a: 1, b: 'x', c: [ 1, 2 ], d: { e: { f: [Object] } } }",
            "<ref *1> { name: 'loop', self: [Circular *1] }",
            "[ undefined, null, -0, 10n, Symbol(s) ] [Function: named]",
            "Map(1) { 'k' => Set(1) { 1 } } Uint8Array(2) [ 1, 2 ]",
            "text stays text 42",
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn console_log_of_a_huge_or_deep_value_is_bounded() {
    let o = run(
        &local_catalog(),
        r#"
        const big = new Map(); for (let i = 0; i < 100000; i++) big.set(i, i);
        console.log(big);
        let deep = []; for (let i = 0; i < 10000; i++) deep = [deep];
        console.log(deep);
        return 'done'
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    assert!(
        o.logs[0].message.ends_with("... 99900 more items\n}"),
        "{}",
        &o.logs[0].message[o.logs[0].message.len() - 60..]
    );
    assert_eq!(o.logs[1].message, "[ [ [ [Array] ] ] ]");
}

/// `serve` clients cannot pass flags: their CPU and time messages name the request's
/// `limits` instead of `--cpu-ms`/`--timeout-ms`.
#[tokio::test(flavor = "multi_thread")]
async fn serve_clients_are_told_about_limits_not_flags() {
    use crate::serve_support;
    let s = serve_support::start(&[]).await;
    let r = s
        .call(
            "execute_code",
            json!({"code": "while (true) {}", "limits": {"cpu_ms": 200}}),
        )
        .await
        .unwrap();
    let body = serve_support::structured(&r).clone();
    assert_eq!(body["error"]["code"], json!("CPU_LIMIT"), "{body}");
    let m = body["error"]["message"].as_str().unwrap();
    assert!(!m.contains("--cpu-ms"), "{m}");
    assert!(m.contains("send a larger `limits.cpu_ms`"), "{m}");
    assert!(m.contains("yours made it 200"), "{m}");
    let r = s
        .call(
            "execute_code",
            json!({"code": "await mcp.fixture.sleep({ms: 5000})", "limits": {"timeout_ms": 300}}),
        )
        .await
        .unwrap();
    let body = serve_support::structured(&r).clone();
    assert_eq!(body["error"]["code"], json!("EXECUTION_TIMEOUT"), "{body}");
    let m = body["error"]["message"].as_str().unwrap();
    assert!(!m.contains("--timeout-ms"), "{m}");
    assert!(m.contains("send a larger `limits.timeout_ms`"), "{m}");
    // The CLI keeps its flags.
    let o = run_with(
        &local_catalog(),
        "while (true) {}",
        mcp_sandbox::Limits {
            cpu_ms: 200,
            ..Default::default()
        },
    )
    .await;
    assert!(message(&o).contains("--cpu-ms"), "{o:?}");
}

#[test]
fn run_help_shows_no_rustdoc_links() {
    for sub in ["run", "serve", "audit"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
            .args([sub, "--help"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("[`"), "{sub} --help: {text}");
        if sub == "run" {
            assert!(
                text.contains("up to 64 KiB a call and 1 MiB an execution"),
                "{text}"
            );
        }
    }
}
