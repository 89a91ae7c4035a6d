//! `run`'s approver: the question on the controlling terminal (`/dev/tty`, never stdin, which may
//! hold the script), the answer read from it. Without a terminal nobody can be asked: calls that
//! need approval are denied at once unless `--approve` matches them.
//!
//! The terminal is read without blocking a thread (`O_NONBLOCK` + tokio's `AsyncFd`), so a
//! question the execution no longer waits for (timeout, cancellation) is withdrawn at once.

use super::progress::ProgressLine;
use crate::context::policy::PreApproved;
use crate::gate::approval::{Answer, ApprovalError, Approvals, Approver, By, Question};
use crate::term::escape_lines;
use futures::future::BoxFuture;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// The controlling terminal.
const TTY: &str = "/dev/tty";
/// An answer line longer than this is refused (and asked again).
const MAX_ANSWER_BYTES: usize = 4096;
/// Unclear answers before the question counts as denied.
const MAX_TRIES: usize = 5;

const PROMPT: &str =
    "Approve? [y] once  [a] this tool for the rest of this execution  [n] deny (n <reason>): ";

/// The approvals of `run`: the terminal when there is one, else only `--approve`. `line`: the
/// progress line, erased while a question is on the terminal.
pub fn approvals(
    pre_approved: PreApproved,
    timeout: Duration,
    line: Option<Arc<ProgressLine>>,
) -> Approvals {
    match open_tty() {
        Ok(_) => Approvals::new(Arc::new(TtyApprover { line }), pre_approved, timeout),
        Err(_) => Approvals::nobody(
            By::Flag,
            "there is no terminal to ask on; pre-approve it with --approve {call} (a server:tool glob)",
            pre_approved,
        ),
    }
}

fn open_tty() -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(TTY)
}

/// Asks on the controlling terminal.
pub struct TtyApprover {
    /// `run`'s progress line, if it shows one.
    line: Option<Arc<ProgressLine>>,
}

/// The progress line paused while it lives (a question is on the terminal).
struct Paused(Option<Arc<ProgressLine>>);

impl Paused {
    fn new(line: Option<Arc<ProgressLine>>) -> Self {
        if let Some(l) = &line {
            l.pause();
        }
        Paused(line)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(l) = &self.0 {
            l.resume();
        }
    }
}

impl Approver for TtyApprover {
    fn by(&self) -> By {
        By::Tty
    }

    fn ask(&self, question: Question) -> BoxFuture<'static, Result<Answer, ApprovalError>> {
        let line = self.line.clone();
        Box::pin(async move {
            // Erased before the question is written, drawn again once it is answered.
            let _paused = Paused::new(line);
            let failed = |e: std::io::Error| ApprovalError::Failed(format!("the terminal: {e}"));
            let file = open_tty().map_err(failed)?;
            // SAFETY: `file` is an open descriptor owned by the `AsyncFd` until it drops; a
            // `File` always returns the same descriptor and nothing else closes it.
            let tty = unsafe { AsyncFd::register(file) }
                .map_err(|e| ApprovalError::Failed(format!("the terminal: {e}")))?;
            let text = format!("\nmcp-sandbox: {}\n", escape_lines(&question.text()));
            write_all(&tty, text.as_bytes()).await.map_err(failed)?;
            for _ in 0..MAX_TRIES {
                write_all(&tty, PROMPT.as_bytes()).await.map_err(failed)?;
                let line = read_line(&tty).await.map_err(failed)?;
                match parse(&line) {
                    Some(answer) => return Ok(answer),
                    None => {
                        write_all(
                            &tty,
                            b"Answer y, a, or n (optionally followed by a reason).\n",
                        )
                        .await
                        .map_err(failed)?;
                    }
                }
            }
            Ok(Answer::Deny(Some("no clear answer on the terminal".into())))
        })
    }
}

/// `y`/`yes` → once, `a`/`all`/`always` → the tool for the execution, `n`/`no` [reason] → deny.
pub fn parse(line: &str) -> Option<Answer> {
    let line = line.trim();
    let (word, rest) = match line.find(|c: char| c.is_whitespace() || c == ':') {
        Some(i) => (&line[..i], line[i + 1..].trim_start_matches(':').trim()),
        None => (line, ""),
    };
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Some(Answer::Once),
        "a" | "all" | "always" if rest.is_empty() => Some(Answer::ToolForExecution),
        "n" | "no" | "deny" => Some(Answer::Deny((!rest.is_empty()).then(|| rest.to_string()))),
        _ => None,
    }
}

async fn write_all(tty: &AsyncFd<File>, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let mut guard = tty.writable().await?;
        match guard.try_io(|f| f.get_ref().write(bytes)) {
            Ok(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => bytes = &bytes[n..],
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
    Ok(())
}

/// One line from the terminal (canonical mode delivers whole lines), bounded.
async fn read_line(tty: &AsyncFd<File>) -> std::io::Result<String> {
    let mut line = Vec::new();
    loop {
        let mut buf = [0u8; 512];
        let mut guard = tty.readable().await?;
        match guard.try_io(|f| f.get_ref().read(&mut buf)) {
            Ok(Ok(0)) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "closed before an answer",
                ))
            }
            Ok(Ok(n)) => {
                line.extend_from_slice(&buf[..n]);
                if let Some(end) = line.iter().position(|b| *b == b'\n') {
                    line.truncate(end);
                    return Ok(String::from_utf8_lossy(&line).into_owned());
                }
                if line.len() > MAX_ANSWER_BYTES {
                    line.clear();
                }
            }
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse("y"), Some(Answer::Once));
        assert_eq!(parse(" YES \r"), Some(Answer::Once));
        assert_eq!(parse("a"), Some(Answer::ToolForExecution));
        assert_eq!(parse("n"), Some(Answer::Deny(None)));
        assert_eq!(
            parse("n: too risky"),
            Some(Answer::Deny(Some("too risky".into())))
        );
        assert_eq!(
            parse("no not today"),
            Some(Answer::Deny(Some("not today".into())))
        );
        assert_eq!(parse("maybe"), None);
        assert_eq!(parse("y please"), None);
        assert_eq!(parse(""), None);
    }
}
