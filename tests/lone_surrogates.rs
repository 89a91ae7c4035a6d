//! JavaScript strings may hold lone UTF-16 surrogates; they are not Unicode text, so wherever a
//! string leaves the runner (results, object keys, tool arguments, error messages, logs) each
//! lone surrogate becomes U+FFFD. Surrogate pairs (emoji) are kept.

use crate::common;
use common::*;
use serde_json::json;

#[tokio::test]
async fn lone_surrogates_become_replacement_characters_everywhere() {
    let c = local_catalog();
    let o = run(&c, r#"return ["a\uD800b", {"k\uDC00": "\uD83D\uDE00"}]"#).await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, json!(["a\u{fffd}b", {"k\u{fffd}": "\u{1f600}"}]));

    let o = run(
        &c,
        r#"const r = await mcp.local.echo({ s: "x\uDBFFy" }); return r.s"#,
    )
    .await;
    assert!(o.success, "{:?}", o.error);
    assert_eq!(o.result, "x\u{fffd}y");
    let start = o.traces.iter().find(|t| t.tool == "local:echo");
    assert!(start.is_some(), "{:?}", o.traces);

    let o = run(
        &c,
        r#"console.log("log \uD800"); throw new Error("bad \uDC00 thing")"#,
    )
    .await;
    let e = o.error.as_ref().expect("must fail");
    assert_eq!(e.code.as_str(), "RUNTIME_ERROR", "{e:?}");
    assert_eq!(e.message, "Error: bad \u{fffd} thing");
    assert_eq!(o.logs[0].message, "log \u{fffd}");

    let o = run(&c, r#"throw "thrown \uD800""#).await;
    assert_eq!(o.error.unwrap().message, "Uncaught thrown \u{fffd}");
}
