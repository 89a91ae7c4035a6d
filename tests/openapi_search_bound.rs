//! `search_tools` answers are bounded like execute_code's (issue 57 item 4): the declarations
//! count twice (in the text and in structuredContent) and the whole answer stays within the
//! caller's output budget (`max_output_bytes`, 64 KiB by default). Through `serve` and the
//! official MCP Python SDK client, an OpenAPI server whose 40 `paint*` operations each take a
//! 1,000-value enum (about 14 KB of declaration each) and one `giant` operation taking a
//! 60,000-value enum (the case: its search answer was 42 MB across matches): the search
//! for "paint" lists the tools that fit, whole, and says how many more match; the search for
//! "giant" cuts its one declaration and says so; a search that fits is not marked truncated. On
//! main every answer holds all its matches whole (the "paint" one 30 declarations, about 0.4 MB
//! of text, twice in the answer).

use serde_json::{json, Value};

fn spec() -> Value {
    let colors: Vec<String> = (0..1000).map(|i| format!("color-{i:04}")).collect();
    let sizes: Vec<String> = (0..60_000).map(|i| format!("size-{i:05}")).collect();
    let mut paths = serde_json::Map::new();
    for i in 0..40 {
        paths.insert(
            format!("/paint{i}"),
            json!({"get": {"operationId": format!("paint{i}"), "summary": "Paint a wall",
                "parameters": [{"name": "color", "in": "query", "required": true,
                    "schema": {"type": "string", "enum": colors}}]}}),
        );
    }
    paths.insert(
        "/giant".into(),
        json!({"get": {"operationId": "giant", "summary": "Order a giant jumper",
            "parameters": [{"name": "size", "in": "query", "required": true,
                "schema": {"type": "string", "enum": sizes}}]}}),
    );
    paths.insert(
        "/ping".into(),
        json!({"get": {"operationId": "ping", "summary": "Check the shop is open"}}),
    );
    json!({"openapi": "3.1.0", "info": {"title": "shop", "version": "1"}, "paths": paths})
}

#[test]
fn search_answers_are_cut_to_the_output_budget_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("shop.json"), spec().to_string()).unwrap();
    let config = d.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"shop": {"openapi": "shop.json", "baseUrl": "https://shop.example.com"}}})
            .to_string(),
    )
    .unwrap();
    let calls = json!([
        {"tool": "search_tools", "arguments": {"query": "paint"}},
        {"tool": "search_tools", "arguments": {"query": "giant jumper"}},
        {"tool": "search_tools", "arguments": {"query": "check", "server": "shop"}}
    ]);
    let report = crate::serve_support::sdk::over_stdio(
        "budget_client.py",
        &config,
        &d.join("state.db"),
        &calls,
    );
    let results = report["results"].as_array().unwrap();

    // 40 matches, 30 asked for, a few fit.
    let paint = &results[0];
    let out = &paint["out"];
    assert_eq!(paint["is_error"], false, "{paint}");
    assert_eq!(out["total"], 40, "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    let n = out["tools"].as_array().unwrap().len();
    assert!((1..30).contains(&n), "{n} tools shown: {out}");
    let text = paint["text"].as_str().unwrap();
    let note = format!("// truncated: {} more tools match but their declarations do not fit your output budget (max_output_bytes, 65536 bytes); narrow the query or pass `server`.\n", 40 - n);
    assert!(
        text.ends_with(&note),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert_eq!(
        text.matches("\"color-0999\"").count(),
        n,
        "each shown tool whole"
    );
    assert!(
        paint["bytes"].as_u64().unwrap() <= 65_536,
        "{}",
        paint["bytes"]
    );

    // One match, larger alone than the bound: its declaration cut at a line, said.
    let giant = &results[1];
    let out = &giant["out"];
    assert_eq!(out["tools"], json!(["shop:giant"]), "{out}");
    assert_eq!(out["truncated"], true, "{out}");
    let text = giant["text"].as_str().unwrap();
    assert!(
        text.ends_with("\n// truncated: the declaration of shop:giant is cut to fit your output budget (max_output_bytes, 65536 bytes; it is in the text and in structuredContent); call it with the arguments you know: INVALID_ARGUMENTS names what is wrong.\n"),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert!(text.contains("\"size-00000\""), "{}", &text[..400]);
    assert!(!text.contains("\"size-59999\""));
    assert!(
        giant["bytes"].as_u64().unwrap() <= 65_536,
        "{}",
        giant["bytes"]
    );

    // What fits is whole and not marked.
    let ping = &results[2];
    assert_eq!(ping["out"]["truncated"], false, "{ping}");
    assert_eq!(ping["out"]["tools"], json!(["shop:ping"]), "{ping}");
    assert!(
        !ping["text"].as_str().unwrap().contains("truncated"),
        "{ping}"
    );
}
