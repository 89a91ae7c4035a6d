//! `serve --http` answers a keep-alive client without the delayed-ACK stall: a plain HTTP/1.1
//! client that sends each request in one write on one kept-alive connection and reads each
//! answer to its end (as JSON-mode clients, proxies and most HTTP libraries do). Without
//! `TCP_NODELAY` on the accepted socket, the answer's last small write (the chunk terminator
//! after the SSE event) waits for the client's delayed ACK, ~40 ms on Linux, on every request.
//!
//! The check is a comparison, not a speed: two such clients take turns on one server, one of
//! them acknowledging at once (`TCP_QUICKACK`, so no write of the server ever waits for its
//! ACK). Both meet the same machine, so their medians match within noise, however busy the
//! machine; the stall puts ~40 ms on every answer of the other one.

use crate::serve_support::http::*;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The request bytes of a POST to /mcp on a kept-alive connection.
fn keepalive_post(addr: &str, session: Option<&str>, body: &str) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: {PROTOCOL}\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        head.push_str(&format!("mcp-session-id: {s}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Reads one HTTP/1.1 answer to its end (content-length or chunked) from a kept-alive stream.
async fn read_answer(r: &mut BufReader<TcpStream>) -> Answer {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).await.unwrap();
        assert!(n > 0, "connection closed before the answer's head ended");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut answer = parse(format!("{head}\r\n").as_bytes());
    let mut body = Vec::new();
    if let Some(len) = answer.header("content-length") {
        body.resize(len.parse().unwrap(), 0);
        r.read_exact(&mut body).await.unwrap();
    } else if answer
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await.unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0u8; n + 2];
            r.read_exact(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    answer.body = String::from_utf8(body).unwrap();
    answer
}

/// Makes the client acknowledge what it receives at once for the next while (Linux drops quick
/// ACK mode again by itself, so it is set before each exchange).
fn quickack(conn: &BufReader<TcpStream>) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt(2) on the stream's open socket, with a c_int option value and its size.
    let r = unsafe {
        libc::setsockopt(
            conn.get_ref().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "TCP_QUICKACK: {}", std::io::Error::last_os_error());
}

/// A kept-alive connection with an initialized session.
async fn connect(addr: &str) -> (BufReader<TcpStream>, String) {
    let mut conn = BufReader::new(TcpStream::connect(addr).await.unwrap());
    let init = exchange(&mut conn, addr, None, initialize_body(1)).await;
    assert_eq!(init.status, 200, "{init:?}");
    let session = init.header("mcp-session-id").unwrap().to_string();
    let note = exchange(
        &mut conn,
        addr,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(note.status, 202, "{note:?}");
    (conn, session)
}

/// Sends one request on the kept-alive connection and reads its answer to the end.
async fn exchange(
    conn: &mut BufReader<TcpStream>,
    addr: &str,
    session: Option<&str>,
    body: serde_json::Value,
) -> Answer {
    let bytes = keepalive_post(addr, session, &body.to_string());
    conn.get_mut().write_all(&bytes).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), read_answer(conn))
        .await
        .expect("no answer within 30 s")
}

/// One `execute_code` on the kept-alive connection, checked; its milliseconds.
async fn timed_execute(conn: &mut BufReader<TcpStream>, addr: &str, session: &str, id: i64) -> f64 {
    let t = Instant::now();
    let a = exchange(
        conn,
        addr,
        Some(session),
        execute_body(id, json!({"code": "return 1+1"})),
    )
    .await;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(a.status, 200, "{a:?}");
    let reply = a.reply(id);
    assert_eq!(
        reply["result"]["structuredContent"]["result"],
        json!(2),
        "{reply}"
    );
    // The connection was kept alive: no `connection: close`.
    assert_ne!(a.header("connection"), Some("close"), "{a:?}");
    ms
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::test]
async fn a_keepalive_client_reading_each_answer_to_its_end_is_not_stalled() {
    let h = start_http(&[]).await;
    let (mut plain, plain_session) = connect(&h.addr).await;
    let (mut quick, quick_session) = connect(&h.addr).await;
    let (mut plain_ms, mut quick_ms) = (Vec::new(), Vec::new());
    for id in 2..42 {
        plain_ms.push(timed_execute(&mut plain, &h.addr, &plain_session, id).await);
        quickack(&quick);
        quick_ms.push(timed_execute(&mut quick, &h.addr, &quick_session, id).await);
    }
    let (p, q) = (median(plain_ms.clone()), median(quick_ms.clone()));
    eprintln!("keep-alive execute_code p50: {p:.2} ms, with quick ACKs {q:.2} ms");
    // The stall adds ~40 ms (the delayed-ACK timer) to each answer of the plain client; 20 ms is
    // ten times the idle difference of the two medians (under 2 ms) and half the stall.
    assert!(
        p < q + 20.0,
        "keep-alive execute_code p50 {p:.1} ms against {q:.1} ms for a client that ACKs at once (all: {plain_ms:?} / {quick_ms:?}): the answer's last write waited for a delayed ACK — is TCP_NODELAY set on accepted connections?"
    );
}
