//! Headless Chromium driven over the Chrome DevTools Protocol (a websocket, `tungstenite`):
//! enough of it for the web view's browser test — open a page, evaluate JavaScript, wait for a
//! condition, take a screenshot, and record every URL the page requested.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// The Chromium binary (Debian's `chromium`; `scripts/setup.sh` installs it).
pub fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

pub struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    next_id: u64,
    session: String,
    /// The URL of every request the page made (`Network.requestWillBeSent`).
    pub requests: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    /// Starts headless Chromium with a fresh profile and opens one page of `width` x `height`.
    pub fn start(width: u32, height: u32) -> Browser {
        let program = chromium().expect("chromium is not installed (scripts/setup.sh installs it)");
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(program)
            .args([
                "--headless=new",
                // The tests run as root in CI, where Chromium's own sandbox cannot start; the
                // page is the gateway's own.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("chromium did not print its DevTools address within 20 s");
        // ws://127.0.0.1:PORT/devtools/browser/ID: a plain socket with a read timeout, so a
        // page that never answers fails the test instead of hanging it.
        let hostport = url
            .strip_prefix("ws://")
            .and_then(|r| r.split('/').next())
            .unwrap()
            .to_string();
        let stream = TcpStream::connect(&hostport).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let (ws, _) = tungstenite::client(url.as_str(), stream).unwrap();
        let mut b = Browser {
            child,
            ws,
            next_id: 0,
            session: String::new(),
            requests: Vec::new(),
            _profile: profile,
        };
        let target = b.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached = b.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.call("Network.enable", json!({}));
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    /// A command to the page; its `result` (panics on a protocol error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            let m = match self.ws.read() {
                Ok(Message::Text(t)) => serde_json::from_str::<Value>(t.as_str()).unwrap(),
                Ok(_) => continue,
                Err(e) => panic!("DevTools connection failed during {method}: {e}"),
            };
            if m["method"] == "Network.requestWillBeSent" {
                if let Some(u) = m["params"]["request"]["url"].as_str() {
                    self.requests.push(u.to_string());
                }
            }
            if m["id"] == json!(id) {
                if let Some(e) = m.get("error") {
                    panic!("{method} failed: {e}");
                }
                return m["result"].clone();
            }
        }
    }

    /// Evaluates `expr` in the page (promises awaited); its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr} threw: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is truthy (checked every 100 ms); its value. Panics with `what` and
    /// the last value after `within`.
    pub fn wait_for(&mut self, what: &str, expr: &str, within: Duration) -> Value {
        let started = Instant::now();
        loop {
            let v = self.eval(expr);
            let truthy =
                !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
            if truthy {
                return v;
            }
            if started.elapsed() > within {
                let status = self.eval("document.getElementById('status') && document.getElementById('status').textContent");
                panic!("{what}: not within {within:?} (last value {v}; page status {status})");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// A PNG of the page as it is now.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap()
    }
}
