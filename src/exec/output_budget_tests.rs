use super::*;
use crate::error::{ErrorCode, ExecError};
use crate::exec::outcome::{LogLine, Metrics};
use crate::trace::TraceEvent;

fn outcome(result: Value) -> Outcome {
    Outcome {
        success: true,
        result,
        error: None,
        logs: Vec::new(),
        traces: Vec::new(),
        metrics: Metrics::default(),
    }
}

fn trace(kind: TraceKind, tool: &str) -> TraceEvent {
    TraceEvent {
        kind,
        tool: tool.into(),
        trace_id: "t".repeat(36),
        parent_trace_id: None,
        ts: 1.0,
        success: None,
        duration_ms: None,
        error: None,
        by: None,
        rule: None,
        transport: None,
        key: None,
        bytes: None,
        label: None,
        decision: None,
        approver: None,
    }
}

fn lines(n: usize) -> Vec<LogLine> {
    (0..n)
        .map(|i| LogLine {
            level: "log".into(),
            message: format!("line {i}"),
        })
        .collect()
}

/// Like serve's answer: the structured value and a text about as large again.
fn twice(v: &Value) -> u64 {
    2 * json_len(v)
}

fn fits(o: &Outcome, max: u64) -> Value {
    let a = fit(o, Budget::new(max), &twice);
    assert!(twice(&a) <= max, "{} > {max}: {a}", twice(&a));
    a
}

#[test]
fn an_answer_within_the_budget_is_whole_and_says_which_budget_applied() {
    let o = outcome(json!({"a": [1, 2, 3]}));
    let a = fit(
        &o,
        Budget {
            max_output_bytes: 4096,
            requested: Some(100_000),
            capped: true,
        },
        &twice,
    );
    assert_eq!(a["result"], json!({"a": [1, 2, 3]}));
    assert_eq!(a.get("truncated"), None);
    assert_eq!(
        a["output"],
        json!({"max_output_bytes": 4096, "requested": 100_000, "capped": true})
    );
}

#[test]
fn traces_are_summarised_first() {
    let mut o = outcome(json!("small"));
    o.logs = lines(3);
    for i in 0..200 {
        let tool = if i % 4 == 0 { "a:x" } else { "b:y" };
        o.traces.push(trace(TraceKind::ToolStart, tool));
        let mut end = trace(TraceKind::ToolEnd, tool);
        if i == 0 {
            end.error = Some(crate::trace::TraceError {
                code: ErrorCode::ToolError,
                message: "no".into(),
            });
        }
        o.traces.push(end);
    }
    let a = fits(&o, 8 * 1024);
    assert_eq!(a["truncated"], json!(true));
    assert_eq!(a["output"]["cut"], json!(["traces"]));
    assert_eq!(a["result"], json!("small"));
    assert_eq!(a["logs"].as_array().unwrap().len(), 3);
    let t = &a["traces"];
    assert_eq!(t["summarised"], json!(true));
    assert_eq!(t["events"], json!(400));
    assert_eq!(t["by_kind"], json!({"tool_start": 200, "tool_end": 200}));
    assert_eq!(t["by_tool"]["b:y"], json!({"calls": 150, "errors": 0}));
    assert_eq!(t["by_tool"]["a:x"], json!({"calls": 50, "errors": 1}));
    assert!(a["output"]["full_bytes"].as_u64().unwrap() > 8 * 1024);
}

