//! Issue 44 item 4: the web view shows what the bytes say. A call whose argument holds U+202E
//! (RIGHT-TO-LEFT OVERRIDE: `alice@\u{202e}moc.live` displays as `alice@evil.com`) waits for an
//! approval; in headless Chromium (tests/serve_support/cdp.rs) the pending approvals panel
//! shows the override as the visible escape `\u{202e}`, as the terminal does (src/term.rs),
//! and so does the execution's detail view (its code and its log) after it is approved.

use crate::serve_support;
use serde_json::{json, Value};
use serve_support::cdp::Browser;
use serve_support::http::*;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const CODE: &str =
    "console.log('to alice@\u{202e}moc.live\u{7}'); return await mcp.fixture.echo({message: 'alice@\u{202e}moc.live'})";

#[tokio::test(flavor = "multi_thread")]
async fn bidi_overrides_and_controls_are_shown_visibly_in_the_panel_and_the_detail_view() {
    let h = start_http_with(json!({"ask": ["fixture:echo"]}), &[]).await;
    let origin = format!("http://{}", h.addr);
    let s = open_session(&h.addr).await;
    let live = {
        let (addr, s) = (h.addr.clone(), s.clone());
        tokio::spawn(async move {
            let a = post(&addr, Some(&s), &execute_body(2, json!({ "code": CODE }))).await;
            a.reply(2)["result"]["structuredContent"].clone()
        })
    };
    let mut b = tokio::task::block_in_place(|| Browser::start(1280, 860));
    tokio::task::block_in_place(|| {
        b.navigate(&format!("{origin}/ui"));
        let shown = b.wait_for(
            "the pending approval",
            "document.querySelector('#approvals .approval pre.args') && [document.querySelector('#approvals .approval .tool').textContent, document.querySelector('#approvals .approval pre.args').textContent]",
            WAIT,
        );
        assert_eq!(
            shown,
            json!([
                "fixture:echo",
                "{\n  \"message\": \"alice@\\u{202e}moc.live\"\n}"
            ])
        );
        b.eval("document.querySelector('#approvals .approval button.approve').click()");
    });
    let out: Value = tokio::time::timeout(WAIT, live).await.unwrap().unwrap();
    assert_eq!(out["error"], Value::Null, "{out}");
    let id = serve_support::team::audit(&h.state, &[])[0]["id"]
        .as_i64()
        .unwrap();
    tokio::task::block_in_place(|| {
        b.eval(&format!("location.hash = '#/exec/{id}'"));
        let detail = b.wait_for(
            "the detail view",
            "document.getElementById('exec-code') && document.getElementById('exec-logs') && [document.getElementById('exec-code').textContent, document.getElementById('exec-logs').textContent]",
            WAIT,
        );
        assert_eq!(
            detail,
            json!([
                "console.log('to alice@\\u{202e}moc.live\\x07'); return await mcp.fixture.echo({message: 'alice@\\u{202e}moc.live'})",
                "[log] to alice@\\u{202e}moc.live\\x07"
            ])
        );
        // No override reached the page's text anywhere.
        let raw = b.eval("document.body.innerText.includes('\\u202e')");
        assert_eq!(raw, json!(false));
    });
}
