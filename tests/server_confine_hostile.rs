//! A hostile stdio server, confined as every server is (issue 59): on tool calls through a real
//! `serve --http` gateway it tries to read the gateway's state store, config, a key file, another
//! tenant's directory, the gateway's environment and the operator's home; to write outside its
//! declared path; to ptrace the gateway; to make system calls no server needs; to fork-bomb and
//! to fill the disk; and what only the Landlock ruleset refuses (the mount view alone lets it
//! through, bubblewrap's root and `/dev` being tmpfs the sandbox's user owns): to write at `/`
//! and in `/dev`, and to run a program it wrote to `/tmp`. Each is refused (the exact errno the
//! kernel gave the server) or bounded,
//! and the gateway keeps serving another tenant afterwards. The server is
//! tests/python/hostile_server.py on the official Python SDK, from the repository's venv.

use crate::common::repo_root;
use crate::serve_support;
use serde_json::{json, Value};
use serve_support::http::*;
use serve_support::team::*;

fn code(code: &str) -> Value {
    json!({ "code": code })
}

/// The JSON the hostile tool returned.
fn answer(r: &Value) -> Value {
    assert_eq!(r["is_error"], json!(false), "{r}");
    let text = r["out"]["result"]["result"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn hostile_entry(dir: &std::path::Path) -> Value {
    json!({
        "command": repo_root().join(".venv/bin/python"),
        "args": [repo_root().join("tests/python/hostile_server.py")],
        "files": {"write": [dir.join("tenants/${MCP_SANDBOX_TENANT}")]},
        "limits": {"processes": 32, "tmpMb": 8, "fileSizeMb": 16},
        "startupTimeoutMs": 30000
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_confined_hostile_server_sees_nothing_of_the_gateway_and_is_bounded() {
    let data = tempfile::tempdir().unwrap();
    let operator_home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(operator_home.path().join(".ssh")).unwrap();
    std::fs::write(operator_home.path().join(".ssh/id_ed25519"), "OPERATOR KEY").unwrap();
    for t in ["red", "blue"] {
        std::fs::create_dir_all(data.path().join("tenants").join(t)).unwrap();
    }
    std::fs::write(data.path().join("tenants/blue/notes.txt"), "BLUE ONLY").unwrap();
    let h = start_http_state_env(
        json!({"mcpServers": {"hostile": hostile_entry(data.path())}, "sandbox": {"auth": {}}}),
        None,
        &[],
        &[
            ("HOME", operator_home.path().to_str().unwrap()),
            ("GATEWAY_MARKER", "gateway-environment-secret"),
        ],
    )
    .await;
    let key = h.dir.path().join("operator.key");
    std::fs::write(&key, "KEY MATERIAL").unwrap();
    let red = create_token(&h.state, "red", &["--tenant", "red"]);
    let blue = create_token(&h.state, "blue", &["--tenant", "blue"]);
    let config = h.dir.path().join("mcp.json");
    let config_before = std::fs::read_to_string(&config).unwrap();
    let p = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let calls = json!([
        code(&format!("return await mcp.hostile.read({{path: {:?}}})", p(&h.state))),
        code(&format!("return await mcp.hostile.read({{path: {:?}}})", p(&config))),
        code(&format!("return await mcp.hostile.read({{path: {:?}}})", p(&key))),
        code(&format!(
            "return await mcp.hostile.read({{path: {:?}}})",
            p(&data.path().join("tenants/blue/notes.txt"))
        )),
        code(&format!(
            "return await mcp.hostile.read({{path: {:?}}})",
            p(&operator_home.path().join(".ssh/id_ed25519"))
        )),
        code(&format!("return await mcp.hostile.read({{path: '/proc/{}/environ'}})", h.pid)),
        code("return await mcp.hostile.read({path: '/proc/1/environ'})"),
        code("return await mcp.hostile.read({path: '/etc/shadow'})"),
        // Writes: its own tenant's directory, the system, its runtime, the config's path.
        code(&format!(
            "return await mcp.hostile.write({{path: {:?}}})",
            p(&data.path().join("tenants/red/mine.txt"))
        )),
        code("return await mcp.hostile.write({path: '/usr/evil'})"),
        code(&format!(
            "return await mcp.hostile.write({{path: {:?}}})",
            p(&repo_root().join(".venv/evil"))
        )),
        code(&format!("return await mcp.hostile.write({{path: {:?}}})", p(&config))),
        code(&format!("return await mcp.hostile.ptrace({{pid: {}}})", h.pid)),
        code("return await mcp.hostile.ptrace({pid: 1})"),
        code("return await Promise.all(['mount', 'bpf', 'keyctl', 'perf_event_open', 'unshare'].map(n => mcp.hostile.syscall({name: n})))"),
        code("return await mcp.hostile.fork_bomb({limit: 1000})"),
        code("return await mcp.hostile.fill({path: '/tmp/big', mb: 100})"),
        code("return await mcp.hostile.fill({path: '/home/server/big', mb: 100})"),
        // Landlock: bubblewrap's root and /dev are writable tmpfs in the mount view.
        code("return await mcp.hostile.write({path: '/evil'})"),
        code("return await mcp.hostile.write({path: '/dev/evil'})"),
        code("return await mcp.hostile.fill({path: '/dev/shm/big', mb: 100})"),
        code("return await mcp.hostile.run_copy({src: '/usr/bin/true', dest: '/tmp/true'})"),
        code("return await mcp.hostile.run_copy({src: '/usr/bin/true', dest: '/home/server/true'})"),
    ]);
    let r = results(&sdk(&url(&h), Some(&red), &calls));
    let gone = json!({"ok": false, "errno": "ENOENT"});
    assert_eq!(answer(&r[0]), gone, "the state store");
    assert_eq!(answer(&r[1]), gone, "the config file");
    assert_eq!(answer(&r[2]), gone, "a key file beside the config");
    assert_eq!(answer(&r[3]), gone, "another tenant's directory");
    assert_eq!(answer(&r[4]), gone, "the operator's home");
    assert_eq!(answer(&r[5]), gone, "the gateway's /proc entry");
    // Its /proc is its own PID namespace's: pid 1 is the sandbox's init (bubblewrap's), which
    // is outside the server's Landlock domain, so even its environment is refused (Landlock
    // forbids ptrace-mode access, which /proc/<pid>/environ needs, across domains).
    assert_eq!(
        answer(&r[6]),
        json!({"ok": false, "errno": "EACCES"}),
        "the sandbox's init"
    );
    assert_eq!(
        answer(&r[7]),
        json!({"ok": false, "errno": "EACCES"}),
        "/etc/shadow"
    );
    assert_eq!(answer(&r[8]), json!({"ok": true}), "its declared directory");
    assert_eq!(
        std::fs::read_to_string(data.path().join("tenants/red/mine.txt")).unwrap(),
        "x"
    );
    let read_only = json!({"ok": false, "errno": "EROFS"});
    assert_eq!(answer(&r[9]), read_only, "/usr");
    assert_eq!(answer(&r[10]), read_only, "its own runtime");
    assert!(!repo_root().join(".venv/evil").exists());
    // The config's path inside is the sandbox's private /tmp: the host's file is untouched.
    assert_eq!(answer(&r[11]), json!({"ok": true}));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), config_before);
    assert_eq!(
        answer(&r[12]),
        json!({"ok": false, "errno": "EPERM", "visible": false}),
        "ptrace of the gateway: not even visible, and ptrace is refused"
    );
    assert_eq!(
        answer(&r[13]),
        json!({"ok": false, "errno": "EPERM", "visible": true}),
        "ptrace of the sandbox's own init"
    );
    let syscalls = r[14]["out"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r[14]));
    assert_eq!(syscalls.len(), 5);
    for s in syscalls {
        let s: Value = serde_json::from_str(s["result"].as_str().unwrap()).unwrap();
        assert_eq!(s, json!({"ok": false, "errno": "EPERM"}));
    }
    let bomb = answer(&r[15]);
    assert_eq!(bomb["errno"], json!("EAGAIN"), "{bomb}");
    assert!(bomb["forked"].as_u64().unwrap() < 32, "{bomb}");
    let tmp = answer(&r[16]);
    assert_eq!(tmp["errno"], json!("ENOSPC"), "{tmp}");
    assert!(tmp["mb"].as_u64().unwrap() <= 8, "{tmp}");
    assert_eq!(
        answer(&r[17]),
        json!({"ok": false, "errno": "EFBIG", "mb": 16}),
        "a file in its home is bounded by fileSizeMb"
    );
    let landlock = json!({"ok": false, "errno": "EACCES"});
    assert_eq!(answer(&r[18]), landlock, "bubblewrap's root tmpfs");
    assert_eq!(answer(&r[19]), landlock, "bubblewrap's /dev tmpfs");
    let shm = answer(&r[20]);
    assert_eq!(shm["errno"], json!("ENOSPC"), "/dev/shm is bounded: {shm}");
    assert!(shm["mb"].as_u64().unwrap() <= 8, "{shm}");
    assert_eq!(
        answer(&r[21]),
        json!({"ok": false, "errno": "EACCES", "step": "exec"}),
        "a program it wrote to /tmp does not run"
    );
    // Its home may hold what it runs (uvx's cache, npx's packages).
    assert_eq!(answer(&r[22]), json!({"ok": true, "exit": 0}));

    // The gateway still serves another tenant, whose server process is confined too.
    let b = results(&sdk(
        &url(&h),
        Some(&blue),
        &json!([
            code("return await mcp.hostile.whoami({})"),
            code(&format!(
                "return await mcp.hostile.read({{path: {:?}}})",
                p(&data.path().join("tenants/blue/notes.txt"))
            )),
        ]),
    ));
    let who = answer(&b[0]);
    assert_eq!(who["uid"], json!(65534), "{who}");
    assert_eq!(who["home"], json!("/home/server"), "{who}");
    let landlock = who["landlock"].as_str().unwrap_or_else(|| panic!("{who}"));
    assert!(
        landlock.starts_with("fully enforced (ruleset abi 6, kernel abi "),
        "{who}"
    );
    let notes = answer(&b[1]);
    assert_eq!(notes["text"], json!("BLUE ONLY"), "{notes}");
}
