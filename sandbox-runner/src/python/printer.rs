//! `print` as log lines: each finished line is a `log` frame, sent as it is printed (within the
//! log budget the channel keeps); a line longer than [`MAX_LINE`] is sent in pieces.

use crate::engine::channel::Channel;
use crate::protocol::LogLevel;
use monty_types::{MontyException, PrintWriterCallback};
use std::borrow::Cow;

/// Longest piece of one line held before it is sent.
pub const MAX_LINE: usize = 64 * 1024;

/// What outlives one resumption of the interpreter: the unfinished line, and why the channel
/// broke if it did.
#[derive(Default)]
pub struct Lines {
    partial: String,
    pub broken: Option<String>,
}

/// The `print` writer for one resumption.
pub struct Printer<'a> {
    channel: &'a mut Channel,
    lines: &'a mut Lines,
}

impl<'a> Printer<'a> {
    pub fn new(channel: &'a mut Channel, lines: &'a mut Lines) -> Self {
        Printer { channel, lines }
    }

    /// Sends what is left of an unfinished line (the script ended without a newline).
    pub fn finish(&mut self) {
        if !self.lines.partial.is_empty() {
            let _ = self.emit();
        }
    }

    fn emit(&mut self) -> Result<(), MontyException> {
        let line = std::mem::take(&mut self.lines.partial);
        if self.lines.broken.is_some() {
            return Err(MontyException::runtime_error(
                "lost the connection to the host",
            ));
        }
        self.channel.send_log(LogLevel::Log, line).map_err(|e| {
            self.lines.broken = Some(e.to_string());
            MontyException::runtime_error("lost the connection to the host")
        })
    }
}

impl PrintWriterCallback for Printer<'_> {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        let mut rest: &str = &output;
        while let Some(at) = rest.find('\n') {
            self.lines.partial.push_str(&rest[..at]);
            self.emit()?;
            rest = &rest[at + 1..];
        }
        self.lines.partial.push_str(rest);
        if self.lines.partial.len() > MAX_LINE {
            self.emit()?;
        }
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        if end == '\n' {
            return self.emit();
        }
        self.lines.partial.push(end);
        if self.lines.partial.len() > MAX_LINE {
            self.emit()?;
        }
        Ok(())
    }
}
