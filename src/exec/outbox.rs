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

    /// Sends a frame, or queues what the socket cannot take now. Frames after a socket error are
    /// dropped: the runner is gone, and the session notices that on the read side.
    pub fn send(&mut self, frame: Vec<u8>) {
        if self.broken {
            return;
        }
        let frame = Bytes::from(frame);
        if !self.queue.is_empty() {
            self.push(frame);
            return;
        }
        match self.half.try_write(&frame) {
            Ok(n) if n == frame.len() => {}
            Ok(n) => self.push(frame.slice(n..)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => self.push(frame),
            Err(_) => self.broken = true,
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
        while let Some(front) = self.queue.front_mut() {
            match self.half.try_write(front) {
                Ok(n) if n == front.len() => {
                    self.queued -= n as u64;
                    self.queue.pop_front();
                }
                Ok(n) => {
                    self.queued -= n as u64;
                    let rest = front.slice(n..);
                    *front = rest;
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
