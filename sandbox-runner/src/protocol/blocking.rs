use super::{FrameError, LENGTH_PREFIX};
use std::io::{ErrorKind, Read, Write};

/// Reads one frame's payload into `buf` (cleared first). `Err(Closed)` on a clean EOF before
/// the length prefix.
pub fn read_frame<R: Read>(r: &mut R, max: usize, buf: &mut Vec<u8>) -> Result<(), FrameError> {
    let mut prefix = [0u8; LENGTH_PREFIX];
    match r.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(prefix) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    buf.clear();
    buf.resize(len, 0);
    r.read_exact(buf)?;
    Ok(())
}

/// Writes an already encoded frame (see [`super::encode_frame`]) in one call where possible.
pub fn write_frame<W: Write>(w: &mut W, frame: &[u8]) -> Result<(), FrameError> {
    w.write_all(frame)?;
    Ok(())
}

/// How much a [`FrameReader`] asks the socket for at once (more when a frame needs it).
pub const READ_AHEAD: usize = 64 * 1024;

/// Frames from a blocking reader with read-ahead: frames the peer wrote together (results
/// that were ready at the same time) are read with one `read` call instead of two per
/// frame. Holds at most one frame (bounded by `max`) plus [`READ_AHEAD`] bytes.
#[derive(Debug, Default)]
pub struct FrameReader {
    /// Read buffer; `buf[start..end]` holds bytes read but not yet handed out.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameReader {
    /// The next frame's payload. `Err(Closed)` on a clean EOF between frames; an EOF inside
    /// a frame is an I/O error; a length prefix over `max` is `TooLarge` before any of the
    /// payload is read.
    pub fn next<R: Read>(&mut self, r: &mut R, max: usize) -> Result<&[u8], FrameError> {
        loop {
            let avail = &self.buf[self.start..self.end];
            let mut needed = LENGTH_PREFIX;
            if let Some(prefix) = avail.get(..LENGTH_PREFIX) {
                let mut bytes = [0u8; LENGTH_PREFIX];
                bytes.copy_from_slice(prefix);
                let len = u32::from_be_bytes(bytes) as usize;
                if len > max {
                    return Err(FrameError::TooLarge { len, max });
                }
                needed = LENGTH_PREFIX + len;
                if avail.len() >= needed {
                    let from = self.start + LENGTH_PREFIX;
                    self.start = from + len;
                    return Ok(&self.buf[from..from + len]);
                }
            }
            // Not enough: move the unread bytes to the front, make room for at least what
            // is missing (zeroing only new capacity), and read.
            let have = self.end - self.start;
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.start = 0;
                self.end = have;
            }
            let room = have + (needed - have).max(READ_AHEAD);
            if self.buf.len() < room {
                self.buf.resize(room, 0);
            }
            let n = loop {
                match r.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                }
            };
            if n == 0 {
                if have == 0 {
                    return Err(FrameError::Closed);
                }
                return Err(std::io::Error::from(ErrorKind::UnexpectedEof).into());
            }
            self.end += n;
        }
    }
}
