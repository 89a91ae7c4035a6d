//! Issue 25, the audit and the gateway's own state against a hostile teammate, through the real
//! binary: the state file, its WAL/SHM and a directory made for it are owner-only (item 13);
//! `jwks_url` is checked on the host that will be connected to (item 10); `serve` with an audit
//! log configured and no usable state file refuses to start, with or without auth (item 11); a
//! session belongs to its token, not the token's name, and revoking the token ends it (item 12);
//! the audit table cannot be forged on screen with line separators, bidirectional controls or
//! names with spaces (item 8).

use crate::serve_support;
use serde_json::json;
use serve_support::http::*;
use serve_support::team::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test(flavor = "multi_thread")]
async fn the_state_file_its_wal_and_shm_and_a_new_directory_are_owner_only() {
    // A directory made for the state by `run`: 0700; the file: 0600 (whatever the umask).
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(&script, "return 1").unwrap();
    let state = dir.path().join("new/sub/state.db");
    let (status, _, err) = cli(&[
        "run".as_ref(),
        script.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(mode(&dir.path().join("new")), 0o700);
    assert_eq!(mode(&dir.path().join("new/sub")), 0o700);
    assert_eq!(mode(&state), 0o600);
    // A file an older build left world-readable is narrowed when next opened.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (status, _, err) = cli(&[
        "run".as_ref(),
        script.as_os_str(),
        "--state".as_ref(),
        state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(mode(&state), 0o600);

    // While `serve` holds it open, the WAL and SHM exist and are owner-only too.
    let h = start_http_with(json!({"audit": {"args": "full"}}), &[]).await;
    let id = open_session(&h.addr).await;
    let a = post(
        &h.addr,
        Some(&id),
        &execute_body(
            2,
            json!({"code": "return await mcp.fixture.echo({message: 'secret-arg'})"}),
        ),
    )
    .await;
    assert_eq!(a.reply(2)["result"]["isError"], json!(false), "{a:?}");
    for suffix in ["", "-wal", "-shm"] {
        let mut p = h.state.as_os_str().to_owned();
        p.push(suffix);
        assert_eq!(mode(Path::new(&p)), 0o600, "state.db{suffix}");
    }
}

#[test]
fn a_jwks_url_is_checked_on_the_host_it_connects_to() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    // The string starts like a loopback URL; the host connected to is idp.invalid.
    std::fs::write(
        &config,
        json!({"sandbox": {"auth": {"jwt": {"issuer": "https://idp.invalid", "audience": "a",
            "jwks_url": "http://127.0.0.1:80@idp.invalid/jwks.json"}}}})
        .to_string(),
    )
    .unwrap();
    let (status, _, err) = cli(&[
        "serve".as_ref(),
        "--http".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    assert_eq!(status, 2, "{err}");
    assert!(
        err.contains("must not contain user info") && !err.contains("cannot fetch"),
        "{err}"
    );
}

/// The real CLI with `args`, killed if it has not exited within `within`: (exit status or
/// None when it had to be killed, stderr).
fn cli_within(args: &[&std::ffi::OsStr], within: Duration) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-sandbox"))
        .args(args)
        .env("MCP_SANDBOX_RUNNER", crate::common::bin("sandbox-runner"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if started.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (status, err)
}

#[test]
fn serve_with_an_audit_log_and_no_usable_state_file_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    // A state path under a regular file cannot be opened.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let state = blocker.join("state.db");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {}, "sandbox": {"audit": {"code": "hash"}}}).to_string(),
    )
    .unwrap();
    // Without auth (loopback HTTP, and stdio): refused, not served unaudited.
    for http in [true, false] {
        let mut args: Vec<&std::ffi::OsStr> = vec!["serve".as_ref()];
        if http {
            args.extend([
                std::ffi::OsStr::new("--http"),
                std::ffi::OsStr::new("127.0.0.1:0"),
            ]);
        }
        args.extend([
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
        ]);
        let (status, err) = cli_within(&args, Duration::from_secs(20));
        assert_eq!(status, Some(2), "http={http}: {err}");
        assert!(
            err.contains("the audit log is configured")
                && err.contains("no execution would be audited"),
            "http={http}: {err}"
        );
        assert!(!err.contains("serving MCP"), "{err}");
    }
    // An --audit-* flag counts as configuring it.
    std::fs::write(&config, json!({"mcpServers": {}}).to_string()).unwrap();
    let (status, err) = cli_within(
        &[
            "serve".as_ref(),
            "--http".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
            "--state".as_ref(),
            state.as_os_str(),
            "--audit-code".as_ref(),
            "hash".as_ref(),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("the audit log is configured"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_token_with_a_revoked_tokens_name_does_not_get_its_session() {
    let h = start_http_with(json!({"auth": {}}), &[]).await;
    let red = create_token(&h.state, "ci", &["--tenant", "red"]);
    let session = open_session_as(&h.addr, &red).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let a = post_as(&h.addr, Some(&red), Some(&session), &list).await;
    assert_eq!(a.status, 200, "{a:?}");
    let (status, _, err) = cli(&[
        "token".as_ref(),
        "revoke".as_ref(),
        "ci".as_ref(),
        "--state".as_ref(),
        h.state.as_os_str(),
    ]);
    assert_eq!(status, 0, "{err}");
    let blue = create_token(&h.state, "ci", &["--tenant", "blue"]);
    // At once (before the server notices the revocation): another principal's session.
    let b = post_as(&h.addr, Some(&blue), Some(&session), &list).await;
    assert_eq!(b.status, 403, "{b:?}");
    assert!(b.body.contains("opened by another principal"), "{}", b.body);
    // Soon: the revoked token's session is ended (it no longer exists for anyone).
    let deadline = Instant::now() + Duration::from_secs(5);
    while !h
        .stderr()
        .contains("the session's API token was revoked or expired")
    {
        assert!(
            Instant::now() < deadline,
            "the session of a revoked token was not ended: {}",
            h.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let c = post_as(&h.addr, Some(&blue), Some(&session), &list).await;
    assert_eq!(c.status, 404, "{c:?}");
    // The new token works in its own session, in its own tenant.
    let own = open_session_as(&h.addr, &blue).await;
    let d = execute_as(&h.addr, &blue, &own, 3, "return 1").await;
    assert_eq!(d.reply(3)["result"]["isError"], json!(false), "{d:?}");
    let records = audit(&h.state, &[]);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["tenant"], json!("blue"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_table_cannot_be_forged_with_separators_or_bidi_controls() {
    let h = start_http(&[]).await;
    let name = "evil\u{2028}#99 2020-01-01 token:admin tenant=default \u{202e}exe.txt\u{2066}";
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": name, "version": "0"}}});
    let a = post(&h.addr, None, &init).await;
    assert_eq!(a.status, 200, "{a:?}");
    let id = a.header("mcp-session-id").unwrap().to_string();
    let n = post(
        &h.addr,
        Some(&id),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(n.status, 202, "{n:?}");
    let r = post(
        &h.addr,
        Some(&id),
        &execute_body(2, json!({"code": "return 1"})),
    )
    .await;
    assert_eq!(r.reply(2)["result"]["isError"], json!(false), "{r:?}");
    let (status, table, err) = cli(&["audit".as_ref(), "--state".as_ref(), h.state.as_os_str()]);
    assert_eq!(status, 0, "{err}");
    assert_eq!(table.lines().count(), 1, "{table}");
    for c in ['\u{2028}', '\u{202e}', '\u{2066}'] {
        assert!(
            !table.contains(c),
            "U+{:04X} reached the screen: {table}",
            c as u32
        );
    }
    assert!(
        table.contains(
            "client=\"evil\\u{2028}#99 2020-01-01 token:admin tenant=default \\u{202e}exe.txt\\u{2066}\""
        ),
        "{table}"
    );
    // JSON keeps the name as sent.
    assert_eq!(audit(&h.state, &[])[0]["client"], json!(name));
}
