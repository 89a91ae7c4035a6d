//! Copy-on-write pre-faulting for runners forked from a zygote (narrowed to the pages an
//! execution touches by `prefault_probe`).
//!
//! A forked runner shares the zygote's heap copy-on-write. QuickJS writes all over it
//! (reference counts of intrinsics, shapes, atoms), so without help the first execution pays
//! one page fault per touched page — measured: the prelude call took ~130 µs in a forked runner
//! against ~50 µs in an exec'd one. [`Prefault::populate`] breaks the sharing of the zygote's
//! private writable memory with one `madvise(MADV_POPULATE_WRITE)` per mapping, in the child
//! before it locks itself down and says `ready`: the copies are made in bulk (no trap per page)
//! and, for a pooled runner, before the execution is handed to it. The price is memory: each
//! runner then owns a private copy of those pages (a few hundred KiB: see the benchmark's
//! `runner_pss_kib`).

/// The zygote's private writable mappings (its heap, the binary's and libraries' data), and its
/// code, as `/proc/self/maps` shows them before lockdown (afterwards `/proc` is out of reach).
#[derive(Debug, Clone, Default)]
pub struct Prefault {
    ranges: Vec<(usize, usize)>,
    /// Executable file mappings: a fork does not copy their page-table entries, so each code
    /// page a runner runs would be a (minor) fault.
    code: Vec<(usize, usize)>,
    /// Start of the `brk` heap, which may grow after the capture: populated up to `sbrk(0)`.
    heap_start: Option<usize>,
}

/// A range of addresses, `(start, end)`, end exclusive.
pub type Range = (usize, usize);

/// Mappings larger than this are reservations, not data: never populated.
const MAX_RANGE: usize = 16 * 1024 * 1024;

impl Prefault {
    /// Reads `/proc/self/maps`; an unreadable file gives an empty set (nothing is populated,
    /// runners fault pages in as they touch them).
    pub fn capture() -> Self {
        std::fs::read_to_string("/proc/self/maps")
            .map(|maps| Self::parse(&maps))
            .unwrap_or_default()
    }

    fn parse(maps: &str) -> Self {
        let mut out = Prefault::default();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
                continue;
            };
            let code = perms == "r-xp" && fields.nth(3).is_some_and(|f| f.starts_with('/'));
            // Private and writable (the stack too: the mapping spans only the pages the zygote
            // has grown it to, and the engine's recursion writes to them again).
            if !code && (!perms.starts_with("rw") || !perms.ends_with('p')) {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            if line.ends_with("[heap]") {
                out.heap_start = Some(start);
                continue;
            }
            if end > start && end - start <= MAX_RANGE {
                if code {
                    out.code.push((start, end));
                } else {
                    out.ranges.push((start, end));
                }
            }
        }
        out
    }

    /// In a forked child: makes private copies of the captured data pages now, and with
    /// `code` maps the code pages too. Failures (an old kernel without `MADV_POPULATE_*`, a
    /// range that is gone) are ignored: the pages are then faulted in on first use, as
    /// without this.
    pub fn populate(&self, code: bool) {
        for &(start, end) in &self.ranges {
            advise(start, end, libc::MADV_POPULATE_WRITE);
        }
        if code {
            for &(start, end) in &self.code {
                advise(start, end, libc::MADV_POPULATE_READ);
            }
        }
        if let Some(start) = self.heap_start {
            // SAFETY: sbrk(0) only reads the current program break.
            let end = unsafe { libc::sbrk(0) } as usize;
            if end > start && end - start <= MAX_RANGE {
                advise(start, end, libc::MADV_POPULATE_WRITE);
            }
        }
    }
}

impl Prefault {
    /// The ranges a probe should look at: the data ranges with the heap up to its current end,
    /// and the code ranges.
    pub fn ranges_to_probe(&self) -> (Vec<Range>, Vec<Range>) {
        let mut data = self.ranges.clone();
        if let Some(start) = self.heap_start {
            // SAFETY: sbrk(0) only reads the current program break.
            let end = unsafe { libc::sbrk(0) } as usize;
            if end > start && end - start <= MAX_RANGE {
                data.push((start, end));
            }
        }
        (data, self.code.clone())
    }

    /// Populates only what a probe saw an execution touch (see `prefault_probe`): its data
    /// pages and its code pages, nothing else; the heap is among the data ranges.
    pub fn narrowed(touched: crate::prefault_probe::Touched) -> Self {
        Prefault {
            ranges: touched.data,
            code: touched.code,
            heap_start: None,
        }
    }
}

fn advise(start: usize, end: usize, how: libc::c_int) {
    // SAFETY: MADV_POPULATE_{READ,WRITE} only fault in pages of a range this process has
    // mapped (writable, for WRITE); they change no contents, and an unmapped range fails with
    // ENOMEM.
    unsafe { libc::madvise(start as *mut libc::c_void, end - start, how) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_private_writable_data_and_the_heap_start() {
        let maps = "\
55aef630e000-55aef6310000 rw-p 00213000 fe:00 5376710 /usr/bin/sandbox-runner
55af203b9000-55af203fb000 rw-p 00000000 00:00 0 [heap]
7f90c1992000-7f90c1994000 rw-p 00000000 00:00 0
7f90c1994000-7f90c1995000 r--p 00000000 00:00 0
7f90c1995000-7f90c1996000 rw-s 00000000 00:01 7 /dev/zero
7f0000000000-7f0040000000 rw-p 00000000 00:00 0
7ffcad447000-7ffcad468000 rw-p 00000000 00:00 0 [stack]
";
        let w = Prefault::parse(maps);
        assert_eq!(
            w.ranges,
            vec![
                (0x55aef630e000, 0x55aef6310000),
                (0x7f90c1992000, 0x7f90c1994000),
                (0x7ffcad447000, 0x7ffcad468000)
            ]
        );
        assert_eq!(w.heap_start, Some(0x55af203b9000));
    }

    #[test]
    fn garbage_gives_nothing() {
        let w = Prefault::parse("not a maps file\n-\nzz-yy rw-p\n");
        assert!(w.ranges.is_empty() && w.heap_start.is_none());
    }
}
