//! The gateway end to end: `mcp-sandbox serve` (the release binary, a state file with the audit
//! log on, as a team runs it) driven by clients written here, so the figures do not include a
//! Python or Node client's own cost.
//!
//! - `gateway_http_exec_ms`: one client on one keep-alive HTTP/1.1 connection (`TCP_NODELAY` on
//!   its side), `tools/call execute_code {code: "return 1+1"}`, each answer read to its end.
//! - `gateway_stdio_exec_ms`: the same over `serve`'s stdin/stdout (newline-delimited JSON-RPC).
//! - `gateway_http_execs_per_sec`: executions per second with 1, 8 and 64 such clients, each
//!   with its own connection and MCP session, 2 s each.
//! - `gateway_http_paced_exec_ms` / `gateway_stdio_paced_exec_ms`: the same one client, each
//!   request sent [`PACE`] after the previous answer, so the runner pool has refilled (as between
//!   an agent's turns, which are seconds apart). The two keys above send the next request as soon
//!   as an answer arrives: that execution then shares the two cores with the refill of the runner
//!   the previous one used (a zygote fork, the new runner's lockdown and pre-fault, ~0.5 ms of
//!   CPU). `pooled_exec_ms`, the library's figure, waits for a full pool before each sample, so
//!   the paced keys are the like-for-like comparison with it (`gateway_*_paced_added_ms`).

use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const PROTOCOL: &str = "2025-06-18";
const MODERN: &str = "2026-07-28";
const SCRIPT: &str = "return 1+1";
/// The pause before each request of the paced measurements (a refill takes ~0.7 ms).
pub(crate) const PACE: Duration = Duration::from_millis(3);

/// A `serve` process and what it printed to find its port.
pub(crate) struct Gateway {
    child: Child,
    _state: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The benchmark's config: a fair share as large as its 64 clients of one (anonymous) principal
/// (the default, 32 per principal, would refuse half of them: that is a test's subject, not a
/// throughput's). Written once per process.
fn bench_config() -> &'static Path {
    static CONFIG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    CONFIG.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!("mcp-sandbox-bench-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"mcpServers": {}, "sandbox": {"fair_share": {"per_principal": 4096, "per_tenant": 4096}}}"#,
        )
        .expect("write the benchmark's config");
        path
    })
}

fn serve_command(bin: &Path, state: &OsStr) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .arg("--state")
        .arg(state)
        // 64 clients from one address, each with its own session.
        .args(["--max-sessions-per-client", "256"])
        .env("MCP_SANDBOX_LOG", "error");
    cmd
}

/// Starts `serve --http 127.0.0.1:0` on a state file of its own and returns it with its address.
fn start_http(bin: &Path) -> (Gateway, std::net::SocketAddr) {
    let state = tempfile::tempdir().expect("tempdir");
    let file = state.path().join("state.db");
    let config = [OsStr::new("--config"), bench_config().as_os_str()];
    start_http_on(bin, file.as_os_str(), &config, state)
}

