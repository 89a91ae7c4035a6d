//! Secrets and personal data never reach the model (issue: placeholders out, real values back
//! in at the host), through `serve` and the official MCP Python SDK client
//! (tests/python/budget_client.py: calls in one session, `{{R<i>:<pointer>}}` for a value of an
//! earlier answer, every byte `serve` wrote copied to a file) against the rmcp fixture server
//! as `crm` (get_customer: an e-mail address, a phone number, a card number, an API key),
//! `mail` (send_mail, which logs what it received to a file) and `web` (echo, fail).

use crate::common::bin;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The real values of customer 7; none may reach the client, the audit log or the state file.
const REAL: [&str; 4] = [
    "ada7@example.com",
    "+1 415 555 2671",
    "4111 1111 1111 1111",
    "sk_live_FAKEfixture0123456789abcd",
];

/// The operator's key (64 hex digits), so the placeholder maps are sealed with it.
const KEY: &str = "6d6370207361616e64626f78207465737420206b6579206f6e6c792120212121";

fn config(dir: &Path) -> PathBuf {
    let fixture = json!({"command": bin("fixture-mcp-server")});
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    let body = json!({
        "mcpServers": {"crm": fixture, "web": fixture, "mail": mail},
        "sandbox": {
            "audit": {"args": "full"},
            "sensitive": {
                "detect": ["email", "phone", "card", "iban", "secret"],
                "reveal_to": {"email": ["mail:send_mail"]},
            },
        },
    });
    let config = dir.join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

/// One session of `serve` over stdio; every byte it wrote to the client is appended to
/// `dir/raw.log`.
fn session(dir: &Path, calls: Value) -> Vec<Value> {
    let exe = Path::new(env!("CARGO_BIN_EXE_mcp-sandbox"));
    let (config, state, raw) = (config(dir), dir.join("state.db"), dir.join("raw.log"));
    let runner = bin("sandbox-runner");
    let calls = calls.to_string();
    let report = crate::serve_support::python_json(
        "budget_client.py",
        &[
            "stdio".as_ref(),
            exe.as_os_str(),
            config.as_os_str(),
            state.as_os_str(),
            calls.as_ref(),
        ],
        &[
            ("MCP_SANDBOX_RUNNER", runner.as_os_str()),
            ("MCP_SANDBOX_KEY", KEY.as_ref()),
            ("MCP_RAW_LOG", raw.as_os_str()),
        ],
    );
    report["results"].as_array().unwrap().clone()
}

fn bytes_of(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

const READ: &str = "const c = await mcp.crm.get_customer({id: 7});";

/// The placeholder of `kind` at `v` (a string `⟪kind:N⟫`).
fn placeholder<'a>(v: &'a Value, kind: &str) -> &'a str {
    let s = v.as_str().unwrap_or_else(|| panic!("no string at {v}"));
    assert!(
        s.starts_with(&format!("⟪{kind}:")) && s.ends_with('⟫'),
        "{s} is not a {kind} placeholder"
    );
    s
}

