//! The egress proxy of a confined server (issue 59 item 3), with real parts: the proxy of
//! `tools::egress::start`, the real `mcp-sandbox __egress-bridge` inside a real network
//! namespace made by bubblewrap (`--unshare-net`: loopback only, the proxy's socket directory
//! and the host executable bound where the plan says, the plan's environment), and real
//! clients in it (Python's httpx and urllib, Node's fetch and http CONNECT, raw CONNECT and
//! SOCKS5). The declared host is a TLS server of the test on a non-loopback address of this
//! machine, reached by a name: no name resolves to such an address on a CI machine, so the
//! test gives one through the proxy's test-only resolver hook
//! (`MCP_SANDBOX_EGRESS_TEST_RESOLVE`), which answers before the system resolver and whose
//! answers are checked like any other (the hook maps a second name to 127.0.0.1, refused).

use crate::common::bin;
use mcp_sandbox::tools::egress::{self, events, EgressPlan, EgressScope, NetworkPolicy};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

/// The first IPv4 address of this machine that is not loopback or link-local.
pub(crate) fn local_ip() -> IpAddr {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .filter_map(|a| a.parse::<IpAddr>().ok())
        .find(|ip| match ip {
            IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_link_local(),
            IpAddr::V6(_) => false,
        })
        .expect("this machine has a non-loopback IPv4 address")
}

pub(crate) const NAME: &str = "egress-test.example";
pub(crate) const BODY: &str = "hello through the egress proxy";

/// A TLS server for `NAME` on `ip` answering every request with `BODY`; returns its port and
/// writes its CA to `dir/ca.pem`.
pub(crate) fn tls_server(ip: IpAddr, dir: &Path) -> u16 {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mcp-sandbox egress test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec![NAME.to_string()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap(),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match tls.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                    BODY.len()
                );
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    port
}

/// Runs `argv` under bubblewrap in a new network namespace, wrapped by the plan's bridge.
async fn confined(plan: &EgressPlan, argv: &[String]) -> std::process::Output {
    let mut cmd = tokio::process::Command::new("bwrap");
    cmd.args(["--unshare-net", "--die-with-parent", "--dev-bind", "/", "/"])
        .args(["--tmpfs", "/run", "--bind"])
        .arg(&plan.host_dir)
        .arg(&plan.inner_dir)
        .arg("--ro-bind")
        .arg(bin("mcp-sandbox"))
        .arg(EgressPlan::BRIDGE_EXE)
        .arg("--")
        .args(&plan.wrapper_argv)
        .args(argv)
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("the confined client finished")
        .unwrap()
}

fn lines(out: &std::process::Output) -> Vec<Value> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{l}\n{out:?}")))
        .collect()
}

