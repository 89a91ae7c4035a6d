//! The web view in a real browser (issue 32, items 2 and 4): headless Chromium, driven over the
//! DevTools protocol (tests/serve_support/cdp.rs), loads `/ui` from a real `serve --http` that
//! ran a known set of executions against the fixture MCP server, and the rendered page is
//! checked — the list holds exactly those executions, one execution's waterfall has its calls in
//! order with their durations (a capability's calls indented under it, a failed call marked),
//! the graph has the expected nodes and edge counts, a new execution appears without a reload
//! (after its call waited for an approval shown in the page's panel and approved there with a
//! click), and the page requested nothing from another origin. Screenshots of the waterfall and the
//! graph are written under target/ui-screenshots/ (with UPDATE_SCREENSHOTS=1: docs/img/, the
//! shown by docs/operating.md).

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::cdp::Browser;
use serve_support::http::*;
use serve_support::team::audit;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// The execution of the waterfall of docs/operating.md: a capability (its two calls beneath it), a sleep, a
/// failed call.
const NESTED: &str = "const n = await mcp.demo.twice({}); await mcp.fixture.sleep({ms: 40}); try { await mcp.fixture.fail({message: 'no'}) } catch (e) {} return n";

/// Runs `code` with execute_code in session `s`; panics unless the script succeeded.
async fn run(addr: &str, s: &str, id: i64, code: &str) {
    let a = post(addr, Some(s), &execute_body(id, json!({ "code": code }))).await;
    let reply = a.reply(id);
    assert_eq!(reply["result"]["isError"], json!(false), "{code}: {reply}");
}

fn save_screenshot(name: &str, png: &[u8]) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = if std::env::var_os("UPDATE_SCREENSHOTS").is_some_and(|v| v == "1") {
        root.join("docs/img")
    } else {
        root.join("target/ui-screenshots")
    };
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), png).unwrap();
}

/// The waterfall rows of the execution shown: (tool, depth, duration ms, offset ms, failed,
/// duration text, note).
fn rows(b: &mut Browser) -> Vec<Value> {
    b.eval(
        "[...document.querySelectorAll('#waterfall .wf-row[data-tool]')].map(r => [r.dataset.tool, +r.dataset.depth, +r.dataset.durationMs, +r.dataset.offsetMs, r.dataset.failed === 'true', r.querySelector('.wf-dur').textContent, r.querySelector('.wf-note').textContent])",
    )
    .as_array()
    .unwrap()
    .clone()
}

/// Opens execution `id` and waits for its waterfall.
fn open_execution(b: &mut Browser, id: i64, calls: usize) -> Vec<Value> {
    b.eval(&format!("location.hash = '#/exec/{id}'"));
    b.wait_for(
        &format!("the waterfall of #{id}"),
        &format!("document.getElementById('exec-title') && document.getElementById('exec-title').dataset.id === '{id}' && document.querySelectorAll('#waterfall .wf-row[data-tool]').length === {calls}"),
        WAIT,
    );
    rows(b)
}

