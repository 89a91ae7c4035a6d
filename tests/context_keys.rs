//! Context keys become the script's global variables: keys that are not identifiers or would
//! shadow a built-in (`Object`, `Proxy`, `undefined`, `mcp`, …) are refused with
//! INVALID_ARGUMENTS naming the key, before any runner is spawned; ordinary keys work.

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

async fn run_ctx(key: &str, value: Value) -> (mcp_sandbox::Outcome, u32) {
    let spawned = Arc::new(AtomicU32::new(0));
    let s = spawned.clone();
    let mut context = Map::new();
    context.insert(key.to_string(), value);
    let o = mcp_sandbox::execute(
        &local_catalog(),
        &runner(),
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits::default()),
            code: format!("return typeof {key} === 'undefined' ? null : {key}"),
            context,
            on_spawn: Some(mcp_sandbox::SpawnHook::new(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })),
            ..Default::default()
        },
    )
    .await;
    (o, spawned.load(Ordering::SeqCst))
}

#[tokio::test]
async fn keys_that_shadow_built_ins_are_refused_before_spawning() {
    for key in [
        "Object",
        "Proxy",
        "undefined",
        "mcp",
        "console",
        "globalThis",
        "Promise",
        "JSON",
        "eval",
        "NaN",
        "performance",
        "__proto__",
        "hasOwnProperty",
    ] {
        let (o, spawned) = run_ctx(key, json!(1)).await;
        let e = o.error.as_ref().unwrap_or_else(|| panic!("{key}: {o:?}"));
        assert_eq!(e.code.as_str(), "INVALID_ARGUMENTS", "{key}: {e:?}");
        assert!(
            e.message.contains(&format!("'{key}'")),
            "{key}: {}",
            e.message
        );
        assert!(e.message.contains("built-in"), "{key}: {}", e.message);
        assert_eq!(spawned, 0, "{key}: a runner was spawned");
    }
    for key in ["a-b", "1x", "", "with space"] {
        let (o, spawned) = run_ctx(key, json!(1)).await;
        assert_eq!(code(&o), "INVALID_ARGUMENTS", "{key:?}: {o:?}");
        assert_eq!(spawned, 0);
    }
}

#[tokio::test]
async fn ordinary_keys_still_work() {
    for key in ["data", "items", "$x", "_private", "objectList", "Objects"] {
        let (o, spawned) = run_ctx(key, json!({"k": [1, 2]})).await;
        assert!(o.success, "{key}: {o:?}");
        assert_eq!(o.result, json!({"k": [1, 2]}));
        assert_eq!(spawned, 1);
    }
}
