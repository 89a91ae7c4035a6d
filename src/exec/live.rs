//! A live view of one running execution, for a front that lets the client look at it before it
//! ends (`serve`'s `execute_code {yield_after_ms}` and `wait_execution`): the log lines not yet
//! looked at, the calls done and the calls in flight. The session updates it as it goes; it
//! keeps only the lines nobody has seen yet, within the execution's own log budget, so it never
//! holds more than the outcome's `logs` would. `run`'s progress line on a terminal reads the
//! calls and what the execution waits on (the oldest open call's tool, pending approvals).

use crate::exec::outcome::{LogLine, LOG_LINE_OVERHEAD};
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

/// What the execution waits on now (for a terminal's progress line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    /// The tool of the oldest call in flight (`server:tool`).
    pub tool: Option<String>,
    /// Calls waiting for an approval now, by tool, oldest first.
    pub approvals: Vec<String>,
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
    waiting: Mutex<Waiting>,
}

/// An approval being waited for, shown in [`LiveView::waiting`] until dropped.
pub struct ApprovalWait {
    live: std::sync::Arc<LiveView>,
    tool: String,
}

impl Drop for ApprovalWait {
    fn drop(&mut self) {
        let mut w = self.live.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = w.approvals.iter().position(|t| *t == self.tool) {
            w.approvals.remove(i);
        }
    }
}

impl LiveView {
    pub fn new(max_bytes: u64) -> Self {
        LiveView {
            unseen: Mutex::new(Unseen::default()),
            max_bytes,
            calls: watch::Sender::new(Calls::default()),
            waiting: Mutex::default(),
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

    /// The tool of the oldest call in flight now (`None`: no call open).
    pub fn set_waiting_on(&self, tool: Option<&str>) {
        let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if w.tool.as_deref() != tool {
            w.tool = tool.map(str::to_string);
        }
    }

    /// A call of `tool` waits for an approval until the returned guard drops.
    pub fn approval_wait(self: &std::sync::Arc<Self>, tool: &str) -> ApprovalWait {
        let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        w.approvals.push(tool.to_string());
        ApprovalWait {
            live: self.clone(),
            tool: tool.to_string(),
        }
    }

    /// What the execution waits on now.
    pub fn waiting(&self) -> Waiting {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The calls now (without taking the unseen log lines).
    pub fn calls(&self) -> Calls {
        *self.calls.borrow()
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
    fn approval_waits_end_when_dropped() {
        let v = std::sync::Arc::new(LiveView::new(1000));
        v.set_waiting_on(Some("fs:write"));
        let a = v.approval_wait("fs:write");
        let b = v.approval_wait("fs:write");
        assert_eq!(v.waiting().approvals, ["fs:write", "fs:write"]);
        drop(a);
        assert_eq!(v.waiting().approvals, ["fs:write"]);
        drop(b);
        assert!(v.waiting().approvals.is_empty());
        assert_eq!(v.waiting().tool.as_deref(), Some("fs:write"));
        v.set_waiting_on(None);
        assert_eq!(v.waiting(), Waiting::default());
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
