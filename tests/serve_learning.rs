//! Learning in `mcp-sandbox serve --state PATH` (the real binary, a real rmcp client over
//! stdio, the fixture MCP server, the real runner, real SQLite): save_capability /
//! list_capabilities, capabilities callable from execute_code with nested traces, executions
//! feeding the tool graph, and search_tools ranking tools used together with its matches higher.

use crate::serve_support;
use serde_json::json;
use serve_support::*;

#[tokio::test(flavor = "multi_thread")]
async fn saved_capability_runs_from_execute_code_and_is_listed() {
    let served = start(&[]).await;
    let names: Vec<String> = served
        .client
        .peer()
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "execute_code",
        "search_tools",
        "save_capability",
        "list_capabilities",
    ] {
        assert!(names.iter().any(|n| n == t), "{t} missing from {names:?}");
    }

    let saved = served
        .call(
            "save_capability",
            json!({"name": "math:sum", "code": "return [1,2,3,4,5].reduce((a, n) => a + n, 0)",
                   "description": "Sum of one to five"}),
        )
        .await
        .unwrap();
    assert!(!is_error(&saved), "{saved:?}");
    let rec = structured(&saved);
    assert_eq!(rec["name"], "math:sum");
    assert_eq!(rec["version"], 1);
    let id = rec["id"].as_str().unwrap();
    assert!(id.starts_with("local.default.math.sum."), "{id}");
    assert_eq!(id.len(), "local.default.math.sum.".len() + 4, "{id}");
    assert_eq!(rec["call"], "await mcp.math.sum(args)");

    let run = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.math.sum()"}),
        )
        .await
        .unwrap();
    assert!(!is_error(&run), "{run:?}");
    let outcome = structured(&run);
    assert_eq!(outcome["result"], 15, "{outcome}");
    // capability_start / capability_end around nothing else.
    let events: Vec<(String, String)> = outcome["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["type"].as_str().unwrap().to_string(),
                t["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("capability_start".to_string(), "math:sum".to_string()),
            ("capability_end".to_string(), "math:sum".to_string())
        ],
        "{outcome}"
    );
    let traces = outcome["traces"].as_array().unwrap();
    assert_eq!(traces[0]["trace_id"], traces[1]["trace_id"]);
    assert_eq!(traces[1]["success"], true, "{outcome}");

    // A new version under the same name is picked up by the next execution.
    let v2 = served
        .call(
            "save_capability",
            json!({"name": "math:sum", "code": "return args.values.reduce((a, n) => a + n, 0)",
                   "input_schema": {"type": "object", "required": ["values"],
                                    "properties": {"values": {"type": "array", "items": {"type": "number"}}}}}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&v2)["version"], 2, "{v2:?}");
    let run = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.math.sum({ values: [10, 20] })"}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&run)["result"], 30, "{run:?}");

    let list = served.call("list_capabilities", json!({})).await.unwrap();
    assert!(!is_error(&list), "{list:?}");
    let caps = structured(&list)["capabilities"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(caps.len(), 1, "{caps:?}");
    assert_eq!(caps[0]["name"], "math:sum");
    assert_eq!(caps[0]["version"], 2);
    assert!(text(&list).contains("math:sum v2"), "{}", text(&list));

    // The store is the file given with --state: the CLI sees the same capability.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["capability", "list", "--json", "--state"])
        .arg(&served.state)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["name"], "math:sum", "{listed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_capabilities_are_tool_errors_with_clear_messages() {
    let served = start(&[]).await;
    let cases = [
        (
            json!({"name": "nocolon", "code": "return 1"}),
            "capability name 'nocolon' is not valid: use namespace:action",
        ),
        (
            json!({"name": "fixture:mine", "code": "return 1"}),
            "'fixture' is a configured MCP server",
        ),
        (
            json!({"name": "math:broken", "code": "return (1"}),
            "the code does not parse",
        ),
        (
            json!({"name": "math:schema", "code": "return 1", "input_schema": {"type": 12}}),
            "input_schema is not a valid JSON Schema",
        ),
    ];
    for (args, expected) in cases {
        let r = served.call("save_capability", args.clone()).await.unwrap();
        assert!(is_error(&r), "{args}: {r:?}");
        let e = &structured(&r)["error"];
        assert_eq!(e["code"], "INVALID_ARGUMENTS", "{args}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains(expected),
            "{args}: {e}"
        );
        assert!(text(&r).contains(expected), "{}", text(&r));
    }
    // A wrong argument type is a protocol error, like execute_code's.
    let err = served
        .call("save_capability", json!({"name": "math:x"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("`code` (a string) is required"),
        "{err}"
    );
    // Nothing was saved.
    let list = served.call("list_capabilities", json!({})).await.unwrap();
    assert_eq!(structured(&list)["capabilities"], json!([]));
    // An unknown capability fails before any runner starts, with TOOL_NOT_FOUND.
    let run = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.nocap.nothing()"}),
        )
        .await
        .unwrap();
    assert!(is_error(&run));
    assert_eq!(
        structured(&run)["error"]["code"],
        "TOOL_NOT_FOUND",
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn executions_feed_the_graph_and_search_ranks_related_tools_higher() {
    let served = start(&[]).await;
    let before = served
        .call("search_tools", json!({"query": "echo"}))
        .await
        .unwrap();
    let tools_before = structured(&before)["tools"].clone();
    assert_eq!(tools_before[0], "fixture:echo", "{before:?}");
    assert!(
        !tools_before
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "fixture:add"),
        "add does not match 'echo' by text: {tools_before}"
    );
    assert_eq!(structured(&before)["related"], json!([]));
    for _ in 0..2 {
        let r = served
            .call(
                "execute_code",
                json!({"code": "await mcp.fixture.echo({ message: 'x' }); return await mcp.fixture.add({ a: 1, b: 2 })"}),
            )
            .await
            .unwrap();
        assert!(!is_error(&r), "{r:?}");
    }
    // The graph in the state file has the edge, counted twice.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(["graph", "--json", "--state"])
        .arg(&served.state)
        .output()
        .unwrap();
    let g: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let edge = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "fixture:echo" && e["target"] == "fixture:add")
        .unwrap_or_else(|| panic!("no echo -> add edge: {g}"));
    assert_eq!(edge["count"], 2, "{g}");

    let after = served
        .call("search_tools", json!({"query": "echo"}))
        .await
        .unwrap();
    let s = structured(&after);
    assert_eq!(s["tools"][0], "fixture:echo", "{s}");
    assert_eq!(s["tools"][1], "fixture:add", "{s}");
    assert_eq!(s["related"][0]["tool"], "fixture:add", "{s}");
    assert_eq!(s["related"][0]["score"], 1.0, "{s}");
    assert!(
        text(&after)
            .contains("Used together with the best matches in past executions: fixture:add"),
        "{}",
        text(&after)
    );
}
