//! The host session fed arbitrary runner bytes: `fake-runner replay <hex>` (tests/fixtures)
//! writes the input to the host's socket as the runner and exits, and the real `execute` must
//! end in a structured outcome without panicking or hanging. Inputs are capped so the hex fits
//! in one argument. Build the fixtures first: `cargo build -p mcp-sandbox-fixtures`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_sandbox::{Catalog, ExecRequest, InProcessServer, Limits, RunnerCommand};
use std::sync::OnceLock;

const MAX_INPUT: usize = 32 * 1024;

struct World {
    rt: tokio::runtime::Runtime,
    catalog: Catalog,
    runner: RunnerCommand,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        // SAFETY: sets a signal disposition once, before the host writes to any socket. A Rust
        // binary's runtime ignores SIGPIPE before `main`; libFuzzer's `main` does not, and a
        // write to a runner that has already exited must be an EPIPE error the session handles
        // (the host binary's case), not a kill of the whole fuzzer.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let program = std::env::var_os("FAKE_RUNNER")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                concat!(env!("CARGO_MANIFEST_DIR"), "/../target/debug/fake-runner").into()
            });
        assert!(
            program.exists(),
            "{} is missing: cargo build -p mcp-sandbox-fixtures",
            program.display()
        );
        let mut runner = RunnerCommand::new(program);
        runner.prefix_args = vec!["replay".into()];
        let mut catalog = Catalog::new();
        let local = InProcessServer::new("fixture").tool(
            "echo",
            "Returns its arguments",
            serde_json::json!({"type": "object"}),
            |args| async move { Ok::<_, mcp_sandbox::ExecError>(args) },
        );
        catalog.add(std::sync::Arc::new(local)).expect("catalog");
        World {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            catalog,
            runner,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_INPUT {
        return;
    }
    let w = world();
    let mut runner = w.runner.clone();
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    runner.prefix_args.push(hex);
    let outcome = w.rt.block_on(mcp_sandbox::execute(
        &w.catalog,
        &runner,
        ExecRequest {
            request: mcp_sandbox::context::RequestContext::default().with_limits(Limits {
                timeout_ms: 2_000,
                frame_bytes: 64 * 1024,
                ..Default::default()
            }),
            code: "1".into(),
            ..Default::default()
        },
    ));
    // Structured: a success, or an error with a code; every tool_start has its tool_end.
    assert!(outcome.success || outcome.error.is_some());
    let starts = outcome
        .traces
        .iter()
        .filter(|t| t.kind == mcp_sandbox::trace::TraceKind::ToolStart)
        .count();
    assert_eq!(starts * 2, outcome.traces.len(), "{outcome:?}");
});
