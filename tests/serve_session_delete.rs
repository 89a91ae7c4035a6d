//! `DELETE /mcp` ends an HTTP session with `200 OK` (issue 47): rmcp answers `202 Accepted`,
//! which the official Python SDK takes for a failure ("Session termination failed: 202" on every
//! close). After it, the session is gone (`404`).

use crate::serve_support::http::{delete, open_session, post, start_http};

#[tokio::test]
async fn deleting_a_session_answers_200_and_ends_it() {
    let served = start_http(&[]).await;
    let sid = open_session(&served.addr).await;
    let d = delete(&served.addr, &sid).await;
    assert_eq!(d.status, 200, "{d:?}");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let r = post(&served.addr, Some(&sid), &body).await;
    assert_eq!(r.status, 404, "{r:?}");
}