fn attempt<'a>(lines: &'a [Value], what: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["what"] == what)
        .unwrap_or_else(|| panic!("no {what} in {lines:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_hosts_pass_and_everything_else_is_refused_at_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let ip = local_ip();
    let port = tls_server(ip, dir.path());
    // The gateway's own port, on this machine's address (as `serve --http` on 0.0.0.0 is).
    let gateway = TcpListener::bind((ip, 0)).unwrap();
    let gw_port = gateway.local_addr().unwrap().port();
    egress::refuse_gateway_ports(&[gw_port]);
    std::env::set_var(
        egress::resolve::TEST_RESOLVE_ENV,
        format!("{NAME}={ip},loopy.example=127.0.0.1,gateway.example={ip}"),
    );
    // Every refused destination below is on the allow list: the refusal comes from the
    // addresses, except other.example (not listed). privateNetworks: the machine's address may
    // be private (10.x on CI); loopback and link-local stay refused with it.
    let policy: NetworkPolicy = serde_json::from_value(json!({
        "allow": [
            format!("{NAME}:{port}"), "localhost:5432", "169.254.169.254:80",
            "[::ffff:169.254.169.254]:80", format!("127.0.0.1:{gw_port}"),
            format!("loopy.example:{port}"), format!("gateway.example:{gw_port}"),
        ],
        "privateNetworks": true
    }))
    .unwrap();
    let NetworkPolicy::Allow(allow) = policy else {
        panic!("{policy:?}")
    };
    let scope = EgressScope {
        server: "egress-test",
        tenant: Some("acme"),
        principal: None,
    };
    let (plan, guard) = egress::start(scope, &allow, dir.path()).await.unwrap();
    let mode = std::fs::metadata(&plan.host_dir).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );

    let url = format!("https://{NAME}:{port}/hello");
    let ca = dir.path().join("ca.pem").display().to_string();
    let refused = [
        ("other.example:443", "not_allowed"),
        ("169.254.169.254:80", "link_local"),
        ("[::ffff:169.254.169.254]:80", "link_local"),
        (&*format!("127.0.0.1:{gw_port}"), "loopback"),
        (&*format!("loopy.example:{port}"), "loopback"),
        ("localhost:5432", "loopback"),
        (&*format!("gateway.example:{gw_port}"), "gateway_port"),
    ]
    .map(|(t, r)| (t.to_string(), r));
    let python = crate::common::repo_root().join(".venv/bin/python");
    let script = crate::common::repo_root().join("tests/python/egress_client.py");
    let mut argv = vec![
        python.display().to_string(),
        script.display().to_string(),
        ca.clone(),
        url.clone(),
        format!("{ip}:{port}"),
    ];
    argv.extend(refused.iter().map(|(t, _)| t.clone()));
    let out = confined(&plan, &argv).await;
    assert!(out.status.success(), "{out:?}");
    let py = lines(&out);
    let env = &attempt(&py, "env")["value"];
    assert_eq!(env["HTTPS_PROXY"], "http://127.0.0.1:3128", "{env}");
    // Not socks5h://: httpx (the MCP Python SDK's client) refuses a SOCKS ALL_PROXY without
    // the optional socksio package.
    assert_eq!(env["ALL_PROXY"], "http://127.0.0.1:3128", "{env}");
    assert_eq!(attempt(&py, "httpx")["value"], json!([200, BODY]), "{py:?}");
    assert_eq!(
        attempt(&py, "urllib")["value"],
        json!([200, BODY]),
        "{py:?}"
    );
    let direct = attempt(&py, "direct");
    assert_eq!(direct["ok"], false, "{direct}");
    assert!(
        direct["error"]
            .as_str()
            .unwrap()
            .contains("Network is unreachable"),
        "{direct}"
    );
    assert_eq!(attempt(&py, "socks_allowed")["value"], 0, "{py:?}");
    assert_eq!(attempt(&py, "socks_link_local")["value"], 2, "{py:?}");
    for (target, reason) in &refused {
        let a = attempt(&py, &format!("connect {target}"));
        let answer = a["value"].as_str().unwrap_or_else(|| panic!("{a}"));
        assert!(
            answer.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{target}: {answer}"
        );
        assert!(
            answer.contains(&format!("is refused ({reason})")),
            "{target}: {answer}"
        );
    }

    let node = confined(
        &plan,
        &[
            "node".into(),
            crate::common::repo_root()
                .join("tests/node/egress_client.mjs")
                .display()
                .to_string(),
            ca,
            url,
        ],
    )
    .await;
    assert!(node.status.success(), "{node:?}");
    let js = lines(&node);
    let connect = attempt(&js, "connect");
    assert!(
        connect["value"].as_str().unwrap().ends_with(BODY),
        "{connect}"
    );
    let version = connect["version"].as_str().unwrap();
    let major: u32 = version[1..].split('.').next().unwrap().parse().unwrap();
    let fetch = attempt(&js, "fetch");
    if major >= 24 {
        // NODE_USE_ENV_PROXY=1 (set by the plan): fetch goes through HTTPS_PROXY.
        assert_eq!(fetch["ok"], true, "{fetch}");
    } else {
        // Older Node ignores the variables; with loopback only, the name does not resolve.
        assert_eq!(fetch["ok"], false, "{fetch}");
        assert_eq!(fetch["error"], "EAI_AGAIN", "{fetch}");
    }
    drop(guard);
    assert!(
        !plan.host_dir.exists(),
        "the guard removes the socket directory"
    );

    // The trace's record of every refusal: server, tenant, host, port, reason.
    let kept = events::recent_refused();
    for (target, reason) in &refused {
        let (host, port) = target.rsplit_once(':').unwrap();
        assert!(
            kept.iter().any(|c| c.server == "egress-test"
                && c.tenant.as_deref() == Some("acme")
                && c.host == host
                && c.port.to_string() == port
                && c.reason == *reason),
            "{target} {reason} not in {kept:?}"
        );
    }
    let socks_refused = kept
        .iter()
        .find(|c| c.host == "169.254.169.254" && c.port == 80)
        .unwrap();
    assert_eq!(socks_refused.address.as_deref(), Some("169.254.169.254"));
    let counts = events::counts();
    let count = |o: &str| {
        counts
            .iter()
            .find(|(s, out, _)| s == "egress-test" && *out == o)
            .map_or(0, |c| c.2)
    };
    // httpx, urllib, the SOCKS5 handshake, Node's CONNECT (and Node 24's fetch).
    assert_eq!(
        count("allowed"),
        if major >= 24 { 5 } else { 4 },
        "{counts:?}"
    );
    // The seven CONNECTs and the SOCKS5 request to 169.254.169.254.
    assert_eq!(count("refused"), 8, "{counts:?}");
    let (_, up, down) = events::bytes()
        .into_iter()
        .find(|(s, _, _)| s == "egress-test")
        .unwrap();
    assert!(up > 0 && down > BODY.len() as u64, "{up} {down}");
    drop(gateway);
}

/// The bridge runs its command as a child, passes SIGTERM on, and exits with its status.
#[test]
fn the_bridge_forwards_sigterm_and_exits_with_its_childs_status() {
    let bridge = |listen: &str, cmd: &[&str]| {
        let mut c = std::process::Command::new(bin("mcp-sandbox"));
        c.args([
            "__egress-bridge",
            "--socket",
            "/nonexistent/proxy.sock",
            "--listen",
            listen,
            "--",
        ])
        .args(cmd)
        .stderr(std::process::Stdio::piped());
        c
    };
    let out = bridge("127.0.0.1:0", &["sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let out = bridge("0.0.0.0:0", &["true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(125), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--listen 0.0.0.0:0 is not a loopback address"));
    let ready = tempfile::NamedTempFile::new().unwrap();
    let script = format!(
        "trap 'exit 7' TERM; touch {}; while :; do sleep 0.05; done",
        ready.path().display()
    );
    std::fs::remove_file(ready.path()).unwrap();
    let mut child = bridge("127.0.0.1:0", &["sh", "-c", &script])
        .spawn()
        .unwrap();
    while !ready.path().exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "the child's trap ran and its status came back"
    );
}
