//! TLS to an OpenAPI server (issue 49 item 2): the Notes service serves HTTPS with a
//! certificate from a private CA made by the test (rcgen). With `caFile` naming that CA the
//! host's requests reach it; without it the certificate is not trusted (the system roots do not
//! hold the CA) and the call fails with SERVER_UNAVAILABLE naming the TLS problem, the request
//! never sent.

use crate::common;
use common::*;
use serde_json::json;

#[test]
fn a_private_ca_is_trusted_only_through_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mcp-sandbox test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let (ca, cert, key) = (
        dir.path().join("ca.pem"),
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
    );
    std::fs::write(&ca, ca_cert.pem()).unwrap();
    std::fs::write(&cert, leaf.pem()).unwrap();
    std::fs::write(&key, leaf_key.serialize_pem()).unwrap();

    let notes = Notes::start_with(3600, Some((&cert, &key)));
    std::fs::copy(notes_spec(), dir.path().join("notes.yaml")).unwrap();
    let base = format!("https://127.0.0.1:{}/api/v1", notes.server.port);
    let entry = |ca: Option<&str>| {
        let mut e = json!({"openapi": "notes.yaml", "baseUrl": base, "auth": {"apiKey": format!("${{{NOTES_KEY_VAR}}}")}});
        if let Some(ca) = ca {
            e["caFile"] = json!(ca);
        }
        e
    };
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"private": entry(Some("ca.pem")), "untrusted": entry(None)}})
            .to_string(),
    )
    .unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const out = { note: (await mcp.private.getNote({ noteId: "t1" })).body.id };
try { await mcp.untrusted.getNote({ noteId: "t2" }) } catch (e) { out.untrusted = { code: e.code, message: e.message } }
return out;
"#,
    )
    .unwrap();
    let run = run_json(&config, &script, &notes);
    let o = run.outcome();
    let r = &o["result"];
    assert_eq!(r["note"], "t1", "{o}");
    assert_eq!(r["untrusted"]["code"], "SERVER_UNAVAILABLE", "{r}");
    let message = r["untrusted"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("server 'untrusted' cannot be reached (the request was not sent)"),
        "{message}"
    );
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
    let paths: Vec<String> = notes
        .calls()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["/api/v1/notes/t1"]);
}
