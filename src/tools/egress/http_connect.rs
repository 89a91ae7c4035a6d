//! The HTTP side of the proxy: `CONNECT host:port` (what HTTPS and any TLS client use) and
//! plain `GET http://host/path` absolute-form requests (forwarded once, with
//! `Connection: close`, so one connection reaches one host). The request head is bounded in
//! size; the caller bounds its time.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head read (request line and headers).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub host: String,
    pub port: u16,
    /// For a CONNECT: empty (the tunnel starts after the 200). For an absolute-form request:
    /// the head to send upstream (origin-form request line, proxy headers dropped).
    pub forward_head: Vec<u8>,
    /// Bytes the client sent after the head (the start of its body or of its TLS handshake).
    pub rest: Vec<u8>,
    pub is_connect: bool,
}

/// Why a request head was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeadError {
    #[error("request head longer than {MAX_HEAD_BYTES} bytes")]
    TooLong,
    #[error("connection closed before the request head ended")]
    Closed,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("read failed")]
    Io,
}

/// Reads a request head starting with `first` (the byte already read to tell HTTP from SOCKS).
pub async fn read_request<R: AsyncRead + Unpin>(
    stream: &mut R,
    first: u8,
) -> Result<Request, HeadError> {
    let mut buf = vec![first];
    let end = loop {
        if let Some(pos) = find_end(&buf) {
            break pos;
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(HeadError::TooLong);
        }
        let mut chunk = [0u8; 2048];
        let n = stream.read(&mut chunk).await.map_err(|_| HeadError::Io)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    if end > MAX_HEAD_BYTES {
        return Err(HeadError::TooLong);
    }
    let rest = buf.split_off(end);
    parse(&buf, rest)
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn parse(head: &[u8], rest: Vec<u8>) -> Result<Request, HeadError> {
    let text = std::str::from_utf8(head).map_err(|_| HeadError::Malformed("not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed(
            "request line is not METHOD TARGET VERSION",
        ));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HeadError::Malformed("not HTTP/1.x"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target, None)?;
        return Ok(Request {
            host,
            port,
            forward_head: Vec::new(),
            rest,
            is_connect: true,
        });
    }
    let Some(after) = target.strip_prefix("http://") else {
        return Err(HeadError::Malformed(
            "only CONNECT and absolute http:// requests are proxied",
        ));
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    if authority.contains('@') {
        return Err(HeadError::Malformed("user info in the URL"));
    }
    let (host, port) = split_host_port(authority, Some(80))?;
    let mut out = format!("{method} {path} {version}\r\n");
    for header in lines.filter(|l| !l.is_empty()) {
        let name = header.split(':').next().unwrap_or_default().trim();
        let drop = name.eq_ignore_ascii_case("connection")
            || name.eq_ignore_ascii_case("keep-alive")
            || name.len() > 6 && name[..6].eq_ignore_ascii_case("proxy-");
        if !drop {
            out.push_str(header);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request {
        host,
        port,
        forward_head: out.into_bytes(),
        rest,
        is_connect: false,
    })
}

/// `host:port`, `[v6]:port`, or `host` with a default port.
fn split_host_port(s: &str, default: Option<u16>) -> Result<(String, u16), HeadError> {
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or(HeadError::Malformed("unclosed IPv6 bracket"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(HeadError::Malformed("junk after the IPv6 address")),
        };
        (format!("[{h}]"), port)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (s.to_string(), None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or(HeadError::Malformed("bad port"))?,
        None => default.ok_or(HeadError::Malformed("no port"))?,
    };
    if host.is_empty() || host.len() > 255 {
        return Err(HeadError::Malformed("bad host"));
    }
    Ok((host, port))
}

/// Answers a CONNECT that was let through.
pub async fn established<W: AsyncWrite + Unpin>(w: &mut W) -> std::io::Result<()> {
    w.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
}

/// Answers with an error status and a one-line reason (then the connection is closed).
pub async fn refuse<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: &str,
    why: &str,
) -> std::io::Result<()> {
    let body = format!("mcp-sandbox egress proxy: {why}\n");
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await?;
    w.write_all(body.as_bytes()).await?;
    w.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(bytes: &[u8]) -> Result<Request, HeadError> {
        let mut r = &bytes[1..];
        read_request(&mut r, bytes[0]).await
    }

    #[tokio::test]
    async fn connect_and_absolute_form_are_parsed() {
        let r = read(b"CONNECT api.example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n\x16\x03")
            .await
            .unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.is_connect),
            ("api.example.org", 443, true)
        );
        assert_eq!(r.rest, b"\x16\x03");
        let r = read(b"CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("[2001:db8::1]", 8443));
        let r = read(b"GET http://example.org/a?b HTTP/1.1\r\nHost: example.org\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.is_connect),
            ("example.org", 80, false)
        );
        assert_eq!(
            String::from_utf8(r.forward_head).unwrap(),
            "GET /a?b HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn bad_heads_are_refused() {
        assert_eq!(
            read(b"CONNECT host HTTP/1.1\r\n\r\n").await,
            Err(HeadError::Malformed("no port"))
        );
        assert_eq!(
            read(b"CONNECT host:0 HTTP/1.1\r\n\r\n").await,
            Err(HeadError::Malformed("bad port"))
        );
        assert_eq!(
            read(b"GET /relative HTTP/1.1\r\n\r\n").await,
            Err(HeadError::Malformed(
                "only CONNECT and absolute http:// requests are proxied"
            ))
        );
        assert_eq!(
            read(b"CONNECT a:1 HTTP/1.1\r\n").await,
            Err(HeadError::Closed)
        );
        let mut long = b"CONNECT a:1 HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD_BYTES + 10, b'a');
        assert_eq!(read(&long).await, Err(HeadError::TooLong));
    }
}
