//! `cargo bench --bench sandbox -- gateway` (or `audit`, `state`, `policy`, `redaction`,
//! `telemetry`, `ui`, `pg`, `python`, `servers`): measures only those parts of the benchmark and prints their keys (not
//! written to target/bench).

use super::{audit, gateway, pg, policy, redaction, release_bin, state, telemetry, ui};
use mcp_sandbox::RunnerCommand;
use serde_json::Value;

/// The report of the parts named on the command line, or `None` when none is named.
pub fn run(rt: &tokio::runtime::Runtime) -> Option<Value> {
    let only = |name: &str| std::env::args().skip(1).any(|a| a == name);
    let parts = [
        "gateway",
        "audit",
        "state",
        "policy",
        "redaction",
        "telemetry",
        "ui",
        "pg",
        "python",
        "servers",
    ];
    if !parts.iter().any(|p| only(p)) {
        return None;
    }
    let (gw, au, st) = (only("gateway"), only("audit"), only("state"));
    let report = rt
        .block_on(async move {
            tokio::spawn(async move {
                let mut out = serde_json::Map::new();
                if gw {
                    // The library's pooled execution in the same run, for the gateway's share.
                    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
                    let pooled = super::pooled_p50(&runner).await;
                    out.insert("pooled_exec_p50_ms".into(), serde_json::json!(pooled));
                    let bin = release_bin("mcp-sandbox");
                    if let Value::Object(g) = gateway::bench(&bin, Some(pooled), None).await {
                        out.extend(g);
                    }
                }
                if au {
                    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
                    if let Value::Object(a) = audit::bench(&runner).await {
                        out.extend(a);
                    }
                }
                if only("python") {
                    if let Value::Object(a) = super::python::bench().await {
                        out.extend(a);
                    }
                }
                if only("policy") {
                    if let Value::Object(a) = policy::bench() {
                        out.extend(a);
                    }
                }
                if only("redaction") {
                    if let Value::Object(a) = redaction::bench().await {
                        out.extend(a);
                    }
                }
                if only("telemetry") {
                    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
                    if let Value::Object(a) = telemetry::bench(&runner).await {
                        out.extend(a);
                    }
                }
                if only("ui") {
                    if let Value::Object(a) = ui::bench(&release_bin("mcp-sandbox")).await {
                        out.extend(a);
                    }
                }
                if only("pg") {
                    if let Value::Object(a) = pg::bench().await {
                        out.extend(a);
                    }
                }
                if only("servers") {
                    if let Value::Object(a) = super::servers::bench().await {
                        out.extend(a);
                    }
                }
                if st {
                    let runner = RunnerCommand::new(release_bin("sandbox-runner"));
                    if let Value::Object(a) = state::bench(&runner).await {
                        out.extend(a);
                    }
                }
                Value::Object(out)
            })
            .await
        })
        .expect("benchmark task");
    Some(report)
}
