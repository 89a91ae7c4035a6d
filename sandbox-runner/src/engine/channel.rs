//! The runner's end of the socket: blocking, single-threaded frame I/O with reused buffers.
//!
//! Batched both ways: the calls a script starts in one turn of its event loop wait in
//! `pending` and reach the host in one `write` when the runner is about to block on the socket
//! (or finishes); results the host wrote together are read with one `read` (read-ahead in
//! [`blocking::FrameReader`]). Each message is still its own frame, so every bound and check on
//! a frame applies per call. Log lines are not held back: they go out at once (after any held
//! calls, to keep the order), so a runner killed for its wall clock still leaves them.

use crate::protocol::{
    blocking, encode_frame, raw, FrameError, LogLevel, RunnerMessage, WireError,
};

/// Held calls are written once they reach this many bytes, without waiting for the turn to end.
pub const BATCH_BYTES: usize = 64 * 1024;
use std::fs::File;
use std::io::Write;

/// Frame channel to the host. Every frame is written with one `write` call.
///
/// The socket is used through plain `read`/`write` (a `File`), not `send`/`recv`: the seccomp
/// allowlist then needs only those two calls. SIGPIPE is ignored by the Rust runtime, so a closed
/// peer is an `EPIPE` error, not a signal.
pub struct Channel {
    sock: File,
    max_frame: usize,
    /// Scratch for encoding one frame.
    out: Vec<u8>,
    /// Encoded frames not yet written (calls of the current turn).
    pending: Vec<u8>,
    reader: blocking::FrameReader,
    inbuf: Vec<u8>,
    log_budget: u64,
    logs_truncated: bool,
}

impl Channel {
    pub fn new(sock: impl Into<std::os::fd::OwnedFd>, max_frame: usize) -> Self {
        let sock = File::from(sock.into());
        Channel {
            sock,
            max_frame,
            out: Vec::with_capacity(4096),
            pending: Vec::with_capacity(4096),
            reader: blocking::FrameReader::default(),
            inbuf: Vec::with_capacity(4096),
            log_budget: u64::MAX,
            logs_truncated: false,
        }
    }

    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame;
    }

    pub fn set_log_budget(&mut self, bytes: u64) {
        self.log_budget = bytes;
    }

    /// Sends `msg` now, after any held frames.
    pub fn send(&mut self, msg: &RunnerMessage) -> Result<(), FrameError> {
        encode_frame(msg, self.max_frame, &mut self.out)?;
        self.flush()
    }

    /// Writes the held frames and the one in `out`, in one call.
    fn flush(&mut self) -> Result<(), FrameError> {
        self.pending.extend_from_slice(&self.out);
        self.out.clear();
        self.flush_pending()
    }

    /// Holds the frame in `out` until the turn ends (or enough is held).
    fn hold(&mut self) -> Result<(), FrameError> {
        self.pending.extend_from_slice(&self.out);
        self.out.clear();
        if self.pending.len() >= BATCH_BYTES {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Writes every held frame in one call. The engine calls it before it blocks on the socket.
    pub fn flush_pending(&mut self) -> Result<(), FrameError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = blocking::write_frame(&mut self.sock, &self.pending);
        self.pending.clear();
        written
    }

    pub fn send_rpc_call(
        &mut self,
        id: u64,
        server: &str,
        tool: &str,
        args_json: &str,
    ) -> Result<(), FrameError> {
        raw::encode_rpc_call(id, server, tool, args_json, self.max_frame, &mut self.out)?;
        self.hold()
    }

    /// Asks the host for a `wake` in `ms` milliseconds; held until the runner blocks on the
    /// socket (which it is about to do).
    pub fn send_sleep(&mut self, ms: u64) -> Result<(), FrameError> {
        encode_frame(&RunnerMessage::Sleep { ms }, self.max_frame, &mut self.out)?;
        self.hold()
    }

    pub fn send_result(&mut self, result_json: &str) -> Result<(), FrameError> {
        raw::encode_complete_ok(result_json, self.max_frame, &mut self.out)?;
        self.flush()
    }

    /// Sends the script's error, every field cut to its bound (a script may throw an `Error`
    /// whose message is larger than a frame).
    pub fn send_error(&mut self, error: WireError) -> Result<(), FrameError> {
        self.send(&RunnerMessage::ExecutionComplete {
            success: false,
            result: None,
            error: Some(error.bounded()),
        })
    }

    /// Sends a log line unless the log budget is spent; the first line over budget is replaced by
    /// one marker saying logs were truncated.
    pub fn send_log(&mut self, level: LogLevel, message: String) -> Result<(), FrameError> {
        if self.logs_truncated {
            return Ok(());
        }
        let len = message.len() as u64;
        if len > self.log_budget {
            self.logs_truncated = true;
            return self.send(&RunnerMessage::Log {
                level: LogLevel::Warn,
                message: "[mcp-sandbox: log limit reached; later log lines were dropped]".into(),
            });
        }
        self.log_budget -= len;
        self.send(&RunnerMessage::Log { level, message })
    }

    /// Writes the held frames, then blocks until the next frame arrives and returns its payload.
    pub fn recv(&mut self) -> Result<&[u8], FrameError> {
        self.flush_pending()?;
        self.reader.next(&mut self.sock, self.max_frame)
    }

    /// Like [`recv`](Self::recv) but hands out a buffer of its own; give it back with
    /// [`restore`](Self::restore) so it is reused.
    pub fn recv_owned(&mut self) -> Result<Vec<u8>, FrameError> {
        self.flush_pending()?;
        let payload = self.reader.next(&mut self.sock, self.max_frame)?;
        let mut buf = std::mem::take(&mut self.inbuf);
        buf.clear();
        buf.extend_from_slice(payload);
        Ok(buf)
    }

    pub fn restore(&mut self, buf: Vec<u8>) {
        self.inbuf = buf;
    }

    pub fn flush_socket(&mut self) {
        let _ = self.sock.flush();
    }
}
