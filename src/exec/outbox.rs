//! Frames to a runner, written without ever blocking the session. Frames are held in a queue
//! and written together — with one vectored, non-blocking `write` — when the session has
//! nothing else ready to do ([`Outbox::flush`] is its last choice), or at once when
//! [`BATCH_BYTES`] are held. So results that are ready together reach the runner in one write
//! and wake it once. Whatever the socket does not take waits for it to become writable: a runner
//! that stops reading can never stop the host from reading its frames or noticing timeouts and
//! crashes.

use bytes::Bytes;
use std::collections::VecDeque;
use std::io::ErrorKind;
use tokio::net::unix::OwnedWriteHalf;

/// The queue is written at once, without waiting for the session to be idle, past this size.
pub const BATCH_BYTES: usize = 64 * 1024;
/// Frames handed to one vectored write at most.
const MAX_SLICES: usize = 64;

pub struct Outbox {
    half: OwnedWriteHalf,
    queue: VecDeque<Bytes>,
    /// Bytes in `queue`, for the session's back-pressure.
    queued: u64,
    broken: bool,
}

impl Outbox {
    pub fn new(half: OwnedWriteHalf) -> Self {
        Outbox {
            half,
            queue: VecDeque::new(),
            queued: 0,
            broken: false,
        }
    }

    /// Queues a frame; writes the queue now if it holds [`BATCH_BYTES`]. Frames after a socket
    /// error are dropped: the runner is gone, and the session notices that on the read side.
    pub fn send(&mut self, frame: Vec<u8>) {
        if self.broken {
            return;
        }
        self.push(Bytes::from(frame));
        if self.queued >= BATCH_BYTES as u64 {
            self.write_some();
        }
    }

    fn push(&mut self, frame: Bytes) {
        self.queued += frame.len() as u64;
        self.queue.push_back(frame);
    }

    /// Bytes waiting for the runner to read them.
    pub fn queued_bytes(&self) -> u64 {
        self.queued
    }

    /// Whether frames wait to be written.
    pub fn pending(&self) -> bool {
        !self.broken && !self.queue.is_empty()
    }

    /// Waits until the socket is writable and writes as much of the queue as it takes.
    pub async fn flush(&mut self) {
        if self.half.writable().await.is_err() {
            self.broken = true;
            return;
        }
        self.write_some();
    }

    /// Writes as much of the queue as the socket takes now, many frames per call.
    fn write_some(&mut self) {
        while !self.queue.is_empty() {
            let slices: Vec<std::io::IoSlice<'_>> = self
                .queue
                .iter()
                .take(MAX_SLICES)
                .map(|b| std::io::IoSlice::new(b))
                .collect();
            match self.half.try_write_vectored(&slices) {
                Ok(mut n) => {
                    self.queued -= n as u64;
                    while n > 0 {
                        let Some(front) = self.queue.front_mut() else {
                            break;
                        };
                        if n >= front.len() {
                            n -= front.len();
                            self.queue.pop_front();
                        } else {
                            let rest = front.slice(n..);
                            *front = rest;
                            n = 0;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.broken = true;
                    self.queue.clear();
                    self.queued = 0;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_ready_together_go_out_in_one_write() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
        let (_read, write) = ours.into_split();
        let mut outbox = Outbox::new(write);
        for f in [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()] {
            outbox.send(f);
        }
        // Held: nothing reaches the peer before the session flushes.
        let mut buf = [0u8; 64];
        assert_eq!(
            theirs.try_read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        assert_eq!(outbox.queued_bytes(), 11);
        outbox.flush().await;
        assert!(!outbox.pending());
        use tokio::io::AsyncReadExt;
        let n = theirs.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"onetwothree");
    }

    #[tokio::test]
    async fn a_full_batch_is_written_without_waiting_for_a_flush() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
        let (_read, write) = ours.into_split();
        let mut outbox = Outbox::new(write);
        outbox.send(vec![1u8; BATCH_BYTES]);
        assert_eq!(outbox.queued_bytes(), 0);
        let mut buf = vec![0u8; BATCH_BYTES];
        use tokio::io::AsyncReadExt;
        theirs.read_exact(&mut buf).await.unwrap();
        assert!(buf.iter().all(|b| *b == 1));
    }
}
