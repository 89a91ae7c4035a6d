//! A confined stdio server's declared network, end to end (issue 59 item 3 and Done-when):
//! a real `serve --http` gateway starts tests/python/net_server.py (official Python SDK, from
//! the venv) confined with `"network": {"allow": [...]}`; on tool calls the server reaches the
//! test's TLS server by name through its egress proxy with httpx (the SDK's client, honouring
//! HTTPS_PROXY), and its connections to the cloud metadata address, to PostgreSQL's port on
//! loopback, to the gateway's own port and to a host not allowed are refused; a connection
//! that ignores the proxy has no network at all. The refusals are in the gateway's trace (its
//! `mcp_sandbox::egress` events), in `/metrics`, on the web view's `/ui/api/egress` and its Network
//! page (rendered by headless Chromium), and in `mcp-sandbox audit --detail`. The
//! declared name comes from the proxy's test-only resolver hook (see tests/egress_proxy.rs).

use crate::common::{cli_run, repo_root};
use crate::egress_proxy::{local_ip, tls_server, BODY, NAME};
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

fn answer(r: &Value) -> Value {
    assert_eq!(r["is_error"], json!(false), "{r}");
    let text = r["out"]["result"]["result"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn code(code: &str) -> Value {
    json!({ "code": code })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confined_server_reaches_its_declared_host_and_nothing_else() {
    let data = tempfile::tempdir().unwrap();
    let ip = local_ip();
    let port = tls_server(ip, data.path());
    let ca = data.path().join("ca.pem");
    let resolve = format!("{NAME}={ip}");
    let h = start_http_state_env(
        json!({"mcpServers": {"net": {
            "command": repo_root().join(".venv/bin/python"),
            "args": [repo_root().join("tests/python/net_server.py")],
            "files": {"read": [data.path()]},
            "network": {
                "allow": [format!("{NAME}:{port}"), "169.254.169.254:80", "localhost:5432"],
                "privateNetworks": true
            },
            "startupTimeoutMs": 30000
        }}}),
        None,
        &[],
        &[("MCP_SANDBOX_EGRESS_TEST_RESOLVE", resolve.as_str())],
    )
    .await;
    let gateway_port = h.addr.rsplit_once(':').unwrap().1.to_string();
    let target = format!("https://{NAME}:{port}/hello");
    let calls = json!([
        code(&format!(
            "return await mcp.net.fetch({{url: {target:?}, ca: {:?}}})",
            ca.to_str().unwrap()
        )),
        code("return await mcp.net.connect({target: '169.254.169.254:80'})"),
        code("return await mcp.net.connect({target: 'localhost:5432'})"),
        code(&format!(
            "return await mcp.net.connect({{target: '127.0.0.1:{gateway_port}'}})"
        )),
        code("return await mcp.net.connect({target: 'other.example:443'})"),
        code(&format!(
            "return await mcp.net.direct({{host: '{ip}', port: {port}}})"
        )),
    ]);
    let r = results(&sdk(&url(&h), None, &calls));
    assert_eq!(
        answer(&r[0]),
        json!({"ok": true, "status": 200, "body": BODY}),
        "the declared host, by name, through the proxy"
    );
    let refused = [
        ("169.254.169.254", "80", "link_local"),
        ("localhost", "5432", "loopback"),
        ("127.0.0.1", gateway_port.as_str(), "not_allowed"),
        ("other.example", "443", "not_allowed"),
    ];
    for (i, (host, port, reason)) in refused.iter().enumerate() {
        let a = answer(&r[i + 1]);
        assert_eq!(a["status"], "HTTP/1.1 403 Forbidden", "{a}");
        assert_eq!(
            a["body"],
            format!("mcp-sandbox egress proxy: {host}:{port} is refused ({reason}); the server's network.allow list decides"),
            "{a}"
        );
    }
    assert_eq!(
        answer(&r[5]),
        json!({"ok": false, "errno": "ENETUNREACH"}),
        "no network but the proxy"
    );

    // The gateway's trace: one egress event per connection, with the reason.
    let log = h.stderr();
    for (host, port, reason) in &refused {
        assert!(
            log.lines().any(|l| l.contains("mcp_sandbox::egress")
                && l.contains("server=net")
                && l.contains(&format!("host={host} port={port}"))
                && l.contains(&format!("reason={reason}"))),
            "{host}:{port} {reason} not in the gateway's log:\n{log}"
        );
    }
    assert!(
        log.lines().any(|l| l.contains("mcp_sandbox::egress")
            && l.contains(&format!("host={NAME} port={port}"))
            && l.contains("outcome=\"allowed\"")),
        "{log}"
    );
    // Counted, and listed on the web view.
    let metrics = exchange(
        &h.addr,
        format!(
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            h.addr
        )
        .as_bytes(),
    )
    .await;
    let text = metrics.body.clone();
    assert!(
        text.contains(r#"mcp_sandbox_egress_connections_total{server="net",outcome="refused"} 4"#)
            && text.contains(
                r#"mcp_sandbox_egress_connections_total{server="net",outcome="allowed"} 1"#
            ),
        "{text}"
    );
    let ui = exchange(
        &h.addr,
        format!(
            "GET /ui/api/egress HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            h.addr
        )
        .as_bytes(),
    )
    .await;
    let listed: Value = serde_json::from_str(&ui.body).unwrap();
    let mut got: Vec<(String, String, String)> = listed["refused"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|c| {
            assert_eq!(c["server"], "net", "{c}");
            (
                c["host"].as_str().unwrap().to_string(),
                c["port"].to_string(),
                c["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = refused
        .iter()
        .map(|(h, p, r)| (h.to_string(), p.to_string(), r.to_string()))
        .collect();
    want.sort();
    assert_eq!(got, want, "{listed}");

    // The same four on the web view's Network page, rendered by headless Chromium: one row each,
    // with the server, host:port and reason the proxy decided.
    let origin = format!("http://{}", h.addr);
    let mut shown: Vec<(String, String, String)> = tokio::task::block_in_place(|| {
        let mut b = serve_support::cdp::Browser::start(1100, 700);
        b.navigate(&format!("{origin}/ui#/network"));
        let rows = b.wait_for(
            "the Network page's four refused connections",
            "document.querySelectorAll('#egress-table tr').length === 5 && [...document.querySelectorAll('#egress-table tr')].slice(1).map(r => [...r.children].map(td => td.textContent))",
            std::time::Duration::from_secs(10),
        );
        rows.as_array()
            .unwrap_or_else(|| panic!("{rows}"))
            .iter()
            .map(|r| {
                assert_eq!(r[1], "net", "{r}");
                let (host, port) = r[3].as_str().unwrap().rsplit_once(':').unwrap();
                (
                    host.to_string(),
                    port.to_string(),
                    r[5].as_str().unwrap().to_string(),
                )
            })
            .collect()
    });
    shown.sort();
    assert_eq!(shown, want);

    // The audit log: each refusal is a warn line of the execution whose call made it, shown by
    // the real `mcp-sandbox audit --detail` against the gateway's state store.
    let state = h.state.to_str().unwrap();
    let audit = cli_run(&[
        "audit",
        "--json",
        "--detail",
        "--tool",
        "net:connect",
        "--state",
        state,
    ]);
    assert_eq!(
        audit.status,
        0,
        "{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let records: Value = serde_json::from_slice(&audit.stdout).unwrap();
    let records = records.as_array().unwrap_or_else(|| panic!("{records}"));
    assert_eq!(records.len(), 4, "one execution per connect: {records:?}");
    for (host, port, reason) in &refused {
        let target = format!("{host}:{port}");
        let of_call: Vec<&Value> = records
            .iter()
            .filter(|r| {
                r["code"]
                    .as_str()
                    .is_some_and(|c| c.contains(&format!("target: '{target}'")))
            })
            .collect();
        assert_eq!(of_call.len(), 1, "{target}: {records:?}");
        assert_eq!(
            of_call[0]["detail"]["logs"],
            json!([{
                "level": "warn",
                "message": format!("[net] mcp-sandbox egress: connection to {target} refused ({reason})")
            }]),
            "{target}: {}",
            of_call[0]
        );
    }
    // The text form: the line under its record.
    let text = cli_run(&[
        "audit",
        "--detail",
        "--tool",
        "net:connect",
        "--state",
        state,
    ]);
    assert_eq!(text.status, 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().any(|l| l
            == "    warn [net] mcp-sandbox egress: connection to other.example:443 refused (not_allowed)"),
        "{text}"
    );
    // Without --detail, one line per record as before.
    let plain = cli_run(&["audit", "--tool", "net:connect", "--state", state]);
    assert_eq!(String::from_utf8_lossy(&plain.stdout).lines().count(), 4);
}