#[test]
fn logs_are_cut_next_keeping_the_first_and_last_lines() {
    let mut o = outcome(json!({"n": 1}));
    o.logs = lines(5000);
    let a = fits(&o, 8 * 1024);
    assert_eq!(a["output"]["cut"], json!(["traces", "logs"]));
    assert_eq!(a["result"], json!({"n": 1}));
    let logs = a["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 21);
    assert_eq!(logs[0]["message"], json!("line 0"));
    assert_eq!(logs[9]["message"], json!("line 9"));
    assert_eq!(logs[10]["level"], json!("cut"));
    assert_eq!(
        logs[10]["message"],
        json!("… 4980 lines cut (the first 10 and last 10 are kept)")
    );
    assert_eq!(logs[20]["message"], json!("line 4999"));
}

#[test]
fn a_large_array_becomes_a_preview_of_its_shape() {
    let items: Vec<Value> = (0..50_000)
        .map(|i| json!({"id": i, "title": "x".repeat(1000), "tags": ["a", "b", "c", "d"]}))
        .collect();
    let o = outcome(Value::Array(items));
    let full = json_len(&o.result);
    assert!(full > 50_000_000);
    let a = fits(&o, 64 * 1024);
    assert_eq!(a["truncated"], json!(true));
    assert_eq!(a["output"]["cut"], json!(["traces", "result"]));
    let p = &a["result"];
    assert_eq!(p["truncated"], json!(true));
    assert_eq!(p["bytes"], json!(full));
    assert_eq!(p["type"], json!("array"));
    assert_eq!(p["length"], json!(50_000));
    let first = p["first"].as_array().unwrap();
    assert_eq!(first.len(), 3);
    assert_eq!(first[0]["id"], json!(0));
    assert_eq!(first[0]["title"], json!(format!("{}…", "x".repeat(500))));
    assert_eq!(first[0]["tags"], json!(["a", "b", "c", "… 1 more items"]));
    assert!(p["hint"].as_str().unwrap().contains("store()"), "{p}");
}

#[test]
fn an_object_preview_lists_its_keys() {
    let mut m = Map::new();
    for i in 0..1000 {
        m.insert(format!("key{i:04}"), json!("v".repeat(200)));
    }
    let a = fits(&outcome(Value::Object(m)), 16 * 1024);
    let p = &a["result"];
    assert_eq!(p["type"], json!("object"));
    assert_eq!(p["key_count"], json!(1000));
    let keys = p["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 50);
    assert_eq!(keys[0], json!("key0000"));
    assert_eq!(p["first"].as_object().unwrap().len(), 3);
}

#[test]
fn a_long_error_message_is_clipped_and_the_code_kept() {
    let mut o = Outcome::failed(ExecError::new(ErrorCode::RuntimeError, "é".repeat(1 << 20)));
    o.logs = lines(100);
    let a = fits(&o, 2048);
    assert_eq!(a["success"], json!(false));
    assert_eq!(a["error"]["code"], json!("RUNTIME_ERROR"));
    assert_eq!(a["truncated"], json!(true));
}

/// Shapes built to defeat a preview: every answer is within the budget, whatever it holds.
#[test]
fn hostile_shapes_never_exceed_the_budget() {
    let mut deep = json!("bottom");
    for _ in 0..120 {
        deep = if json_len(&deep) < 1_000_000 {
            json!([deep.clone(), {"k": deep}])
        } else {
            json!([deep])
        };
    }
    let mut many_keys = Map::new();
    for i in 0..100_000 {
        many_keys.insert(format!("{i}"), json!(i));
    }
    let mut huge_key = Map::new();
    huge_key.insert("k".repeat(1 << 20), json!(1));
    huge_key.insert("\u{1}".repeat(1 << 18), json!("\u{1F600}".repeat(1 << 18)));
    let shapes = [
        deep,
        Value::Object(many_keys),
        Value::Object(huge_key),
        json!("\u{1F600}\u{0}\"\\".repeat(1 << 20)),
        json!([["\u{7f}".repeat(1 << 20)], {"é": "\u{10FFFF}".repeat(1 << 18)}]),
        json!((0..300_000).collect::<Vec<_>>()),
    ];
    for shape in shapes {
        let mut o = outcome(shape);
        o.logs = vec![
            LogLine {
                level: "x".repeat(1 << 10),
                message: "\u{0}".repeat(1 << 14),
            };
            50
        ];
        // About what log_bytes (1 MiB) and tool names let a runner send, escaped six times over.
        o.traces = vec![trace(TraceKind::ToolEnd, &"t".repeat(1 << 10)); 300];
        for max in [MIN_MAX_OUTPUT_BYTES, 1500, 4096, 64 * 1024] {
            let a = fits(&o, max);
            assert_eq!(a["truncated"], json!(true));
            assert_eq!(a["output"]["max_output_bytes"], json!(max));
        }
    }
}

#[test]
fn the_smallest_answer_fits_the_smallest_budget() {
    let s = smallest(Budget::new(u64::MAX), false);
    assert!(twice(&s) <= MIN_MAX_OUTPUT_BYTES, "{s}");
    // A measure nothing fits: the smallest answer still says what happened.
    let a = fit(&outcome(json!([1, 2])), Budget::new(10), &|_| u64::MAX);
    assert_eq!(a, smallest(Budget::new(10), true));
}
