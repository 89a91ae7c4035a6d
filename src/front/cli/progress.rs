//! `run`'s live progress line: while the script runs, one line on stderr (only when stderr is a
//! terminal, and not with `--quiet`) with the elapsed time, the calls done and in flight, the
//! tool being waited on, and a pending approval. It reads the execution's
//! [`LiveView`](crate::exec::live::LiveView) (the hook `serve` uses for its progress
//! notifications), redrawn ten times a second by `indicatif`, which erases it (`\r\x1b[2K`)
//! when it is paused or finished. The TTY approver pauses it while its question is on the
//! terminal, and `run` finishes it before it prints the outcome: neither is ever garbled by it.

use crate::exec::live::{Calls, LiveView, Waiting};
use crate::term::escape;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// A tool name is cut to this many characters on the line.
const MAX_TOOL_CHARS: usize = 60;

/// Whether `run` shows the line: stderr is a terminal and `--quiet` was not given.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

#[derive(Default)]
struct State {
    bar: Option<ProgressBar>,
    /// Questions on the terminal now: nothing is drawn while there is one.
    paused: u32,
    finished: bool,
}

/// The line of one execution.
pub struct ProgressLine {
    live: Arc<LiveView>,
    started: Instant,
    state: Mutex<State>,
}

impl ProgressLine {
    pub fn new(live: Arc<LiveView>) -> Arc<Self> {
        Arc::new(ProgressLine {
            live,
            started: Instant::now(),
            state: Mutex::default(),
        })
    }

    /// Draws the line every [`TICK`] until [`finish`](Self::finish).
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let line = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                match line.upgrade() {
                    Some(l) if l.draw() => {}
                    _ => return,
                }
            }
        })
    }

    /// Redraws the line; false once it is finished.
    fn draw(&self) -> bool {
        let text = text(
            self.started.elapsed(),
            self.live.calls(),
            &self.live.waiting(),
        );
        let mut s = self.lock();
        if s.finished {
            return false;
        }
        if s.paused == 0 {
            let bar = s.bar.get_or_insert_with(new_bar);
            bar.set_message(text);
            bar.tick();
        }
        true
    }

    /// Erases the line and draws nothing until [`resume`](Self::resume) (a question is about to
    /// be written on the terminal).
    pub fn pause(&self) {
        let mut s = self.lock();
        s.paused += 1;
        if let Some(bar) = s.bar.take() {
            bar.finish_and_clear();
        }
    }

    pub fn resume(&self) {
        let mut s = self.lock();
        s.paused = s.paused.saturating_sub(1);
    }

    /// Erases the line for good (before the outcome is printed).
    pub fn finish(&self) {
        let mut s = self.lock();
        s.finished = true;
        if let Some(bar) = s.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.finish();
    }
}

fn new_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    // The template is a constant: it always parses.
    if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg}") {
        bar.set_style(style);
    }
    bar
}

/// `2.4 s · 1 call done, 1 in flight · waiting on fixture:sleep`.
pub fn text(elapsed: Duration, calls: Calls, waiting: &Waiting) -> String {
    let plural = if calls.done == 1 { "call" } else { "calls" };
    let mut text = format!(
        "{:.1} s · {} {plural} done, {} in flight",
        elapsed.as_secs_f64(),
        calls.done,
        calls.in_flight
    );
    if let Some(tool) = waiting.approvals.first() {
        text.push_str(&format!(" · waiting for approval of {}", shown(tool)));
        if waiting.approvals.len() > 1 {
            text.push_str(&format!(" (+{} more)", waiting.approvals.len() - 1));
        }
    } else if let Some(tool) = &waiting.tool {
        text.push_str(&format!(" · waiting on {}", shown(tool)));
    }
    text
}

/// A tool name from a server, escaped and cut for one terminal line.
fn shown(tool: &str) -> String {
    let escaped = escape(tool).into_owned();
    if escaped.chars().count() <= MAX_TOOL_CHARS {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(MAX_TOOL_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_the_execution_waits_on() {
        let calls = Calls {
            done: 1,
            in_flight: 1,
        };
        let waiting = Waiting {
            tool: Some("fixture:sleep".into()),
            approvals: vec![],
        };
        assert_eq!(
            text(Duration::from_millis(2400), calls, &waiting),
            "2.4 s · 1 call done, 1 in flight · waiting on fixture:sleep"
        );
        let asking = Waiting {
            tool: Some("fixture:sleep".into()),
            approvals: vec!["fs:write".into(), "fs:write".into()],
        };
        assert_eq!(
            text(Duration::ZERO, Calls::default(), &asking),
            "0.0 s · 0 calls done, 0 in flight · waiting for approval of fs:write (+1 more)"
        );
        let odd = Waiting {
            tool: Some(format!("a:\x1b[31m{}", "x".repeat(100))),
            approvals: vec![],
        };
        let t = text(Duration::ZERO, Calls::default(), &odd);
        assert!(!t.contains('\x1b') && t.ends_with('…'), "{t}");
    }
}
