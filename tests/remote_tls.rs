//! TLS to remote servers (issue 17 item 4): a server on the official Python MCP SDK serves HTTPS
//! with a certificate from a private CA made by the test (rcgen). With `caFile` naming that CA
//! the host reaches it; without it the certificate is not trusted (the system roots do not
//! hold the CA) and the server's calls fail with `SERVER_UNAVAILABLE` naming the TLS problem.
//! There is no option that turns verification off.

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
    let ca = dir.path().join("ca.pem");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&ca, ca_cert.pem()).unwrap();
    std::fs::write(&cert, leaf.pem()).unwrap();
    std::fs::write(&key, leaf_key.serialize_pem()).unwrap();

    let server = Listening::bearer("t", Some((&cert, &key)));
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "private": {"url": url, "caFile": "ca.pem", "headers": {"Authorization": "Bearer t"}},
            "untrusted": {"url": url, "headers": {"Authorization": "Bearer t"}}
        }})
        .to_string(),
    )
    .unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
const out = { sum: await mcp.private.add({ a: 1, b: 2 }) };
try { await mcp.untrusted.add({ a: 1, b: 2 }) } catch (e) { out.untrusted = { code: e.code, message: e.message } }
return out;
"#,
    )
    .unwrap();
    let state = dir.path().join("state.db");
    let o = cli_run_script(&[], &config, &state, &script).outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    assert_eq!(r["sum"], json!({"result": 3}), "{r}");
    assert_eq!(r["untrusted"]["code"], "SERVER_UNAVAILABLE", "{r}");
    let message = r["untrusted"]["message"].as_str().unwrap();
    assert!(
        message.contains("MCP server 'untrusted' is unavailable")
            && message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );
}
