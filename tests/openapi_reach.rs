//! An OpenAPI tool reaches only its configured `baseUrl` (issue 49 item 2): a path parameter
//! holding `../`, `//other-host`, `%2F..` or a full URL stays one encoded segment under the
//! base's path prefix, on its host and port (a second service, "another host", receives
//! nothing); `.` and `..` as a whole value are refused before any request; a query value
//! cannot add parameters; a redirect is not followed.

use crate::common;
use common::*;
use serde_json::json;

#[test]
fn a_path_parameter_cannot_leave_the_base_url() {
    let notes = Notes::start(3600);
    let other = Notes::start(3600);
    let dir = tempfile::tempdir().unwrap();
    let config = notes_config(dir.path(), &notes, json!({}), json!({}));
    let other_port = other.server.port;
    let payloads = [
        "../admin".to_string(),
        "../../../../stats".to_string(),
        format!("//127.0.0.1:{other_port}/api/v1/notes/x"),
        "%2F..%2F..%2Fstats".to_string(),
        format!("http://127.0.0.1:{other_port}/api/v1/notes/x"),
        "a/../../b?x=1#frag".to_string(),
        "..%2f".to_string(),
    ];
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        format!(
            r#"
const ids = {};
const out = {{ got: [], refused: [] }};
for (const noteId of ids) out.got.push((await mcp.notes.getNote({{ noteId }})).body.id);
for (const noteId of ["..", "."]) {{ try {{ await mcp.notes.getNote({{ noteId }}); out.refused.push("sent") }} catch (e) {{ out.refused.push(e.code) }} }}
out.query = (await mcp.notes.listNotes({{ q: "x&limit=1&X-Api-Key=stolen" }})).body;
try {{ await mcp.notes.getMoved({{}}) }} catch (e) {{ out.moved = {{ code: e.code, message: e.message }} }}
return out;
"#,
            json!(payloads)
        ),
    )
    .unwrap();
    let run = run_json(&config, &script, &notes);
    let o = run.outcome();
    assert_eq!(o["success"], true, "{o}");
    let r = &o["result"];
    // The service decoded each segment back to exactly the value the script gave.
    assert_eq!(r["got"], json!(payloads), "{r}");
    assert_eq!(
        r["refused"],
        json!(["INVALID_ARGUMENTS", "INVALID_ARGUMENTS"]),
        "{r}"
    );
    assert_eq!(
        r["query"]["q"],
        json!(["x&limit=1&X-Api-Key=stolen"]),
        "{r}"
    );
    assert_eq!(r["query"]["limit"], json!(null), "{r}");
    assert_eq!(r["moved"]["code"], "TOOL_ERROR", "{r}");
    assert!(
        r["moved"]["message"]
            .as_str()
            .unwrap()
            .starts_with("HTTP 302 Found (redirects are not followed: the API's baseUrl may be wrong) from notes.getMoved"),
        "{r}"
    );

    let calls = notes.calls();
    let paths: Vec<&str> = calls.iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "/api/v1/notes/..%2Fadmin",
            "/api/v1/notes/..%2F..%2F..%2F..%2Fstats",
            &format!("/api/v1/notes/%2F%2F127.0.0.1%3A{other_port}%2Fapi%2Fv1%2Fnotes%2Fx"),
            "/api/v1/notes/%252F..%252F..%252Fstats",
            &format!("/api/v1/notes/http%3A%2F%2F127.0.0.1%3A{other_port}%2Fapi%2Fv1%2Fnotes%2Fx"),
            "/api/v1/notes/a%2F..%2F..%2Fb%3Fx%3D1%23frag",
            "/api/v1/notes/..%252f",
            "/api/v1/notes",
            "/api/v1/moved",
        ]
    );
    for c in &calls {
        assert_eq!(c["api_key"], notes.key.as_str(), "{c}");
    }
    // Nothing reached the other host, and nothing was redirected there.
    assert_eq!(other.requests(), Vec::<serde_json::Value>::new());
}
