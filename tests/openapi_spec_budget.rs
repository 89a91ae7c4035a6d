//! Specs loaded by reference, within a budget (issue 57 item 1). A 3.3 KB JSON whose component
//! schemas' `$ref`s fan out 6 ways over 11 levels (tests/fixtures/openapi/hostile/ref-fanout.json:
//! 6^11 copies if resolved in full) loads: its tool refers to 12 shared `$defs`. Hostile
//! descriptions are refused by the budget they exceed, named with the spec's part, while they
//! are being loaded (not after growing the host by gigabytes): the same fan-out with a 4 KiB
//! `resolvedBytes`; the fan-out through `$ref`s that are copied (not into
//! `#/components/schemas`); a 1 MB YAML aliasing one 1 MiB anchor 8,000 times (8 GiB if
//! expanded); a YAML nesting 100,000 flow collections (its parser's work grows with the square of
//! the nesting). `startupTimeoutMs` holds for an OpenAPI entry: the copied fan-out with its
//! budget raised is abandoned at the deadline. The other server of the config stays usable.

use crate::common;
use common::*;
use serde_json::json;

const SCRIPT: &str = r#"
const out = {};
for (const s of ["tight", "copied", "bomb", "deep", "slow"]) {
  try { await mcp[s].fan({}); out[s] = "answered" } catch (e) { out[s] = [e.code, e.message] }
}
out.ok = Object.keys(mcp.ok);
out.fan = Object.keys(mcp.fan);
// The validator reads the shared schemas: a number where L1 (an object) is refused.
try { await mcp.fan.fan({body: {a: 5}}); out.fanBad = "answered" } catch (e) { out.fanBad = [e.code, e.message] }
return out;
"#;

#[test]
fn hostile_specs_are_refused_by_the_budget_they_exceed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        repo_root().join("tests/fixtures/openapi/hostile/ref-fanout.json"),
        d.join("fanout.json"),
    )
    .unwrap();
    // The same fan-out through `$ref`s the resolver copies (a pointer outside the components'
    // schemas): each use is a copy, as every `$ref` was before.
    let mut copied: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("fanout.json"))
            .unwrap()
            .replace("#/components/schemas/", "#/x-shared/"),
    )
    .unwrap();
    copied["x-shared"] = copied["components"]["schemas"].take();
    std::fs::write(d.join("copied.json"), copied.to_string()).unwrap();
    let mut bomb =
        String::from("openapi: 3.0.3\ninfo: {title: bomb, version: '1'}\nx-big: &big \"");
    bomb.push_str(&"a".repeat(1 << 20));
    bomb.push_str("\"\nx-copies:\n");
    for _ in 0..8000 {
        bomb.push_str("  - *big\n");
    }
    bomb.push_str("paths: {}\n");
    std::fs::write(d.join("bomb.yaml"), bomb).unwrap();
    let levels = 100_000;
    std::fs::write(
        d.join("deep.yaml"),
        format!(
            "openapi: 3.0.3\npaths: {{}}\nx-deep: {}{}\n",
            "[".repeat(levels),
            "]".repeat(levels)
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("ok.yaml"),
        "openapi: 3.1.0\npaths:\n  /ping:\n    get:\n      operationId: ping\n",
    )
    .unwrap();
    let entry = |spec: &str| json!({"openapi": spec, "baseUrl": "https://api.example.com"});
    let mut tight = entry("fanout.json");
    tight["specBudget"] = json!({"resolvedBytes": 4096});
    let mut slow = entry("copied.json");
    slow["specBudget"] = json!({"resolvedBytes": 1u64 << 40});
    slow["startupTimeoutMs"] = json!(500);
    let config = d.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "fan": entry("fanout.json"),
            "tight": tight,
            "copied": entry("copied.json"),
            "bomb": entry("bomb.yaml"),
            "deep": entry("deep.yaml"),
            "slow": slow,
            "ok": entry("ok.yaml")
        }})
        .to_string(),
    )
    .unwrap();
    let script = d.join("s.js");
    std::fs::write(&script, SCRIPT).unwrap();
    let runner = bin("sandbox-runner");
    let run = cli_run_env(
        &[
            "run",
            "--json",
            "--config",
            config.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
        &[("MCP_SANDBOX_RUNNER", runner.to_str().unwrap())],
    );
    let o = run.outcome();
    let r = &o["result"];
    let reason = |s: &str| -> String {
        assert_eq!(r[s][0], "SERVER_UNAVAILABLE", "{s}: {r}");
        r[s][1].as_str().unwrap().to_string()
    };
    assert_eq!(r["fan"], json!(["fan"]), "{r}");
    assert_eq!(r["fanBad"][0], "INVALID_ARGUMENTS", "{r}");
    let tight = reason("tight");
    assert!(
        tight.contains("CONFIG_OPENAPI_SPEC: the spec's schemas with their $refs resolved grow past the budget specBudget.resolvedBytes (4096 bytes) at POST /x requestBody: keep fewer operations with \"operations\" or \"tags\", or raise specBudget.resolvedBytes in the entry"),
        "{tight}"
    );
    let fan = reason("copied");
    assert!(
        fan.contains("CONFIG_OPENAPI_SPEC: the spec's schemas with their $refs resolved grow past the budget specBudget.resolvedBytes (536870912 bytes) at POST /x requestBody: keep fewer operations with \"operations\" or \"tags\", or raise specBudget.resolvedBytes in the entry"),
        "{fan}"
    );
    let bomb = reason("bomb");
    assert!(
        bomb.contains("CONFIG_OPENAPI_SPEC: the spec's document grows past its budget specBudget.parsedBytes (536870912 bytes) at /x-copies/")
            && bomb.contains(" (YAML aliases expand to copies): raise specBudget.parsedBytes in the entry if the spec is right"),
        "{bomb}"
    );
    let deep = reason("deep");
    assert!(
        deep.contains("CONFIG_OPENAPI_SPEC: the spec nests deeper than its budget specBudget.depth (256 levels) at line 3 (flow collections and compact sequences): raise specBudget.depth in the entry if the spec is right"),
        "{deep}"
    );
    let slow = reason("slow");
    assert!(
        slow.contains("did not finish starting within 500 ms"),
        "{slow}"
    );
    assert_eq!(r["ok"], json!(["ping"]), "{r}");
    // Refused while loading: the host never held the gigabytes these specs expand to.
    assert!(
        run.max_rss_kib < 1024 * 1024,
        "the host's peak RSS was {} KiB",
        run.max_rss_kib
    );
}