#[test]
fn the_model_sees_placeholders_and_the_mailer_gets_the_address() {
    let dir = tempfile::tempdir().unwrap();
    let results = session(
        dir.path(),
        json!([
            // 0: result, logs and a failed call's trace.
            {"code": format!("{READ} const again = await mcp.crm.get_customer({{id: 7}});
                console.log('calling ' + c.phone + ' about ' + c.email);
                try {{ await mcp.web.fail({{message: 'no account for ' + c.email + ' key ' + c.api_key}}) }} catch (e) {{}}
                return {{customer: c, again: again.email}}")},
            // 1: an error message.
            {"code": format!("{READ} throw new Error('cannot bill ' + c.card + ' for ' + c.email)")},
            // 2: the placeholder passed back to the mailer.
            {"code": "return await mcp.mail.send_mail({to: ['{{R0:/result/again}}'], subject: 'hello'})"},
            // 3: the placeholder passed to a tool reveal_to does not allow.
            {"code": "try { await mcp.web.echo({message: 'to {{R0:/result/again}}'}); return 'sent' } catch (e) { return [e.code, e.message] }"},
            // 4-5: a yielded execution's running answer and wait_execution's.
            {"code": format!("{READ} console.log('working for ' + c.email); await new Promise(r => setTimeout(r, 1500)); return c.card"), "yield_after_ms": 400},
            {"tool": "wait_execution", "arguments": {"execution_id": "{{R4:/execution_id}}", "timeout_ms": 10000}},
        ]),
    );
    let out = |i: usize| &results[i]["out"];
    // Every field of the record is a placeholder of its kind; the same address twice gives the
    // same placeholder (in one execution and in the next).
    let customer = &out(0)["result"]["customer"];
    let email = placeholder(&customer["email"], "email");
    assert_eq!(out(0)["result"]["again"], json!(email));
    let phone = placeholder(&customer["phone"], "phone");
    let card = placeholder(&customer["card"], "card");
    let key = placeholder(&customer["api_key"], "secret");
    assert_eq!(customer["name"], "Ada Lovelace");
    assert_eq!(
        out(0)["logs"][0]["message"],
        json!(format!("calling {phone} about {email}"))
    );
    let failed = out(0)["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_end" && t["tool"] == "web:fail")
        .unwrap();
    assert_eq!(
        failed["error"]["message"],
        json!(format!("no account for {email} key {key}"))
    );
    assert!(
        results[0]["text"].as_str().unwrap().contains(email),
        "{}",
        results[0]["text"]
    );
    let message = out(1)["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("cannot bill {card} for {email}")),
        "{message}"
    );
    // The mailer received the real address; its answer (which repeats it) came back masked.
    assert_eq!(out(2)["result"]["to"], json!([email]), "{}", results[2]);
    let mail_log = String::from_utf8(bytes_of(&dir.path().join("mail.log"))).unwrap();
    let received: Value = serde_json::from_str(mail_log.lines().next().unwrap()).unwrap();
    assert_eq!(received["to"], json!(["ada7@example.com"]));
    // Refused for a tool reveal_to does not name, with the kind and the rule.
    assert_eq!(
        out(3)["result"],
        json!(["PERMISSION_DENIED", format!("the arguments hold {email}, a value of kind `email`, and the rule sandbox.sensitive.reveal_to.email does not let web:echo receive it (it allows mail:send_mail); pass it only to a tool the rule allows, or ask the operator")])
    );
    // Yield: the logs so far and the final answer.
    assert_eq!(out(4)["status"], "running", "{}", results[4]);
    assert_eq!(
        out(4)["logs_so_far"],
        json!([{"level": "log", "message": format!("working for {email}")}])
    );
    assert_eq!(out(5)["result"], json!(card), "{}", results[5]);

    // A placeholder from this session is never resolved in another.
    let other = session(
        dir.path(),
        json!([{"code": format!("try {{ await mcp.mail.send_mail({{to: ['{email}'], subject: 'x'}}); return 'sent' }} catch (e) {{ return [e.code, e.message] }}")}]),
    );
    assert_eq!(
        other[0]["out"]["result"],
        json!(["PERMISSION_DENIED", format!("the arguments hold {email}, which is not one of this session's placeholders (this session's look like ⟪kind:tag:N⟫): it comes from another session, or from an earlier map of this session that this host can no longer open (sealed under another key). A placeholder is resolved only in the session that returned it: read the value again in this session and pass the placeholder it returns; the call was not made")])
    );
    assert_eq!(mail_log.lines().count(), 1);
    assert_eq!(
        String::from_utf8(bytes_of(&dir.path().join("mail.log")))
            .unwrap()
            .lines()
            .count(),
        1,
        "the second session's mail was not sent"
    );

    // No real value in any byte the client received, in the audit log or the state file.
    let raw = bytes_of(&dir.path().join("raw.log"));
    assert!(holds(&raw, email), "the raw log holds the answers");
    let state = [
        bytes_of(&dir.path().join("state.db")),
        bytes_of(&dir.path().join("state.db-wal")),
    ]
    .concat();
    // The audit kept send_mail's arguments in full: with the placeholder.
    assert!(holds(&state, email), "the audit log holds the arguments");
    for real in REAL {
        assert!(!holds(&raw, real), "the client received {real}");
        assert!(!holds(&state, real), "the state file holds {real}");
    }
}

/// Issue 43 item 8: numbers start at 1 in every session, so one session's `⟪email:…:1⟫` passed
/// in another session that has its own first address must be refused — not resolved to that
/// address (mail to the wrong person). The session tag in each placeholder tells them apart.
#[test]
fn another_sessions_placeholder_is_refused_where_this_session_has_the_same_number() {
    let dir = tempfile::tempdir().unwrap();
    let first = session(
        dir.path(),
        json!([{"code": format!("{READ} return c.email")}]),
    );
    let theirs = placeholder(&first[0]["out"]["result"], "email").to_string();
    let second = session(
        dir.path(),
        json!([
            {"code": "const c = await mcp.crm.get_customer({id: 8}); return c.email"},
            {"code": format!("try {{ await mcp.mail.send_mail({{to: ['{theirs}'], subject: 'x'}}); return 'sent' }} catch (e) {{ return [e.code, e.message] }}")},
        ]),
    );
    let mine = placeholder(&second[0]["out"]["result"], "email");
    // Both are the first address of their session, yet not the same placeholder.
    assert!(
        theirs.ends_with(":1⟫") && mine.ends_with(":1⟫"),
        "{theirs} {mine}"
    );
    assert_ne!(theirs, mine);
    let tag = &mine["⟪email:".len()..mine.len() - ":1⟫".len()];
    assert_eq!(
        second[1]["out"]["result"],
        json!(["PERMISSION_DENIED", format!("the arguments hold {theirs}, which is not one of this session's placeholders (this session's look like ⟪kind:{tag}:N⟫): it comes from another session, or from an earlier map of this session that this host can no longer open (sealed under another key). A placeholder is resolved only in the session that returned it: read the value again in this session and pass the placeholder it returns; the call was not made")]),
        "{}",
        second[1]
    );
    assert!(
        bytes_of(&dir.path().join("mail.log")).is_empty(),
        "nothing was mailed (to ada8@example.com or anyone)"
    );
    let end = second[1]["out"]["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_end" && t["tool"] == "mail:send_mail")
        .unwrap();
    assert_eq!(end["error"]["code"], "PERMISSION_DENIED");
}

#[test]
fn run_shows_placeholders_and_reveal_shows_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = json!({
        "mcpServers": {"crm": {"command": bin("fixture-mcp-server")}},
        "sandbox": {"sensitive": {"detect": ["email", "card"]}},
    });
    std::fs::write(&config, body.to_string()).unwrap();
    let script = dir.path().join("read.js");
    std::fs::write(&script, format!("{READ} console.log(c.email); return c")).unwrap();
    let state = dir.path().join("state.db");
    let run = |flags: &[&str]| {
        let r = crate::common::cli_run_script(flags, &config, &state, &script);
        assert_eq!(r.status, 0, "{}", String::from_utf8_lossy(&r.stderr));
        (
            serde_json::from_slice::<Value>(&r.stdout).unwrap(),
            r.stdout,
        )
    };
    let (shown, bytes) = run(&[]);
    let email = placeholder(&shown["result"]["email"], "email");
    placeholder(&shown["result"]["card"], "card");
    assert_eq!(shown["logs"][0]["message"], json!(email));
    for real in ["ada7@example.com", "4111 1111 1111 1111"] {
        assert!(!holds(&bytes, real), "run printed {real}");
    }
    // Detection is per config: the phone number is not on the list, so it is shown.
    assert_eq!(shown["result"]["phone"], "+1 415 555 2671");
    let (revealed, _) = run(&["--reveal"]);
    assert_eq!(revealed["result"]["email"], "ada7@example.com");
    assert_eq!(revealed["result"]["card"], "4111 1111 1111 1111");
    assert_eq!(revealed["logs"][0]["message"], "ada7@example.com");
}

/// What a script keeps with `store()` is sealed at rest under the operator's key: a later
/// execution `load()`s the record with its real values (the mailer receives the real address),
/// while the state file, its WAL and its shared memory hold none of them.
#[test]
fn stored_values_are_sealed_at_rest_and_load_real() {
    let dir = tempfile::tempdir().unwrap();
    let results = session(
        dir.path(),
        json!([
            {"code": format!("{READ} await store('customer', c); return 'kept'")},
            {"code": "const c = await load('customer');
                await mcp.mail.send_mail({to: [c.email], subject: 'about ' + c.card.slice(-4)});
                return c.email"},
        ]),
    );
    assert_eq!(results[0]["out"]["result"], "kept", "{}", results[0]);
    placeholder(&results[1]["out"]["result"], "email");
    let mail_log = String::from_utf8(bytes_of(&dir.path().join("mail.log"))).unwrap();
    let received: Value = serde_json::from_str(mail_log.lines().next().unwrap()).unwrap();
    assert_eq!(received["to"], json!(["ada7@example.com"]));
    assert_eq!(received["subject"], "about 1111");
    let state: Vec<u8> = ["state.db", "state.db-wal", "state.db-shm"]
        .iter()
        .flat_map(|f| bytes_of(&dir.path().join(f)))
        .collect();
    assert!(holds(&state, "customer"), "the key is kept in the clear");
    for real in REAL {
        assert!(!holds(&state, real), "the state file holds {real}");
    }
}
