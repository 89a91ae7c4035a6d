//! Randomness is fresh per execution (issue 26): every runner forked from one zygote, every
//! exec'd runner started at the same moment and every tenant of `serve` draws its own values
//! from `Math.random()`, `crypto.randomUUID()` and `crypto.getRandomValues()`, seeded from the
//! kernel per runner (QuickJS seeded `Math.random` once from the clock, in the zygote: 1,100
//! runs gave 2 distinct values before). Also `getRandomValues`'s Web Crypto edge cases.

use crate::common;
use crate::serve_support;
use common::*;
use mcp_sandbox::exec::runner::SpawnMode;
use mcp_sandbox::ExecRequest;
use serde_json::{json, Value};
use std::collections::HashSet;

const DRAW: &str = "return [Math.random(), crypto.randomUUID()]";

async fn draw(cmd: &mcp_sandbox::RunnerCommand, catalog: &mcp_sandbox::Catalog) -> (f64, String) {
    let o = mcp_sandbox::execute(
        catalog,
        cmd,
        ExecRequest {
            code: DRAW.into(),
            ..Default::default()
        },
    )
    .await;
    assert!(o.success, "{o:?}");
    (
        o.result[0].as_f64().unwrap(),
        o.result[1].as_str().unwrap().to_string(),
    )
}

fn is_uuid_v4(u: &str) -> bool {
    let b = u.as_bytes();
    u.len() == 36
        && [8, 13, 18, 23].iter().all(|i| b[*i] == b'-')
        && b[14] == b'4'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
        && u.chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_runners_forked_from_one_zygote_draw_distinct_values() {
    let cmd = runner();
    assert_eq!(cmd.effective_spawn(), SpawnMode::Zygote);
    let catalog = local_catalog();
    let mut randoms = HashSet::new();
    let mut uuids = HashSet::new();
    for _ in 0..1000 {
        let (r, u) = draw(&cmd, &catalog).await;
        assert!((0.0..1.0).contains(&r), "{r}");
        assert!(is_uuid_v4(&u), "{u}");
        randoms.insert(r.to_bits());
        uuids.insert(u);
    }
    assert_eq!(cmd.zygotes.started(), 1, "all 1,000 forked from one zygote");
    assert_eq!(randoms.len(), 1000, "first Math.random() of each runner");
    assert_eq!(uuids.len(), 1000, "randomUUID of each runner");
    cmd.zygotes.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn execd_runners_started_together_draw_distinct_values() {
    let mut cmd = runner();
    cmd.spawn = SpawnMode::Exec;
    let catalog = std::sync::Arc::new(local_catalog());
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let (cmd, catalog) = (cmd.clone(), catalog.clone());
            tokio::spawn(async move { draw(&cmd, &catalog).await })
        })
        .collect();
    let mut randoms = HashSet::new();
    for t in tasks {
        randoms.insert(t.await.unwrap().0.to_bits());
    }
    assert_eq!(randoms.len(), 24);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_random_values_follows_web_crypto() {
    let o = run(
        &local_catalog(),
        r#"
        const errorOf = (f) => { try { f(); return null } catch (e) { return [e.name, e.message] } };
        const kinds = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array,
                       Int32Array, Uint32Array, BigInt64Array, BigUint64Array];
        const filled = kinds.map((K) => {
          const a = new K(64);
          const same = crypto.getRandomValues(a) === a;
          return [K.name, same, Array.from(a).some((x) => x != 0)];
        });
        // A view fills only its own bytes.
        const buf = new Uint8Array(16);
        crypto.getRandomValues(new Uint8Array(buf.buffer, 4, 8));
        const outside = [...buf.slice(0, 4), ...buf.slice(12)].every((x) => x === 0);
        return {
          filled,
          outside,
          empty: crypto.getRandomValues(new Uint8Array(0)).length,
          atQuota: crypto.getRandomValues(new Uint8Array(65536)).length,
          atQuota32: crypto.getRandomValues(new Uint32Array(16384)).length,
          overQuota: errorOf(() => crypto.getRandomValues(new Uint8Array(65537))),
          overQuota32: errorOf(() => crypto.getRandomValues(new Uint32Array(16385))),
          float32: errorOf(() => crypto.getRandomValues(new Float32Array(4))),
          float64: errorOf(() => crypto.getRandomValues(new Float64Array(4))),
          dataView: errorOf(() => crypto.getRandomValues(new DataView(new ArrayBuffer(4)))),
          plain: errorOf(() => crypto.getRandomValues([1, 2, 3])),
          none: errorOf(() => crypto.getRandomValues()),
          uuid: crypto.randomUUID(),
          twoUuids: crypto.randomUUID() !== crypto.randomUUID(),
        };
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    let r = &o.result;
    for k in r["filled"].as_array().unwrap() {
        assert_eq!(k[1], json!(true), "returns its argument: {k}");
        assert_eq!(k[2], json!(true), "filled: {k}");
    }
    assert_eq!(r["filled"].as_array().unwrap().len(), 9);
    assert_eq!(r["outside"], json!(true));
    assert_eq!(r["empty"], json!(0));
    assert_eq!(r["atQuota"], json!(65536));
    assert_eq!(r["atQuota32"], json!(16384));
    for key in ["overQuota", "overQuota32"] {
        assert_eq!(r[key][0], json!("QuotaExceededError"), "{key}: {r}");
        assert!(
            r[key][1].as_str().unwrap().contains("at most 65536"),
            "{key}: {r}"
        );
    }
    for key in ["float32", "float64", "dataView", "plain", "none"] {
        assert_eq!(r[key][0], json!("TypeError"), "{key}: {r}");
        assert!(
            r[key][1].as_str().unwrap().contains("integer typed array"),
            "{key}: {r}"
        );
    }
    assert!(is_uuid_v4(r["uuid"].as_str().unwrap()), "{r}");
    assert_eq!(r["twoUuids"], json!(true));
}

/// Two tenants of one `serve --http` (one zygote) get different values.
#[tokio::test(flavor = "multi_thread")]
async fn two_tenants_over_http_draw_different_values() {
    use serve_support::http::*;
    use serve_support::team::*;
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    let ta = create_token(&h.state, "alice", &["--tenant", "a"]);
    let tb = create_token(&h.state, "bob", &["--tenant", "b"]);
    let sa = open_session_as(&h.addr, &ta).await;
    let sb = open_session_as(&h.addr, &tb).await;
    let mut seen: Vec<Value> = Vec::new();
    for i in 0..5 {
        for (token, session) in [(&ta, &sa), (&tb, &sb)] {
            let a = execute_as(&h.addr, token, session, 10 + i, DRAW).await;
            assert_eq!(a.status, 200, "{a:?}");
            let result = a.reply(10 + i)["result"]["structuredContent"]["result"].clone();
            assert!(result[0].is_f64(), "{result}");
            seen.push(result);
        }
    }
    let randoms: HashSet<String> = seen.iter().map(|v| v[0].to_string()).collect();
    let uuids: HashSet<String> = seen.iter().map(|v| v[1].to_string()).collect();
    assert_eq!(randoms.len(), seen.len(), "{seen:?}");
    assert_eq!(uuids.len(), seen.len(), "{seen:?}");
}
