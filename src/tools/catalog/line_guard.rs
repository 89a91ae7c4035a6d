//! A stdio MCP server's stdout, watched for answers too large for the MCP client.
//!
//! rmcp reads one JSON-RPC message per line and silently drops a line longer than its limit
//! ([`rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH`], 16 MiB): the call it answered would
//! wait for its whole call timeout. [`LineGuard`] sits between the child's stdout and rmcp,
//! passes every byte through unchanged and counts the bytes of the current line. When a line
//! grows past the limit it measures the line to its end (at most [`MEASURE_FOR`] more, and at
//! most [`MEASURE_CAP`] bytes), records the size in the shared [`Oversize`] slot, and then fails
//! the read: the transport closes, every call in flight to that server ends at once, and the
//! caller reads the slot to report `LIMIT_EXCEEDED` with the size and the limit. The next call
//! restarts the server, as after a crash.
//!
//! The same holds for a line nested deeper than rmcp's JSON parser reads (serde_json's default
//! limit: [`MAX_LINE_DEPTH`] levels, so a tool's `structuredContent` of at most 125): rmcp drops
//! it and the call used to end `TOOL_TIMEOUT`. The guard tracks each line's bracket depth as it
//! passes (strings skipped, no parse), records the depth of a deeper line in the slot, and fails
//! the next read the same way: the call ends at once with `LIMIT_EXCEEDED` naming the depth.
//!
//! The limit is rmcp's line limit, not an execution's `max_tool_result_bytes`: the connection is
//! shared by every execution (in `serve`, by every client), so one execution's smaller limit
//! must not cut a server off for the others. Answers under the line limit are read and then
//! bounded per execution by `max_tool_result_bytes`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};

/// The longest line rmcp reads from a stdio server.
pub const MAX_LINE_BYTES: u64 = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH as u64;
/// The deepest line rmcp parses: serde_json refuses a 128th level.
pub const MAX_LINE_DEPTH: u32 = 127;
/// How long an oversized line is measured before it is reported as "more than" what was seen.
pub const MEASURE_FOR: Duration = Duration::from_secs(1);
/// The most bytes of an oversized line that are counted.
pub const MEASURE_CAP: u64 = 1024 * 1024 * 1024;

/// What the guard saw: the size of the first oversized line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OversizeSeen {
    /// Bytes of the line (without its newline) as far as they were counted.
    pub bytes: u64,
    /// Whether the line ended (so `bytes` is exact) or counting stopped first.
    pub complete: bool,
    pub limit: u64,
}

impl OversizeSeen {
    /// "17825837 bytes" or "more than 16777216 bytes".
    pub fn size(&self) -> String {
        if self.complete {
            format!("{} bytes", self.bytes)
        } else {
            format!("more than {} bytes", self.bytes)
        }
    }
}

/// Shared between the guard (writer) and the connection (reader).
#[derive(Debug, Default)]
pub struct Oversize {
    seen: Mutex<Option<OversizeSeen>>,
    /// The depth of the first line nested deeper than [`MAX_LINE_DEPTH`].
    deep: Mutex<Option<u32>>,
}

impl Oversize {
    pub fn get(&self) -> Option<OversizeSeen> {
        self.seen.lock().ok().and_then(|s| *s)
    }

    fn set(&self, seen: OversizeSeen) {
        if let Ok(mut s) = self.seen.lock() {
            s.get_or_insert(seen);
        }
    }

    /// The depth of the too-deep line that ended the connection, if one did.
    pub fn deep(&self) -> Option<u32> {
        self.deep.lock().ok().and_then(|d| *d)
    }

    fn set_deep(&self, depth: u32) {
        if let Ok(mut d) = self.deep.lock() {
            d.get_or_insert(depth);
        }
    }
}

/// The bracket depth of the line being read, carried from one read to the next.
#[derive(Debug, Default)]
struct Depth {
    now: u32,
    deepest: u32,
    in_string: bool,
    escaped: bool,
}

impl Depth {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.now = self.now.saturating_add(1);
                    self.deepest = self.deepest.max(self.now);
                }
                b']' | b'}' => self.now = self.now.saturating_sub(1),
                _ => {}
            }
        }
    }
}

/// The reader adapter (see the module docs).
pub struct LineGuard<R> {
    inner: R,
    limit: u64,
    line: u64,
    /// Set once the current line passed the limit: measuring stops when it fires.
    measuring: Option<Pin<Box<tokio::time::Sleep>>>,
    slot: Arc<Oversize>,
    failed: bool,
    depth: Depth,
}

