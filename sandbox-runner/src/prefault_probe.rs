//! Which of the zygote's pages an execution actually touches, learned once per zygote.
//!
//! [`Prefault::populate`] used to copy every private writable page of the zygote and map every
//! page of its code into each pooled runner: measured with `examples/prefault_cost.rs`, about
//! 400 µs of CPU for the data and 270 µs more for the code, per runner — more than the whole
//! pooled execution it speeds up, and on a 2-core machine the refill competes with the gateway
//! for the cores. A `return 1+1` touches a small part of that. So the zygote, before its
//! lockdown (while `/proc` is readable), forks one probe that runs such a script through the
//! engine, reads its own `/proc/self/pagemap` and reports the pages it made private (data) or
//! mapped (code); every pooled runner then populates only those. A page an execution touches
//! outside that set is faulted in on first use, as without prefaulting. Any failure of the probe
//! (no fork, no pagemap, a probe that does not answer within [`PROBE_TIMEOUT_MS`]) keeps the
//! populate-everything behaviour.

use crate::engine::channel::Channel;
use crate::engine::{Engine, ExecuteRequest};
use crate::prefault::Prefault;
use crate::protocol::RunnerLimits;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;

/// How long the zygote waits for the probe's answer.
pub const PROBE_TIMEOUT_MS: i32 = 2_000;
/// At most this many page ranges are accepted from the probe (more is treated as a failure).
const MAX_RANGES: usize = 16_384;
const PAGE: usize = 4096;
/// `/proc/self/pagemap` bits (Documentation/admin-guide/mm/pagemap.rst).
const PRESENT: u64 = 1 << 63;
const EXCLUSIVE: u64 = 1 << 56;

/// The script the probe runs: the prelude, one expression, the result's encoding.
const PROBE_SCRIPT: &str = "const xs = [1, 2, 3].map((x) => x * 2); return { sum: xs.reduce((a, b) => a + b, 0), text: JSON.stringify(xs) };";

/// Page-aligned ranges an execution touched: data pages it copied, code pages it mapped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    pub data: Vec<(usize, usize)>,
    pub code: Vec<(usize, usize)>,
}

/// Runs the probe in a forked child and returns what it touched, or `None` on any failure.
/// Call only in a single-threaded process, before lockdown.
pub fn learn(engine: &Engine, prefault: &Prefault) -> Option<Touched> {
    let (mut ours, theirs) = UnixStream::pair().ok()?;
    let (channel_ours, channel_theirs) = UnixStream::pair().ok()?;
    // SAFETY: fork in a single-threaded process (the zygote before it serves any request): the
    // child continues on a copy of this thread with consistent allocator state, and exits
    // with `_exit` without returning into the caller.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return None;
    }
    if pid == 0 {
        drop(ours);
        drop(channel_ours);
        let touched = probe(engine, prefault, channel_theirs);
        let mut out = theirs;
        let _ = out.write_all(&encode(touched.as_ref()));
        // SAFETY: leaves the probe at once, without running the zygote's destructors.
        unsafe { libc::_exit(0) };
    }
    drop(theirs);
    drop(channel_theirs);
    let answer = read_bounded(&mut ours);
    // SAFETY: `pid` is our own child; kill and waitpid touch no memory of ours.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    drop(channel_ours);
    decode(&answer?)
}

/// In the probe: runs [`PROBE_SCRIPT`] and reads which pages that made private or mapped.
fn probe(engine: &Engine, prefault: &Prefault, sock: UnixStream) -> Option<Touched> {
    let channel = Channel::new(OwnedFd::from(sock), 1 << 20);
    let req = ExecuteRequest {
        code: PROBE_SCRIPT.into(),
        tools: Vec::new(),
        unavailable: Vec::new(),
        context: serde_json::Map::new(),
        limits: RunnerLimits::default(),
        determinism: None,
    };
    engine.execute(channel, req).ok()?;
    let pagemap = std::fs::File::open("/proc/self/pagemap").ok()?;
    let (data_ranges, code_ranges) = prefault.ranges_to_probe();
    Some(Touched {
        data: pages_with(&pagemap, &data_ranges, PRESENT | EXCLUSIVE)?,
        code: pages_with(&pagemap, &code_ranges, PRESENT)?,
    })
}

