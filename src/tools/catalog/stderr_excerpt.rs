//! What a stdio MCP server said on stderr, kept for the message that reports it failed: its
//! first lines and its last. A runtime usually says the decisive thing first and its stack
//! after (Node: `Error: Cannot find module '/srv/server.js'`, then frames, then `Node.js
//! v20…`), a server that ran a while says it last: neither end alone is enough. Bounded: at
//! most [`HEAD`] + [`TAIL`] lines of at most [`MAX_LINE_CHARS`] characters each, blank lines
//! skipped; the lines in between are counted, not kept.

use std::collections::VecDeque;

/// First lines kept.
pub const HEAD: usize = 6;
/// Last lines kept.
pub const TAIL: usize = 6;
/// Characters kept of one line.
pub const MAX_LINE_CHARS: usize = 400;

/// The first and last lines of a stream.
#[derive(Debug, Default)]
pub struct StderrExcerpt {
    head: Vec<String>,
    tail: VecDeque<String>,
    /// Lines dropped between the head and the tail.
    skipped: u64,
}

impl StderrExcerpt {
    /// Keeps `line` (already escaped for a terminal) if it is in the head or the tail.
    pub fn push(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let line = clip(line);
        if self.head.len() < HEAD {
            self.head.push(line);
            return;
        }
        if self.tail.len() == TAIL {
            self.tail.pop_front();
            self.skipped += 1;
        }
        self.tail.push_back(line);
    }

    /// `; its stderr said: a | b | … (3 lines) … | y | z`, or nothing when it said nothing.
    pub fn said(&self) -> String {
        if self.head.is_empty() {
            return String::new();
        }
        let mut parts: Vec<String> = self.head.clone();
        if self.skipped > 0 {
            parts.push(format!(
                "… ({} line{}) …",
                self.skipped,
                if self.skipped == 1 { "" } else { "s" }
            ));
        }
        parts.extend(self.tail.iter().cloned());
        format!("; its stderr said: {}", parts.join(" | "))
    }
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_lines_and_the_last() {
        let mut e = StderrExcerpt::default();
        assert_eq!(e.said(), "");
        for i in 1..=20 {
            e.push(&format!("line {i}"));
            e.push("   ");
        }
        assert_eq!(
            e.said(),
            "; its stderr said: line 1 | line 2 | line 3 | line 4 | line 5 | line 6 | … (8 lines) … | line 15 | line 16 | line 17 | line 18 | line 19 | line 20"
        );
        let mut short = StderrExcerpt::default();
        short.push("only");
        short.push(&"x".repeat(1000));
        let said = short.said();
        assert!(said.starts_with("; its stderr said: only | xxx"), "{said}");
        assert!(said.ends_with("x…"), "{said}");
        assert_eq!(said.chars().filter(|c| *c == 'x').count(), MAX_LINE_CHARS);
    }
}
