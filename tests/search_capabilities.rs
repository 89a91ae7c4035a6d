//! `search_tools` finds saved capabilities (issue 15 item 7): through a real `serve` (stdio,
//! real rmcp client, real state store), a capability saved with `save_capability` is found by
//! a query and listed with a TypeScript declaration generated from its input schema.

use crate::serve_support;

use serde_json::json;
use serve_support::{is_error, start, structured};

#[tokio::test(flavor = "multi_thread")]
async fn search_tools_finds_a_saved_capability_with_its_declaration() {
    let served = start(&[]).await;
    let saved = served
        .call(
            "save_capability",
            json!({
                "name": "math:sum",
                "code": "return args.a + args.b",
                "description": "Adds a and b",
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "number", "description": "First."},
                        "b": {"type": "number"},
                        "round": {"type": "boolean"}
                    },
                    "required": ["a", "b"]
                }
            }),
        )
        .await
        .unwrap();
    assert!(!is_error(&saved), "{saved:?}");
    let id = structured(&saved)["id"].as_str().unwrap().to_string();

    let found = served
        .call("search_tools", json!({"query": "sum"}))
        .await
        .unwrap();
    assert!(!is_error(&found), "{found:?}");
    let body = structured(&found);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools.first(), Some(&"math:sum"), "{body}");
    let ts = body["typescript"].as_str().unwrap();
    println!("{ts}");
    assert!(ts.contains("math"), "{ts}");
    assert!(ts.contains("sum(args: {"), "{ts}");
    assert!(
        ts.contains("a: number;") && ts.contains("b: number;"),
        "{ts}"
    );
    assert!(ts.contains("round?: boolean;"), "{ts}");
    assert!(ts.contains("Adds a and b") && ts.contains(&id), "{ts}");

    // Listing one namespace works for capabilities too.
    let by_ns = served
        .call("search_tools", json!({"server": "math"}))
        .await
        .unwrap();
    assert!(!is_error(&by_ns), "{by_ns:?}");
    assert_eq!(structured(&by_ns)["tools"], json!(["math:sum"]));
    // And the declared call works.
    let run = served
        .call(
            "execute_code",
            json!({"code": "return await mcp.math.sum({a: 2, b: 5})"}),
        )
        .await
        .unwrap();
    assert_eq!(structured(&run)["result"], 7, "{run:?}");
}