/// The pages of `ranges` whose pagemap entry has all of `bits`, coalesced into ranges.
fn pages_with(
    pagemap: &std::fs::File,
    ranges: &[(usize, usize)],
    bits: u64,
) -> Option<Vec<(usize, usize)>> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &(start, end) in ranges {
        let (start, end) = (start / PAGE * PAGE, end.div_ceil(PAGE) * PAGE);
        let pages = (end - start) / PAGE;
        let mut entries = vec![0u8; pages * 8];
        pagemap
            .read_exact_at(&mut entries, (start / PAGE * 8) as u64)
            .ok()?;
        for (i, e) in entries.chunks_exact(8).enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(e);
            if u64::from_ne_bytes(word) & bits != bits {
                continue;
            }
            let page = start + i * PAGE;
            match out.last_mut() {
                Some(last) if last.1 == page => last.1 = page + PAGE,
                _ => out.push((page, page + PAGE)),
            }
        }
    }
    Some(out)
}

/// `[data count][code count]` then `(start, end)` pairs, all little-endian u64.
fn encode(touched: Option<&Touched>) -> Vec<u8> {
    let Some(t) = touched else {
        return Vec::new();
    };
    let mut b = Vec::with_capacity(16 + 16 * (t.data.len() + t.code.len()));
    for n in [t.data.len(), t.code.len()] {
        b.extend_from_slice(&(n as u64).to_le_bytes());
    }
    for &(s, e) in t.data.iter().chain(&t.code) {
        b.extend_from_slice(&(s as u64).to_le_bytes());
        b.extend_from_slice(&(e as u64).to_le_bytes());
    }
    b
}

fn decode(b: &[u8]) -> Option<Touched> {
    let words: Vec<u64> = b
        .chunks_exact(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    let (&nd, &nc) = (words.first()?, words.get(1)?);
    let (nd, nc) = (usize::try_from(nd).ok()?, usize::try_from(nc).ok()?);
    if nd.saturating_add(nc) > MAX_RANGES || words.len() != 2 + 2 * (nd + nc) {
        return None;
    }
    let pairs: Vec<(usize, usize)> = words[2..]
        .chunks_exact(2)
        .map(|p| (p[0] as usize, p[1] as usize))
        .collect();
    let (data, code) = pairs.split_at(nd);
    Some(Touched {
        data: data.to_vec(),
        code: code.to_vec(),
    })
}

/// Reads the probe's whole answer, waiting at most [`PROBE_TIMEOUT_MS`] for each part of it
/// and refusing more than the largest valid answer.
fn read_bounded(sock: &mut UnixStream) -> Option<Vec<u8>> {
    let limit = 16 + 16 * MAX_RANGES;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let mut fd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `fd` is a valid pollfd for the call's duration.
        if unsafe { libc::poll(&mut fd, 1, PROBE_TIMEOUT_MS) } != 1 {
            return None;
        }
        match sock.read(&mut buf) {
            Ok(0) => return (!out.is_empty()).then_some(out),
            Ok(n) if out.len() + n <= limit => out.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_bad_ones_are_refused() {
        let t = Touched {
            data: vec![(0x1000, 0x3000), (0x8000, 0x9000)],
            code: vec![(0x40_0000, 0x40_1000)],
        };
        assert_eq!(decode(&encode(Some(&t))), Some(t));
        assert_eq!(decode(&encode(None)), None);
        assert_eq!(decode(&[1, 2, 3]), None);
        let mut lying = encode(Some(&Touched::default()));
        lying[0] = 5; // says 5 data ranges, sends none
        assert_eq!(decode(&lying), None);
    }

    /// In a real forked probe (this test process stands in for the zygote): the probe answers,
    /// touches some data and code, and far less than all of it.
    #[test]
    fn a_probe_learns_a_part_of_the_pages() {
        let engine = Engine::new().unwrap();
        let prefault = Prefault::capture();
        let touched = learn(&engine, &prefault).expect("the probe answered");
        let size = |r: &[(usize, usize)]| r.iter().map(|(s, e)| e - s).sum::<usize>();
        let (data, code) = prefault.ranges_to_probe();
        assert!(
            size(&touched.data) > 0 && size(&touched.code) > 0,
            "{touched:?}"
        );
        assert!(size(&touched.data) < size(&data), "data {touched:?}");
        assert!(size(&touched.code) < size(&code), "code {touched:?}");
    }
}