/// What the page shows for a duration (app.js `ms`).
fn shown(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_view_shows_executions_waterfalls_and_the_graph_live() {
    // `fixture:add` (the live execution below) waits for an approval, given on the page.
    let h = start_http_with(json!({"ask": ["fixture:add"]}), &[]).await;
    let origin = format!("http://{}", h.addr);
    let s = open_session(&h.addr).await;
    // The known set: two echoes; a sleep then an echo; a failed call the script catches; a
    // capability that calls echo twice (saved, then called).
    run(&h.addr, &s, 2, "await mcp.fixture.echo({message: 'a'}); await mcp.fixture.echo({message: 'b'}); return 'pair'").await;
    run(&h.addr, &s, 3, "await mcp.fixture.sleep({ms: 300}); await mcp.fixture.echo({message: 'after'}); return 'slow'").await;
    run(&h.addr, &s, 4, "try { await mcp.fixture.fail({message: 'nope'}) } catch (e) { console.log('caught', e.code) } return 'handled'").await;
    let saved = post(
        &h.addr,
        Some(&s),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "save_capability", "arguments": {
            "name": "demo:twice", "description": "Echoes twice.",
            "input_schema": {"type": "object", "properties": {}},
            "code": "await mcp.fixture.echo({message: 'x'}); await mcp.fixture.echo({message: 'y'}); return 2"}}}),
    )
    .await;
    assert_eq!(
        saved.reply(5)["result"]["isError"],
        json!(false),
        "{saved:?}"
    );
    run(&h.addr, &s, 6, NESTED).await;
    let records = audit(&h.state, &[]);
    // Oldest first: the four executions and the capability save.
    assert_eq!(records.len(), 5, "{records:?}");
    let id = |i: usize| records[i]["id"].as_i64().unwrap();
    let (slow, failing, nested) = (id(1), id(2), id(4));

    let mut b = tokio::task::block_in_place(|| Browser::start(1280, 860));
    tokio::task::block_in_place(|| {
        b.navigate(&format!("{origin}/ui"));
        // The list: exactly the audited records, newest first, with their outcomes.
        let listed = b.wait_for(
            "the list of executions",
            "document.querySelectorAll('#executions tr.exec-row').length === 5 && [...document.querySelectorAll('#executions tr.exec-row')].map(r => [+r.dataset.id, r.dataset.outcome])",
            WAIT,
        );
        let expected: Vec<Value> = records
            .iter()
            .rev()
            .map(|r| json!([r["id"], r["outcome"]]))
            .collect();
        assert_eq!(listed, json!(expected));
        // Nothing stray under the table (a `null` child used to show as the text "null").
        let after = b.eval("document.getElementById('executions').nextSibling === null && !document.querySelector('main').textContent.includes('null')");
        assert_eq!(after, json!(true));

        // The waterfall of the slow one: sleep, then echo after it, with their durations.
        let r = open_execution(&mut b, slow, 2);
        let calls = records[1]["calls"].as_array().unwrap();
        assert_eq!(
            (r[0][0].clone(), r[1][0].clone()),
            (json!("fixture:sleep"), json!("fixture:echo"))
        );
        for (row, call) in r.iter().zip(calls) {
            let d = row[2].as_f64().unwrap();
            assert_eq!(d, call["duration_ms"].as_f64().unwrap(), "{row} vs {call}");
            assert_eq!(row[5], json!(shown(d)), "{row}");
            assert_eq!(row[1], json!(0));
        }
        let (sleep_d, sleep_at, echo_at) = (
            r[0][2].as_f64().unwrap(),
            r[0][3].as_f64().unwrap(),
            r[1][3].as_f64().unwrap(),
        );
        assert!((300.0..3000.0).contains(&sleep_d), "{r:?}");
        assert!(
            echo_at >= sleep_at + sleep_d - 1.0,
            "the echo starts after the sleep ends: {r:?}"
        );

        // The failed call is marked, with its code; the script's log is shown.
        let r = open_execution(&mut b, failing, 1);
        let code = records[2]["calls"][0]["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            (r[0][0].clone(), r[0][4].clone()),
            (json!("fixture:fail"), json!(true)),
            "{r:?}"
        );
        assert_eq!(r[0][6], json!(code), "{r:?}");
        let logs = b.eval("document.getElementById('exec-logs').textContent");
        assert_eq!(logs, json!(format!("[log] caught {code}")));

        // The capability's two calls are indented under it.
        let r = open_execution(&mut b, nested, 5);
        let shape: Vec<Value> = r.iter().map(|x| json!([x[0], x[1], x[4]])).collect();
        assert_eq!(
            shape,
            vec![
                json!(["demo:twice", 0, false]),
                json!(["fixture:echo", 1, false]),
                json!(["fixture:echo", 1, false]),
                json!(["fixture:sleep", 0, false]),
                json!(["fixture:fail", 0, true])
            ]
        );
        let code = b.eval("document.getElementById('exec-code').textContent");
        assert_eq!(code, json!(NESTED));
        save_screenshot("ui-waterfall.png", &b.screenshot());

        // Live: a new execution appears in the open list without a reload.
        b.eval("location.hash = '#/'; window.__kept = 42");
        b.wait_for(
            "the list again",
            "document.querySelectorAll('#executions tr.exec-row').length === 5",
            WAIT,
        );
    });
    let live = {
        let (addr, s) = (h.addr.clone(), s.clone());
        tokio::spawn(async move {
            run(&addr, &s, 7, "return await mcp.fixture.add({a: 1, b: 2})").await
        })
    };
    tokio::task::block_in_place(|| {
        // Its question appears in the pending approvals panel; Approve lets the call through.
        let shown = b.wait_for(
            "the pending approval",
            "document.querySelector('#approvals .approval') && !document.getElementById('approvals').hidden && [document.querySelectorAll('#approvals .approval').length, document.querySelector('#approvals .approval .tool').textContent, document.querySelector('#approvals .approval pre.args').textContent]",
            WAIT,
        );
        assert_eq!(
            shown,
            json!([1, "fixture:add", "{\n  \"a\": 1,\n  \"b\": 2\n}"])
        );
        b.eval("document.querySelector('#approvals .approval button.approve').click()");
        b.wait_for(
            "the panel to empty",
            "document.getElementById('approvals').hidden",
            WAIT,
        );
    });
    tokio::time::timeout(WAIT, live).await.unwrap().unwrap();
    let newest = audit(&h.state, &[]).last().unwrap()["id"].as_i64().unwrap();
    let approval = &audit(&h.state, &[]).last().unwrap()["calls"][0]["approval"].clone();
    assert_eq!(approval, &json!("granted by web (anonymous)"));
    tokio::task::block_in_place(|| {
        b.wait_for(
            "the new execution in the list",
            &format!("document.querySelector('#executions tr.exec-row') && document.querySelector('#executions tr.exec-row').dataset.id === '{newest}'"),
            WAIT,
        );
        assert_eq!(b.eval("window.__kept"), json!(42), "the page was reloaded");

        // The graph: a node per tool with its calls, an edge per learned sequence with its count.
        b.eval("location.hash = '#/graph'");
        b.wait_for(
            "the graph",
            "document.querySelectorAll('#graph g.node').length === 5",
            WAIT,
        );
        let mut nodes = b
            .eval("[...document.querySelectorAll('#graph g.node')].map(n => [n.dataset.tool, +n.dataset.calls, n.dataset.successRate])")
            .as_array()
            .unwrap()
            .clone();
        nodes.sort_by_key(|n| n[0].as_str().unwrap().to_string());
        assert_eq!(
            json!(nodes),
            json!([
                ["demo:twice", 1, "1.000"],
                ["fixture:add", 1, "1.000"],
                ["fixture:echo", 5, "1.000"],
                ["fixture:fail", 2, "0.000"],
                ["fixture:sleep", 2, "1.000"]
            ])
        );
        let mut edges = b
            .eval("[...document.querySelectorAll('#graph .edge')].map(e => [e.dataset.source, e.dataset.target, +e.dataset.count])")
            .as_array()
            .unwrap()
            .clone();
        edges.sort_by_key(|e| e.to_string());
        assert_eq!(
            json!(edges),
            json!([
                ["demo:twice", "fixture:sleep", 1],
                ["fixture:echo", "fixture:echo", 2],
                ["fixture:sleep", "fixture:echo", 1]
            ])
        );
        save_screenshot("ui-graph.png", &b.screenshot());

        // The capability with its code and schema.
        b.eval("location.hash = '#/capabilities'");
        let cap = b.wait_for("the capability", "document.querySelector('.cap[data-name=\"demo:twice\"]') && document.querySelector('.cap[data-name=\"demo:twice\"]').textContent", WAIT);
        assert!(
            cap.as_str()
                .unwrap()
                .contains("await mcp.fixture.echo({message: 'x'})"),
            "{cap}"
        );

        // Nothing was requested from another origin.
        assert!(
            b.requests.iter().any(|u| u.contains("/ui/api/executions")),
            "{:?}",
            b.requests
        );
        let foreign: Vec<&String> = b
            .requests
            .iter()
            .filter(|u| !u.starts_with(&format!("{origin}/")))
            .collect();
        assert!(
            foreign.is_empty(),
            "requests to another origin: {foreign:?}"
        );
    });
}
