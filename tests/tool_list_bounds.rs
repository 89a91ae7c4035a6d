//! A server's tool list is bounded (issue 44 item 3): a hostile server of our own
//! (`hostile-list-server`) that pages for ever, lists too many tools or too many bytes, or
//! floods `notifications/tools/list_changed`, cannot make the gateway hold more than the bounds
//! of its entry (`maxTools`, `maxToolListBytes`, `maxToolListPages`); the error names the server
//! and the bound, and a flood of notifications makes one listing at a time plus one queued.

use crate::common;

use common::{bin, run};
use mcp_sandbox::config::Config;
use mcp_sandbox::tools::catalog::{start_mcp_servers, Catalog};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Starts the servers of `servers` (a config's `mcpServers`); the ones that failed, by name.
async fn start(servers: Value) -> (Catalog, Vec<(String, String)>) {
    let text = json!({ "mcpServers": servers }).to_string();
    let config = Config::parse(&text, &common::repo_root()).expect("config");
    let (started, failed) = start_mcp_servers(&config, Duration::from_secs(20)).await;
    let mut c = Catalog::new();
    for s in started {
        c.add(s).unwrap();
    }
    (c, failed)
}

fn hostile(args: &[&str], extra: Value) -> Value {
    let mut entry = json!({"command": bin("hostile-list-server"), "args": args, "scope": "shared"});
    if let (Some(e), Value::Object(more)) = (entry.as_object_mut(), extra) {
        e.extend(more);
    }
    entry
}

#[tokio::test]
async fn a_server_that_pages_for_ever_is_refused_at_its_page_bound() {
    let (catalog, failed) = start(json!({
        "endless": hostile(&["--endless-pages"], json!({"maxToolListPages": 7})),
        "endless_default": hostile(&["--endless-pages"], json!({})),
    }))
    .await;
    assert!(catalog.tools().is_empty(), "{:?}", catalog.tools());
    let reason = |name: &str| {
        failed
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("{name} started: {failed:?}"))
    };
    assert_eq!(
        reason("endless"),
        "server 'endless' did not finish its tool list within 7 pages of tools/list (its bound \"maxToolListPages\"); its list was refused: raise \"maxToolListPages\" in its entry if it really needs more pages"
    );
    assert!(
        reason("endless_default")
            .contains("server 'endless_default' did not finish its tool list within 100 pages"),
        "{failed:?}"
    );
}

#[tokio::test]
async fn too_many_tools_or_bytes_are_refused_naming_the_bound() {
    let (catalog, failed) = start(json!({
        "many": hostile(&["--tools", "50"], json!({"maxTools": 20})),
        "heavy": hostile(&["--tools", "50"], json!({"maxToolListBytes": 2000})),
        "fits": hostile(&["--tools", "50"], json!({"maxTools": 50})),
    }))
    .await;
    let mut failed = failed;
    failed.sort();
    assert_eq!(
        failed,
        [
            ("heavy".to_string(), "server 'heavy' lists tools of more than 2000 bytes in all (its bound \"maxToolListBytes\"); its list was refused: raise \"maxToolListBytes\" in its entry if it really needs that much".to_string()),
            ("many".to_string(), "server 'many' lists more than 20 tools (its bound \"maxTools\"); its list was refused: raise \"maxTools\" in its entry if it really has that many".to_string()),
        ]
    );
    assert_eq!(catalog.tools().len(), 50);
    assert!(catalog.tools().iter().all(|t| t.server == "fits"));
}

#[test]
fn a_bound_of_zero_is_a_config_error() {
    let text = json!({"mcpServers": {"h": hostile(&["--flood"], json!({"maxTools": 0}))}});
    let err = Config::parse(&text.to_string(), &common::repo_root()).unwrap_err();
    assert!(
        err.to_string()
            .contains("server 'h': maxTools must be at least 1"),
        "{err}"
    );
}

/// The gateway's log lines, captured (the test runs on one thread, so every task logs here).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_flood_of_list_changed_makes_one_listing_in_flight_and_one_queued() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // Listing n (from 1) holds 2 + 10·n tools: the first two fit in 25, the third does not.
    let (catalog, failed) =
        start(json!({"h": hostile(&["--flood"], json!({"maxTools": 25}))})).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(catalog.tools().len(), 12);
    let flooded = run(&catalog, "return await mcp.h.flood({count: 1000})").await;
    assert_eq!(flooded.result, json!("sent"), "{flooded:?}");
    // The second listing (500 ms) covers the first notification, a third all the others.
    let warning =
        "server 'h' lists more than 25 tools (its bound \"maxTools\"); its list was refused";
    let since = Instant::now();
    while !logs.text().contains(warning) {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "no warning; logs: {}",
            logs.text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        logs.text()
            .contains(&format!("tool list changed but {warning}")),
        "{}",
        logs.text()
    );
    assert!(
        logs.text().contains("the previous list stays"),
        "{}",
        logs.text()
    );
    // Nothing else is queued: the server saw three listings (start, one in flight, one queued).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let lists = run(&catalog, "return await mcp.h.lists({})").await;
    assert_eq!(lists.result, json!("3"), "{lists:?}");
    // The catalog holds the second list (22 tools), within the bound.
    assert_eq!(catalog.tools().len(), 22);
    catalog.shutdown().await;
}
