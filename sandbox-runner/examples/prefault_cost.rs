//! Measures what prefaulting a forked runner costs and saves, CPU time in the child (not wall
//! time, so a loaded machine changes little): for no prefault, everything, and only what the
//! probe learned, the CPU of `populate` and of one execution after it, and that execution's
//! page faults. Run: `cargo run --release -p sandbox-runner --example prefault_cost`.
use sandbox_runner::engine::channel::Channel;
use sandbox_runner::engine::{Engine, ExecuteRequest};
use sandbox_runner::prefault::Prefault;
use sandbox_runner::protocol::RunnerLimits;
use std::os::unix::net::UnixStream;

fn cpu_us() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
}

fn minflt() -> f64 {
    // SAFETY: `ru` is a valid, writable rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_minflt as f64
}

fn main() {
    let engine = Engine::new().unwrap();
    let all = Prefault::capture();
    let learned = sandbox_runner::prefault_probe::learn(&engine, &all).expect("probe");
    let kib = |r: &[(usize, usize)]| r.iter().map(|(s, e)| e - s).sum::<usize>() / 1024;
    let (d, c) = all.ranges_to_probe();
    println!("all: data {} KiB, code {} KiB; learned: data {} KiB in {} ranges, code {} KiB in {} ranges", kib(&d), kib(&c), kib(&learned.data), learned.data.len(), kib(&learned.code), learned.code.len());
    let narrowed = Prefault::narrowed(learned);
    let script = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "return 1+1".into());
    for (name, p) in [
        ("none", None),
        ("all", Some(&all)),
        ("learned", Some(&narrowed)),
    ] {
        let n = 40;
        let mut sum = [0f64; 3];
        for _ in 0..n {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let mut fds = [0i32; 2];
            // SAFETY: a pipe for the child's three numbers; fork in this single-threaded example.
            unsafe { libc::pipe(fds.as_mut_ptr()) };
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                let a = cpu_us();
                if let Some(p) = p {
                    p.populate(true);
                }
                let b = cpu_us();
                let f = minflt();
                let req = ExecuteRequest {
                    code: script.clone(),
                    tools: vec![],
                    unavailable: vec![],
                    context: serde_json::Map::new(),
                    limits: RunnerLimits::default(),
                    determinism: None,
                };
                let _ = engine.execute(Channel::new(theirs, 1 << 20), req);
                let c = cpu_us();
                let v = [b - a, c - b, minflt() - f];
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                unsafe { libc::write(fds[1], bytes.as_ptr() as *const _, 24) };
                unsafe { libc::_exit(0) };
            }
            let mut b = [0u8; 24];
            unsafe { libc::read(fds[0], b.as_mut_ptr() as *mut _, 24) };
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1])
            };
            drop(ours);
            for i in 0..3 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&b[i * 8..i * 8 + 8]);
                sum[i] += f64::from_le_bytes(w);
            }
        }
        println!(
            "{name:8} populate {:6.0} us CPU | execution {:6.0} us CPU, {:5.0} faults",
            sum[0] / n as f64,
            sum[1] / n as f64,
            sum[2] / n as f64
        );
    }
}