/// Starts `serve --http 127.0.0.1:0 --state STATE ARGS`, keeping `dir` until it stops.
pub(crate) fn start_http_on(
    bin: &Path,
    state_arg: &OsStr,
    args: &[&OsStr],
    state: tempfile::TempDir,
) -> (Gateway, std::net::SocketAddr) {
    let mut child = serve_command(bin, state_arg)
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve --http");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("serve --http exited before listening")
            .expect("stderr line");
        if let Some(rest) = line.split("at http://").nth(1) {
            break rest
                .trim_end_matches("/mcp")
                .parse()
                .expect("address in the listening line");
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (
        Gateway {
            child,
            _state: state,
        },
        addr,
    )
}

/// One MCP client on one keep-alive connection.
pub(crate) struct HttpClient {
    /// What [`HttpClient::execute`] runs, and the result it must answer.
    script: &'static str,
    expect: Value,
    send: hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    session: String,
    next_id: u64,
    /// Sent as `Authorization: Bearer …` when set.
    bearer: Option<String>,
    /// Speaks MCP 2026-07-28: no `initialize`, no session; the version, identity and
    /// capabilities in each request's `_meta`, and the session handle passed back.
    modern: bool,
    handle: Option<String>,
}

impl HttpClient {
    async fn connect(addr: std::net::SocketAddr) -> HttpClient {
        Self::connect_as(addr, None).await
    }

    /// [`HttpClient::connect`] with a bearer token on every request.
    pub(crate) async fn connect_as(
        addr: std::net::SocketAddr,
        bearer: Option<String>,
    ) -> HttpClient {
        let mut c = Self::connect_unopened(addr).await;
        c.bearer = bearer;
        let (head, body) = c
            .post(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}}
            }))
            .await;
        assert!(body.contains("\"result\""), "initialize: {body}");
        c.session = head
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("mcp-session-id")
            .to_string();
        let (head, _) = c
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(head.status, 202, "notifications/initialized");
        c
    }

    /// A client speaking MCP 2026-07-28 (no handshake): its first `execute_code` opens a session
    /// whose handle the next ones pass back, as a model following the tool description does.
    pub(crate) async fn connect_modern(addr: std::net::SocketAddr) -> HttpClient {
        let mut c = Self::connect_unopened(addr).await;
        c.modern = true;
        c
    }

    async fn connect_unopened(addr: std::net::SocketAddr) -> HttpClient {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(conn);
        HttpClient {
            script: SCRIPT,
            expect: json!(2),
            send,
            session: String::new(),
            next_id: 0,
            bearer: None,
            modern: false,
            handle: None,
        }
    }

    /// POSTs one message and reads the answer to its end.
    async fn post(&mut self, message: Value) -> (Head, String) {
        use http_body_util::BodyExt;
        let mut req = hyper::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(
                "mcp-protocol-version",
                if self.modern { MODERN } else { PROTOCOL },
            );
        if self.modern {
            req = req.header("mcp-method", message["method"].as_str().unwrap_or(""));
            if let Some(name) = message["params"]["name"].as_str() {
                req = req.header("mcp-name", name);
            }
        }
        if !self.session.is_empty() {
            req = req.header("mcp-session-id", &self.session);
        }
        if let Some(token) = &self.bearer {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        let req = req
            .body(http_body_util::Full::new(bytes::Bytes::from(
                message.to_string(),
            )))
            .expect("request");
        self.send.ready().await.expect("connection ready");
        let resp = self.send.send_request(req).await.expect("response");
        let head = Head {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
        };
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        (head, String::from_utf8_lossy(&body).into_owned())
    }

    /// One `execute_code` of its script ([`SCRIPT`] unless told otherwise); panics unless it
    /// answered the expected result.
    pub(crate) async fn execute(&mut self) {
        self.next_id += 1;
        let mut params = json!({"name": "execute_code", "arguments": {"code": self.script}});
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
            });
            if let Some(h) = &self.handle {
                params["arguments"]["session"] = json!(h);
            }
        }
        let (head, body) = self
            .post(json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}))
            .await;
        assert_eq!(head.status, 200, "execute_code: {body}");
        let answer = sse_answer(&body, self.next_id);
        if self.modern {
            let h = answer["result"]["structuredContent"]["session"].as_str();
            self.handle = Some(h.expect("a session handle").to_string());
        }
        assert_eq!(
            answer["result"]["structuredContent"]["result"], self.expect,
            "execute_code failed: {body}"
        );
    }
}

/// The JSON-RPC answer with `id` in an SSE body (or a plain JSON one).
fn sse_answer(body: &str, id: u64) -> Value {
    let messages = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(body))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok());
    for m in messages {
        if m.get("id") == Some(&json!(id)) {
            return m;
        }
    }
    panic!("no answer with id {id} in {body:?}")
}

struct Head {
    status: u16,
    headers: hyper::HeaderMap,
}

impl Head {
    fn get(&self, name: &str) -> Option<&hyper::header::HeaderValue> {
        self.headers.get(name)
    }
}

