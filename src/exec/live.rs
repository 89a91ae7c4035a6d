//! A live view of one running execution, for a front that lets the client look at it before it
//! ends (`serve`'s `execute_code {yield_after_ms}` and `wait_execution`): the log lines not yet
//! looked at, the calls done and the calls in flight. The session updates it as it goes; it
//! keeps only the lines nobody has seen yet, within the execution's own log budget, so it never
//! holds more than the outcome's `logs` would.

use crate::exec::outcome::LogLine;
use crate::exec::session::LOG_LINE_OVERHEAD;
use std::sync::Mutex;
use tokio::sync::watch;

/// Tool calls of the execution so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    /// Calls that ended (answered, failed or refused).
    pub done: u64,
    /// Calls started (or queued) and not ended yet.
    pub in_flight: u64,
}

/// What is new since the last look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Look {
    /// Log lines since the last look (in order).
    pub logs: Vec<LogLine>,
    pub calls: Calls,
}

#[derive(Debug, Default)]
struct Unseen {
    lines: Vec<LogLine>,
    bytes: u64,
}

/// Shared between the session (which writes) and the front (which looks).
#[derive(Debug)]
pub struct LiveView {
    unseen: Mutex<Unseen>,
    /// The most unseen log bytes kept (the execution's `log_bytes`; lines past it are dropped
    /// from the view, never from the outcome).
    max_bytes: u64,
    calls: watch::Sender<Calls>,
}

impl LiveView {
    pub fn new(max_bytes: u64) -> Self {
        LiveView {
            unseen: Mutex::new(Unseen::default()),
            max_bytes,
            calls: watch::Sender::new(Calls::default()),
        }
    }

    /// A log line the execution kept.
    pub fn log(&self, line: &LogLine) {
        let cost = line.message.len() as u64 + LOG_LINE_OVERHEAD;
        let mut u = self.unseen.lock().unwrap_or_else(|p| p.into_inner());
        if u.bytes.saturating_add(cost) > self.max_bytes.saturating_add(4096) {
            return;
        }
        u.bytes += cost;
        u.lines.push(line.clone());
    }

    /// The calls now: `done` ended so far, `in_flight` open.
    pub fn set_calls(&self, calls: Calls) {
        self.calls.send_if_modified(|c| {
            let changed = *c != calls;
            *c = calls;
            changed
        });
    }

    /// Takes what is new since the last look.
    pub fn look(&self) -> Look {
        let lines = {
            let mut u = self.unseen.lock().unwrap_or_else(|p| p.into_inner());
            u.bytes = 0;
            std::mem::take(&mut u.lines)
        };
        Look {
            logs: lines,
            calls: *self.calls.borrow(),
        }
    }

    /// Changes of the calls (for progress notifications).
    pub fn watch_calls(&self) -> watch::Receiver<Calls> {
        self.calls.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(m: &str) -> LogLine {
        LogLine {
            level: "log".into(),
            message: m.into(),
        }
    }

    #[test]
    fn a_look_takes_only_what_is_new() {
        let v = LiveView::new(1000);
        v.log(&line("a"));
        v.set_calls(Calls {
            done: 1,
            in_flight: 2,
        });
        let first = v.look();
        assert_eq!(first.logs, vec![line("a")]);
        assert_eq!(first.calls.done, 1);
        v.log(&line("b"));
        assert_eq!(v.look().logs, vec![line("b")]);
        assert!(v.look().logs.is_empty());
    }

    #[test]
    fn unseen_lines_are_bounded() {
        let v = LiveView::new(0);
        for _ in 0..1000 {
            v.log(&line(&"x".repeat(100)));
        }
        let kept = v.look().logs.len();
        assert!(kept < 40, "{kept}");
    }
}
