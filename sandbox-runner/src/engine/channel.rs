//! The runner's end of the socket: blocking, single-threaded frame I/O with reused buffers.

use crate::protocol::{
    blocking, encode_frame, raw, FrameError, LogLevel, RunnerMessage, WireError,
};
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
    out: Vec<u8>,
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

    pub fn send(&mut self, msg: &RunnerMessage) -> Result<(), FrameError> {
        encode_frame(msg, self.max_frame, &mut self.out)?;
        self.flush()
    }

    fn flush(&mut self) -> Result<(), FrameError> {
        blocking::write_frame(&mut self.sock, &self.out)?;
        Ok(())
    }

    pub fn send_rpc_call(
        &mut self,
        id: u64,
        server: &str,
        tool: &str,
        args_json: &str,
    ) -> Result<(), FrameError> {
        raw::encode_rpc_call(id, server, tool, args_json, self.max_frame, &mut self.out)?;
        self.flush()
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

    /// Blocks until the next frame arrives and returns its payload.
    pub fn recv(&mut self) -> Result<&[u8], FrameError> {
        blocking::read_frame(&mut self.sock, self.max_frame, &mut self.inbuf)?;
        Ok(&self.inbuf)
    }

    /// Like [`recv`](Self::recv) but hands out the buffer itself; give it back with
    /// [`restore`](Self::restore) so it is reused.
    pub fn recv_owned(&mut self) -> Result<Vec<u8>, FrameError> {
        blocking::read_frame(&mut self.sock, self.max_frame, &mut self.inbuf)?;
        Ok(std::mem::take(&mut self.inbuf))
    }

    pub fn restore(&mut self, buf: Vec<u8>) {
        self.inbuf = buf;
    }

    pub fn flush_socket(&mut self) {
        let _ = self.sock.flush();
    }
}
