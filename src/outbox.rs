//! Frames to a runner, written without ever blocking the session: a frame is written at once with
//! one non-blocking `write` when nothing is queued (the common case, and the fast path), and
//! whatever the socket does not take waits in a queue flushed when the socket is writable. A
//! runner that stops reading therefore can never stop the host from reading its frames or
//! noticing timeouts and crashes.

use bytes::Bytes;
use std::collections::VecDeque;
use std::io::ErrorKind;
use tokio::net::unix::OwnedWriteHalf;

pub struct Outbox {
    half: OwnedWriteHalf,
    queue: VecDeque<Bytes>,
    broken: bool,
}

impl Outbox {
    pub fn new(half: OwnedWriteHalf) -> Self {
        Outbox {
            half,
            queue: VecDeque::new(),
            broken: false,
        }
    }

    /// Sends a frame, or queues what the socket cannot take now. Frames after a socket error are
    /// dropped: the runner is gone, and the session notices that on the read side.
    pub fn send(&mut self, frame: Vec<u8>) {
        if self.broken {
            return;
        }
        let frame = Bytes::from(frame);
        if !self.queue.is_empty() {
            self.queue.push_back(frame);
            return;
        }
        match self.half.try_write(&frame) {
            Ok(n) if n == frame.len() => {}
            Ok(n) => self.queue.push_back(frame.slice(n..)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => self.queue.push_back(frame),
            Err(_) => self.broken = true,
        }
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
        while let Some(front) = self.queue.front_mut() {
            match self.half.try_write(front) {
                Ok(n) if n == front.len() => {
                    self.queue.pop_front();
                }
                Ok(n) => {
                    let rest = front.slice(n..);
                    *front = rest;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.broken = true;
                    self.queue.clear();
                    return;
                }
            }
        }
    }
}
