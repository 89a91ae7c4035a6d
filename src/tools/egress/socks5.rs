//! The SOCKS5 side of the proxy (RFC 1928): no authentication, the CONNECT command, IPv4,
//! domain-name and IPv6 address types. A client that resolves names itself (`socks5://`) sends
//! an address literal, which is checked like any other; `socks5h://` sends the name, resolved
//! here.

use std::net::{Ipv4Addr, Ipv6Addr};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// SOCKS5 reply codes used.
pub const REPLY_OK: u8 = 0x00;
pub const REPLY_FAILURE: u8 = 0x01;
pub const REPLY_NOT_ALLOWED: u8 = 0x02;
pub const REPLY_HOST_UNREACHABLE: u8 = 0x04;
pub const REPLY_COMMAND_NOT_SUPPORTED: u8 = 0x07;
pub const REPLY_ADDRESS_NOT_SUPPORTED: u8 = 0x08;

/// Why a SOCKS5 handshake was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SocksError {
    #[error("the client offered no 'no authentication' method")]
    NoAcceptableMethod,
    #[error("command {0} is not CONNECT")]
    Command(u8),
    #[error("address type {0} is not supported")]
    AddressType(u8),
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("read or write failed")]
    Io,
}

/// The destination of a CONNECT: a host (name or literal, IPv6 in brackets) and a port.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub host: String,
    pub port: u16,
}

async fn byte<R: AsyncRead + Unpin>(r: &mut R) -> Result<u8, SocksError> {
    r.read_u8().await.map_err(|_| SocksError::Io)
}

/// Reads the greeting (its version byte 0x05 already read) and the CONNECT request; answers
/// the method choice, and a failure reply when the request is refused here.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
) -> Result<Request, SocksError> {
    let n = byte(s).await?;
    let mut methods = vec![0u8; usize::from(n)];
    s.read_exact(&mut methods)
        .await
        .map_err(|_| SocksError::Io)?;
    if !methods.contains(&0x00) {
        let _ = s.write_all(&[0x05, 0xff]).await;
        return Err(SocksError::NoAcceptableMethod);
    }
    s.write_all(&[0x05, 0x00])
        .await
        .map_err(|_| SocksError::Io)?;
    let mut head = [0u8; 4];
    s.read_exact(&mut head).await.map_err(|_| SocksError::Io)?;
    if head[0] != 0x05 {
        return Err(SocksError::Malformed("request version is not 5"));
    }
    if head[1] != 0x01 {
        let _ = reply(s, REPLY_COMMAND_NOT_SUPPORTED).await;
        return Err(SocksError::Command(head[1]));
    }
    let host = match head[3] {
        0x01 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await.map_err(|_| SocksError::Io)?;
            Ipv4Addr::from(a).to_string()
        }
        0x03 => {
            let len = byte(s).await?;
            let mut name = vec![0u8; usize::from(len)];
            s.read_exact(&mut name).await.map_err(|_| SocksError::Io)?;
            match String::from_utf8(name) {
                Ok(n) if !n.is_empty() => n,
                _ => {
                    let _ = reply(s, REPLY_FAILURE).await;
                    return Err(SocksError::Malformed("domain name is empty or not UTF-8"));
                }
            }
        }
        0x04 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await.map_err(|_| SocksError::Io)?;
            format!("[{}]", Ipv6Addr::from(a))
        }
        other => {
            let _ = reply(s, REPLY_ADDRESS_NOT_SUPPORTED).await;
            return Err(SocksError::AddressType(other));
        }
    };
    let port = s.read_u16().await.map_err(|_| SocksError::Io)?;
    if port == 0 {
        let _ = reply(s, REPLY_FAILURE).await;
        return Err(SocksError::Malformed("port 0"));
    }
    Ok(Request { host, port })
}

/// Sends a reply with the given code (bound address 0.0.0.0:0: the client needs none).
pub async fn reply<W: AsyncWrite + Unpin>(w: &mut W, code: u8) -> std::io::Result<()> {
    w.write_all(&[0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(client: &[u8]) -> (Result<Request, SocksError>, Vec<u8>) {
        let (mut a, mut b) = tokio::io::duplex(1024);
        b.write_all(client).await.unwrap();
        drop(b.shutdown().await);
        let r = handshake(&mut a).await;
        drop(a);
        let mut out = Vec::new();
        b.read_to_end(&mut out).await.unwrap();
        (r, out)
    }

    #[tokio::test]
    async fn the_three_address_types_are_read() {
        let (r, out) = run(&[
            1, 0, 5, 1, 0, 3, 11, b'e', b'x', b'a', b'm', b'p', b'l', b'e', b'.', b'o', b'r', b'g',
            1, 187,
        ])
        .await;
        assert_eq!(
            r,
            Ok(Request {
                host: "example.org".into(),
                port: 443
            })
        );
        assert_eq!(out, [5, 0]);
        let (r, _) = run(&[1, 0, 5, 1, 0, 1, 169, 254, 169, 254, 0, 80]).await;
        assert_eq!(
            r,
            Ok(Request {
                host: "169.254.169.254".into(),
                port: 80
            })
        );
        let mut v6 = vec![1, 0, 5, 1, 0, 4];
        v6.extend_from_slice(&"::1".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&[0x1f, 0x90]);
        let (r, _) = run(&v6).await;
        assert_eq!(
            r,
            Ok(Request {
                host: "[::1]".into(),
                port: 8080
            })
        );
    }

    #[tokio::test]
    async fn other_methods_commands_and_types_are_refused() {
        let (r, out) = run(&[1, 2]).await;
        assert_eq!(
            (r, out),
            (Err(SocksError::NoAcceptableMethod), vec![5, 0xff])
        );
        let (r, out) = run(&[1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80]).await;
        assert_eq!(r, Err(SocksError::Command(2)));
        assert_eq!(out[2..4], [5, REPLY_COMMAND_NOT_SUPPORTED]);
        let (r, _) = run(&[1, 0, 5, 1, 0, 9]).await;
        assert_eq!(r, Err(SocksError::AddressType(9)));
        let (r, _) = run(&[1, 0, 5, 1, 0, 3, 4, b'a']).await;
        assert_eq!(r, Err(SocksError::Io));
    }
}