impl<R> LineGuard<R> {
    pub fn new(inner: R, limit: u64, slot: Arc<Oversize>) -> Self {
        LineGuard {
            inner,
            limit,
            line: 0,
            measuring: None,
            slot,
            failed: false,
            depth: Depth::default(),
        }
    }

    fn failure(&self) -> io::Error {
        let text = match self.slot.deep() {
            Some(depth) => format!(
                "the server sent a message nested {depth} levels deep, over the {MAX_LINE_DEPTH}-level limit"
            ),
            None => format!(
                "the server sent a line of {}, over the {}-byte limit",
                self.slot.get().map(|s| s.size()).unwrap_or_default(),
                self.limit
            ),
        };
        io::Error::new(io::ErrorKind::InvalidData, text)
    }

    fn fail(&mut self, complete: bool) -> io::Error {
        let seen = OversizeSeen {
            bytes: self.line,
            complete,
            limit: self.limit,
        };
        self.slot.set(seen);
        self.failed = true;
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the server sent a line of {}, over the {}-byte limit",
                seen.size(),
                seen.limit
            ),
        )
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(Err(this.failure()));
        }
        if let Some(timer) = this.measuring.as_mut() {
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(this.fail(false)));
            }
        }
        let before = buf.filled().len();
        let had_room = buf.remaining() > 0;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let fresh = &buf.filled()[before..];
        if fresh.is_empty() && had_room {
            // End of stream in the middle of an oversized line.
            if this.measuring.is_some() {
                return Poll::Ready(Err(this.fail(true)));
            }
            return Poll::Ready(Ok(()));
        }
        for chunk in fresh.split_inclusive(|b| *b == b'\n') {
            let ends = chunk.last() == Some(&b'\n');
            let body = chunk.len() as u64 - u64::from(ends);
            this.line = this.line.saturating_add(body);
            if this.line > this.limit && this.measuring.is_none() {
                this.measuring = Some(Box::pin(tokio::time::sleep(MEASURE_FOR)));
            }
            if this.measuring.is_some() && (ends || this.line >= MEASURE_CAP) {
                // These bytes are delivered (an `Err` must not follow a filled buffer); the
                // next read fails.
                let _ = this.fail(ends);
                return Poll::Ready(Ok(()));
            }
            if this.measuring.is_none() {
                this.depth.feed(chunk);
            }
            if ends {
                if this.depth.deepest > MAX_LINE_DEPTH {
                    // Delivered (rmcp drops it); the next read fails, naming the depth.
                    this.slot.set_deep(this.depth.deepest);
                    this.failed = true;
                    return Poll::Ready(Ok(()));
                }
                this.line = 0;
                this.depth = Depth::default();
            }
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn passes_short_lines_and_fails_a_long_one_with_its_size() {
        let mut data = b"{\"a\":1}\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 100));
        data.extend(b"\n{\"b\":2}\n");
        let slot = Arc::new(Oversize::default());
        let mut g = LineGuard::new(&data[..], 50, slot.clone());
        let mut out = Vec::new();
        let err = g.read_to_end(&mut out).await.unwrap_err();
        assert!(err.to_string().contains("line of 100 bytes"), "{err}");
        assert_eq!(
            slot.get(),
            Some(OversizeSeen {
                bytes: 100,
                complete: true,
                limit: 50
            })
        );
    }

    #[tokio::test]
    async fn a_line_deeper_than_rmcp_reads_fails_with_its_depth() {
        let ok = format!("{}1{}\n", "[".repeat(127), "]".repeat(127));
        let deep = format!(
            "{{\"s\":\"[[[\",\"v\":{}1{}}}\n",
            "[".repeat(201),
            "]".repeat(201)
        );
        let data = format!("{ok}{deep}{ok}");
        let slot = Arc::new(Oversize::default());
        let mut g = LineGuard::new(data.as_bytes(), 1 << 20, slot.clone());
        let mut out = Vec::new();
        let err = g.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the server sent a message nested 202 levels deep, over the 127-level limit"
        );
        assert_eq!(slot.deep(), Some(202));
        assert_eq!(slot.get(), None);
    }

    #[tokio::test]
    async fn lines_at_the_limit_pass() {
        let mut data = Vec::new();
        for _ in 0..3 {
            data.extend(std::iter::repeat_n(b'x', 50));
            data.push(b'\n');
        }
        let slot = Arc::new(Oversize::default());
        let mut g = LineGuard::new(&data[..], 50, slot.clone());
        let mut out = Vec::new();
        g.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, data);
        assert_eq!(slot.get(), None);
    }
}
