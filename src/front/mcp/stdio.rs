//! The stdio front: a line reader in front of rmcp's transport. Every line is checked first
//! ([`super::jsonrpc`]): an unparsable line gets `-32700` (id null), other malformed messages
//! their JSON-RPC error, and a line over the limit gets an error for its id when its first bytes
//! name one; the server goes on with the next line. Answers go out through one writer: a client
//! that stops reading for longer than the write timeout loses the session.

use super::jsonrpc::{self, Refusal};
use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest line accepted (rmcp's own limit, which it enforces by dropping the line silently).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How much of an oversized line is kept to find its id.
const PREFIX_BYTES: usize = 64 * 1024;

/// One line read from the client.
enum Line {
    Whole(Vec<u8>),
    /// Longer than the limit: its first bytes.
    TooLong(Vec<u8>),
}

/// Reads one `\n`-terminated line of at most `max` bytes, discarding the rest of a longer one.
async fn read_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            // EOF: a last line without a newline still counts.
            return Ok(match (line.is_empty(), too_long) {
                (true, false) => None,
                (_, true) => Some(Line::TooLong(line)),
                (false, false) => Some(Line::Whole(line)),
            });
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.truncate(PREFIX_BYTES);
                let room = PREFIX_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            } else {
                line.extend_from_slice(chunk);
            }
        } else if line.len() < PREFIX_BYTES {
            let room = PREFIX_BYTES - line.len();
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            return Ok(Some(if too_long {
                Line::TooLong(line)
            } else {
                Line::Whole(line)
            }));
        }
    }
}

fn refusal_line(r: &Refusal) -> Vec<u8> {
    let mut v = serde_json::to_vec(&r.to_json()).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Checks the client's lines and passes the good ones to `to_rmcp`; refusals go to `out`.
async fn pump_in<R, W>(input: R, mut to_rmcp: W, out: mpsc::Sender<Vec<u8>>, max: usize)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    loop {
        let line = match read_line(&mut reader, max).await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                break;
            }
        };
        let refusal = match line {
            Line::TooLong(prefix) => Some(Refusal {
                id: jsonrpc::id_in_prefix(&prefix),
                code: jsonrpc::INVALID_REQUEST,
                message: format!(
                    "Invalid Request: the message is longer than {max} bytes and was not read; send smaller requests"
                ),
            }),
            Line::Whole(bytes) => {
                let trimmed = bytes.trim_ascii();
                if trimmed.is_empty() {
                    continue;
                }
                match jsonrpc::check(trimmed) {
                    Ok(_) => {
                        let mut b = BytesMut::with_capacity(trimmed.len() + 1);
                        b.extend_from_slice(trimmed);
                        b.extend_from_slice(b"\n");
                        if to_rmcp.write_all(&b).await.is_err() {
                            break;
                        }
                        None
                    }
                    Err(r) => Some(r),
                }
            }
        };
        if let Some(r) = refusal {
            tracing::info!(code = r.code, id = %r.id, "refused a stdio message: {}", r.message);
            if out.send(refusal_line(&r)).await.is_err() {
                break;
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Writes rmcp's answers (whole lines read from `from_rmcp`) and the refusals of `pump_in`
/// to the client, in one task: the answer path is one task hop shorter than a reader task
/// passing lines to a writer (issue 33). A write that waits longer than `timeout` (the client
/// is not reading) ends the session through `gone`. Ends when rmcp's side is closed.
async fn write_out<R, W>(
    from_rmcp: R,
    mut output: W,
    mut refusals: mpsc::Receiver<Vec<u8>>,
    timeout: Duration,
    gone: CancellationToken,
    written: Written,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut answers = BufReader::new(from_rmcp);
    // A line in progress stays here when the refusal branch wins a round: `read_until` keeps
    // what it consumed in this buffer, so nothing is lost across rounds.
    let mut partial = Vec::new();
    let mut refusals_open = true;
    loop {
        let line = tokio::select! {
            read = answers.read_until(b'\n', &mut partial) => match read {
                // rmcp closed its side (a line it left unfinished still goes out).
                Ok(0) | Err(_) if partial.is_empty() => break,
                Ok(_) | Err(_) => std::mem::take(&mut partial),
            },
            refusal = refusals.recv(), if refusals_open => match refusal {
                Some(line) => line,
                None => {
                    refusals_open = false;
                    continue;
                }
            },
        };
        let write = async {
            output.write_all(&line).await?;
            output.flush().await
        };
        match tokio::time::timeout(timeout, write).await {
            Ok(Ok(())) => {
                // The answer's id is among its first bytes (rmcp writes `jsonrpc`, then `id`).
                let head = &line[..line.len().min(256)];
                (written.0)(&jsonrpc::id_in_prefix(head));
            }
            Ok(Err(e)) => {
                tracing::warn!("writing stdout failed: {e}; ending the session");
                gone.cancel();
                return;
            }
            Err(_) => {
                tracing::warn!(
                    "the client did not read an answer within {timeout:?}; ending the session"
                );
                gone.cancel();
                return;
            }
        }
    }
}

/// Told the id of each answer written to the client.
#[derive(Clone)]
pub struct Written(pub std::sync::Arc<dyn Fn(&serde_json::Value) + Send + Sync>);

/// The transport rmcp serves on, and the tasks that connect it to `input`/`output`. `gone` is
/// cancelled when the client stops reading.
pub fn front<R, W>(
    input: R,
    output: W,
    write_timeout: Duration,
    gone: CancellationToken,
    written: Written,
) -> (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (our_read, our_write) = tokio::io::split(ours);
    let (their_read, their_write) = tokio::io::split(theirs);
    // A few refusals in the queue: past it the reader waits for the client to read.
    let (tx, rx) = mpsc::channel::<Vec<u8>>(4);
    tokio::spawn(pump_in(input, our_write, tx, MAX_LINE_BYTES));
    tokio::spawn(write_out(
        our_read,
        output,
        rx,
        write_timeout,
        gone,
        written,
    ));
    (their_read, their_write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_cut_and_the_next_is_read() {
        let mut data = b"{\"id\":9,".to_vec();
        data.extend(std::iter::repeat_n(b'x', 300));
        data.extend_from_slice(b"\nnext\n");
        let mut r = BufReader::with_capacity(16, &data[..]);
        match read_line(&mut r, 100).await.unwrap() {
            Some(Line::TooLong(p)) => assert!(p.starts_with(b"{\"id\":9,")),
            _ => panic!("expected a long line"),
        }
        match read_line(&mut r, 100).await.unwrap() {
            Some(Line::Whole(l)) => assert_eq!(l, b"next"),
            _ => panic!("expected the next line"),
        }
        assert!(read_line(&mut r, 100).await.unwrap().is_none());
    }
}
