//! A script that finishes while answers to its calls are still unread (it started many calls and
//! never awaited them) gets its own outcome. The runner exits with those answers in its socket,
//! which resets the host's end; that is not a protocol error (issue 12 item 9: 100,000 concurrent
//! calls ended in `PROTOCOL_ERROR "bad frame: Connection reset by peer"` this way, hiding the
//! script's real error).

use crate::common;
use common::*;

#[test]
fn unread_answers_after_the_result_do_not_turn_into_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = fixture_config_file(dir.path(), serde_json::json!({}));
    let state = dir.path().join("state.db");
    let script = dir.path().join("s.js");
    let cases = [
        // The answers arrive while the script computes, then it returns without reading them.
        ("for (let i = 0; i < 500; i++) mcp.fixture.echo({ message: 'x'.repeat(1000) }).catch(() => {});\n\
          const t = Date.now(); while (Date.now() - t < 300) {}\nreturn 1", None),
        // The same, ending in an error of its own.
        ("for (let i = 0; i < 500; i++) mcp.fixture.echo({ message: 'x'.repeat(1000) }).catch(() => {});\n\
          const t = Date.now(); while (Date.now() - t < 300) {}\nthrow new Error('mine')", Some("RUNTIME_ERROR")),
    ];
    for (code, expected) in cases {
        std::fs::write(&script, code).unwrap();
        let o = cli_run_script(&[], &config, &state, &script).outcome();
        match expected {
            None => {
                assert_eq!(o["success"], true, "{}", o["error"]);
                assert_eq!(o["result"], 1);
            }
            Some(c) => assert_eq!(o["error"]["code"], c, "{}", o["error"]),
        }
    }
}
