//! The stdio front's standard input and output, read and written by the runtime's own event
//! loop when they are a pipe or a Unix socket (what MCP clients give a server they start: Python
//! and Rust clients pipes, Node.js socket pairs). Tokio's `stdin()`/`stdout()` hand every read
//! and write to a blocking thread and back, two thread wake-ups per message each way; here the
//! worker that waits on the descriptor reads it itself (issue 33: ~0.1 ms of each answer).
//!
//! Anything else (a terminal, a file, `/dev/null`) keeps Tokio's blocking handles: a terminal
//! shares its file description with the shell, and making it non-blocking would change how the
//! shell reads it after we exit. For a pipe or a socket the description is the one the client
//! made for us; it is switched to non-blocking mode for the life of the process.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};

/// A reader of standard input.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
/// A writer of standard output.
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// What a descriptor is, as far as choosing how to read it goes.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Pipe,
    UnixSocket,
    Other,
}

fn kind(fd: BorrowedFd<'_>) -> Kind {
    let Ok(stat) = nix::sys::stat::fstat(fd) else {
        return Kind::Other;
    };
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFIFO => Kind::Pipe,
        libc::S_IFSOCK => {
            use nix::sys::socket::{getsockname, AddressFamily, SockaddrLike, SockaddrStorage};
            match getsockname::<SockaddrStorage>(fd.as_raw_fd()) {
                Ok(a) if a.family() == Some(AddressFamily::Unix) => Kind::UnixSocket,
                _ => Kind::Other,
            }
        }
        _ => Kind::Other,
    }
}

/// A private descriptor for the same open file as `fd` (closing it leaves `fd` open).
fn duplicate(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    fd.try_clone_to_owned().ok()
}

/// Standard input, read by the event loop when it is a pipe or a Unix socket.
pub fn input() -> Input {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let evented: Option<Input> = match kind(fd) {
        Kind::Pipe => duplicate(fd)
            .and_then(|d| tokio::net::unix::pipe::Receiver::from_owned_fd(d).ok())
            .map(|r| Box::pin(r) as Input),
        Kind::UnixSocket => duplicate(fd)
            .and_then(unix_stream)
            .map(|s| Box::pin(s) as Input),
        Kind::Other => None,
    };
    evented.unwrap_or_else(|| Box::pin(tokio::io::stdin()))
}

/// Standard output, written by the event loop when it is a pipe or a Unix socket.
pub fn output() -> Output {
    let stdout = std::io::stdout();
    let fd = stdout.as_fd();
    let evented: Option<Output> = match kind(fd) {
        Kind::Pipe => duplicate(fd)
            .and_then(|d| tokio::net::unix::pipe::Sender::from_owned_fd(d).ok())
            .map(|w| Box::pin(w) as Output),
        Kind::UnixSocket => duplicate(fd)
            .and_then(unix_stream)
            .map(|s| Box::pin(s) as Output),
        Kind::Other => None,
    };
    evented.unwrap_or_else(|| Box::pin(tokio::io::stdout()))
}

fn unix_stream(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(std).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_unix_sockets_are_told_apart_from_files() {
        let (r, w) = nix::unistd::pipe().unwrap();
        assert_eq!(kind(r.as_fd()), Kind::Pipe);
        assert_eq!(kind(w.as_fd()), Kind::Pipe);
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(kind(a.as_fd()), Kind::UnixSocket);
        let f = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(kind(f.as_fd()), Kind::Other);
        let t = tempfile::tempfile().unwrap();
        assert_eq!(kind(t.as_fd()), Kind::Other);
    }
}