/// `serve` over stdio, one client.
struct Stdio1 {
    _gateway: Gateway,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Stdio1 {
    fn start(bin: &Path) -> Stdio1 {
        let state = tempfile::tempdir().expect("tempdir");
        let file = state.path().join("state.db");
        let mut child = serve_command(bin, file.as_os_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Stdio1 {
            _gateway: Gateway {
                child,
                _state: state,
            },
            stdin,
            stdout,
            next_id: 0,
        };
        let answer = s.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and reads lines until its answer (notifications are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "serve closed stdout");
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    fn execute(&mut self) {
        let v = self.request(
            "tools/call",
            json!({"name": "execute_code", "arguments": {"code": SCRIPT}}),
        );
        assert_eq!(
            v["result"]["structuredContent"]["result"],
            json!(2),
            "execute_code failed: {v}"
        );
    }
}

/// Milliseconds of each of `n` sequential executions, after `warm` unmeasured ones, each sent
/// `pause` after the previous answer.
async fn http_latency(
    addr: std::net::SocketAddr,
    warm: usize,
    n: usize,
    pause: Duration,
) -> Vec<f64> {
    let mut c = HttpClient::connect(addr).await;
    for _ in 0..warm {
        c.execute().await;
    }
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let t = Instant::now();
        c.execute().await;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms
}

/// Milliseconds of `n` paced executions of a legacy client and of a 2026-07-28 one, taken
/// turn about so that both see the same machine.
async fn paced_eras(addr: std::net::SocketAddr, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut legacy = HttpClient::connect(addr).await;
    let mut modern = HttpClient::connect_modern(addr).await;
    for _ in 0..20 {
        legacy.execute().await;
        modern.execute().await;
    }
    let (mut l, mut m) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        for (client, out) in [(&mut legacy, &mut l), (&mut modern, &mut m)] {
            tokio::time::sleep(PACE).await;
            let t = Instant::now();
            client.execute().await;
            out.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    (l, m)
}

/// Executions per second with `clients` clients for `window`.
async fn http_throughput(addr: std::net::SocketAddr, clients: usize, window: Duration) -> f64 {
    let mut connected = Vec::with_capacity(clients);
    for _ in 0..clients {
        connected.push(HttpClient::connect(addr).await);
    }
    throughput(connected, window).await
}

/// Executions per second of `clients` running `script` (answering `expect`), spread in turn
/// over `addrs`, for `window` after `warm` unmeasured executions each.
pub(crate) async fn spread_throughput(
    addrs: &[std::net::SocketAddr],
    clients: usize,
    script: &'static str,
    expect: Value,
    warm: usize,
    window: Duration,
) -> f64 {
    let mut connected = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut c = HttpClient::connect(addrs[i % addrs.len()]).await;
        c.script = script;
        c.expect = expect.clone();
        for _ in 0..warm {
            c.execute().await;
        }
        connected.push(c);
    }
    throughput(connected, window).await
}

/// Executions per second of `connected` clients, each executing in a loop for `window`.
async fn throughput(connected: Vec<HttpClient>, window: Duration) -> f64 {
    let t = Instant::now();
    let tasks: Vec<_> = connected
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                let mut n = 0u64;
                while t.elapsed() < window {
                    c.execute().await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("client");
    }
    total as f64 / t.elapsed().as_secs_f64()
}

/// Milliseconds of each of `n` sequential executions over stdio, after `warm` unmeasured ones,
/// each sent `pause` after the previous answer.
fn stdio_latency(s: &mut Stdio1, warm: usize, n: usize, pause: Duration) -> Vec<f64> {
    for _ in 0..warm {
        s.execute();
    }
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let t = Instant::now();
        s.execute();
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms
}

/// The gateway's keys, measured against the release `mcp-sandbox` at `bin`; with the library's
/// pooled execution p50 (`pooled_p50`, same run) and its executions/s with 8 submitters
/// (`library_8`), also what the gateway adds to the one and the share it reaches of the other.
pub async fn bench(bin: &Path, pooled_p50: Option<f64>, library_8: Option<f64>) -> Value {
    let (http, addr) = start_http(bin);
    let http_ms = http_latency(addr, 50, 500, Duration::ZERO).await;
    let http_paced_ms = http_latency(addr, 0, 300, PACE).await;
    let (legacy_ms, modern_ms) = paced_eras(addr, 300).await;
    let mut eps = serde_json::Map::new();
    for clients in [1usize, 8, 64] {
        let rate = http_throughput(addr, clients, Duration::from_secs(2)).await;
        eps.insert(clients.to_string(), json!(rate.round()));
    }
    drop(http);

    let bin = bin.to_path_buf();
    let (stdio_ms, stdio_paced_ms) = tokio::task::spawn_blocking(move || {
        let mut s = Stdio1::start(&bin);
        let back_to_back = stdio_latency(&mut s, 50, 500, Duration::ZERO);
        (back_to_back, stdio_latency(&mut s, 0, 300, PACE))
    })
    .await
    .expect("stdio client");

    let mut g = json!({
        "gateway_http_exec_ms": super::percentiles(http_ms),
        "gateway_stdio_exec_ms": super::percentiles(stdio_ms),
        "gateway_http_paced_exec_ms": super::percentiles(http_paced_ms),
        "gateway_stdio_paced_exec_ms": super::percentiles(stdio_paced_ms),
        "gateway_http_execs_per_sec": eps,
        "gateway_http_legacy_paced_exec_ms": super::percentiles(legacy_ms),
        "gateway_http_2026_paced_exec_ms": super::percentiles(modern_ms),
    });
    // What a 2026-07-28 client (a session handle resumed in the store on each call) costs
    // against a legacy one (an Mcp-Session-Id), alternating on one gateway.
    let (l, m) = (
        g["gateway_http_legacy_paced_exec_ms"]["p50"]
            .as_f64()
            .unwrap_or(0.0),
        g["gateway_http_2026_paced_exec_ms"]["p50"]
            .as_f64()
            .unwrap_or(0.0),
    );
    if l > 0.0 {
        g["gateway_http_2026_vs_legacy_p50_ratio"] = json!(super::round(m / l));
    }
    if let Some(pooled) = pooled_p50 {
        for (key, from) in [
            ("gateway_http_added_ms", "gateway_http_exec_ms"),
            ("gateway_stdio_added_ms", "gateway_stdio_exec_ms"),
            ("gateway_http_paced_added_ms", "gateway_http_paced_exec_ms"),
            (
                "gateway_stdio_paced_added_ms",
                "gateway_stdio_paced_exec_ms",
            ),
        ] {
            let p50 = g[from]["p50"].as_f64().unwrap_or(0.0);
            g[key] = json!(super::round(p50 - pooled));
        }
    }
    if let Some(library_8) = library_8 {
        let http_8 = g["gateway_http_execs_per_sec"]["8"].as_f64().unwrap_or(0.0);
        g["gateway_http_8_clients_pct"] = json!(super::round(http_8 / library_8 * 100.0));
    }
    g
}
