//! The zygote's control protocol (host ⇄ `sandbox-runner --zygote`), shared by both sides.
//!
//! The zygote's control socket is its fd 3 (a `socketpair` end, like a runner's socket). After
//! its shared lockdown it writes [`hello`] (8 bytes). Then, for each runner, the host writes one
//! [`ForkRequest`] ([`REQUEST_LEN`] bytes) carrying the runner's end of a fresh socketpair as
//! `SCM_RIGHTS`; the zygote forks (`CLONE_PARENT`: the runner is the host's child) and answers
//! with 8 bytes, the runner's pid (> 0) or `-errno` when the fork failed. Integers are
//! little-endian (both ends run on the same machine). Fixed sizes: nothing to parse, nothing to
//! bound.

use crate::protocol::PROTOCOL_VERSION;

/// Bytes of one fork request.
pub const REQUEST_LEN: usize = 25;
/// Bytes of the hello and of each reply.
pub const REPLY_LEN: usize = 8;

/// The hello a zygote writes once its shared layers are applied: `"ZYGOTE"` and the protocol.
pub fn hello() -> [u8; REPLY_LEN] {
    let mut h = *b"ZYGOTE\0\0";
    h[6..8].copy_from_slice(&(PROTOCOL_VERSION as u16).to_le_bytes());
    h
}

/// The per-runner backstops the zygote applies to the forked runner (its rlimits and frame
/// limit); everything else the runner gets from the zygote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkRequest {
    pub address_space_bytes: u64,
    pub cpu_seconds: u64,
    pub max_frame: u64,
    /// The runner will wait in a pool: before it says `ready` it also maps the code it will
    /// run (see `prefault`), which moves ~40 page faults of its first execution off the hot
    /// path at the price of a slower start. A runner needed at once skips it.
    pub pooled: bool,
}

impl ForkRequest {
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[0..8].copy_from_slice(&self.address_space_bytes.to_le_bytes());
        b[8..16].copy_from_slice(&self.cpu_seconds.to_le_bytes());
        b[16..24].copy_from_slice(&self.max_frame.to_le_bytes());
        b[24] = u8::from(self.pooled);
        b
    }

    pub fn decode(b: &[u8; REQUEST_LEN]) -> Self {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        ForkRequest {
            address_space_bytes: word(0),
            cpu_seconds: word(8),
            max_frame: word(16),
            pooled: b[24] != 0,
        }
    }
}

/// A reply: the pid, or the errno of the failed fork.
pub fn encode_reply(pid_or_neg_errno: i64) -> [u8; REPLY_LEN] {
    pid_or_neg_errno.to_le_bytes()
}

pub fn decode_reply(b: &[u8; REPLY_LEN]) -> Result<u32, i32> {
    let v = i64::from_le_bytes(*b);
    if v > 0 {
        u32::try_from(v).map_err(|_| libc_einval())
    } else {
        Err(i32::try_from(-v).unwrap_or(libc_einval()))
    }
}

/// EINVAL without depending on libc in this always-built module.
const fn libc_einval() -> i32 {
    22
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let r = ForkRequest {
            address_space_bytes: 1 << 30,
            cpu_seconds: 11,
            max_frame: 16 << 20,
            pooled: true,
        };
        assert_eq!(ForkRequest::decode(&r.encode()), r);
        assert_eq!(decode_reply(&encode_reply(4242)), Ok(4242));
        assert_eq!(decode_reply(&encode_reply(-11)), Err(11));
        assert_eq!(decode_reply(&encode_reply(0)), Err(0));
        assert_eq!(&hello()[..6], b"ZYGOTE");
    }
}
