//! The uid layer is reported as the kernel shows it: a runner started by a non-root user with no
//! subordinate id range keeps that user's uid, so the layer is "unavailable" with the reason (and
//! how to get it), and an execution that requires it is refused. The runner is started as uid
//! 1000 through `setpriv` (tests/isolation_non_root.rs covers a user with a range).

use crate::common;
use common::*;
use mcp_sandbox::{ExecRequest, Limits, RunnerCommand};

fn as_uid_1000() -> Option<RunnerCommand> {
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    // SAFETY: geteuid has no preconditions.
    if !setpriv.exists() || unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root and /usr/bin/setpriv to start a runner as uid 1000");
        return None;
    }
    let mut cmd = RunnerCommand::new(setpriv.to_path_buf());
    cmd.prefix_args = ["--reuid=1000", "--regid=1000", "--clear-groups"]
        .map(String::from)
        .to_vec();
    cmd.prefix_args
        .push(bin("sandbox-runner").display().to_string());
    Some(cmd)
}

#[tokio::test]
async fn a_non_root_runner_reports_the_uid_layer_unavailable() {
    let Some(cmd) = as_uid_1000() else { return };
    let ranges = std::fs::read_to_string("/etc/subuid").unwrap_or_default();
    let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(1000))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default();
    if ranges
        .lines()
        .any(|l| l.starts_with("1000:") || (!name.is_empty() && l.starts_with(&format!("{name}:"))))
    {
        eprintln!("skipped: uid 1000 has a subordinate range here, so its runner is mapped");
        return;
    }
    let report = mcp_sandbox::front::cli::check::check(&cmd, &["uid".to_string()])
        .await
        .expect("check");
    let uid = &report.layers["uid"];
    assert!(uid.starts_with("unavailable: "), "{uid}");
    assert!(uid.contains("the host runs as uid 1000"), "{uid}");
    assert!(uid.contains("which has no range in /etc/subuid"), "{uid}");
    assert!(uid.contains("usermod --add-subuids"), "{uid}");
    assert!(
        report.uid.as_deref().unwrap_or("").starts_with("1000"),
        "{report:?}"
    );
    assert!(
        report.missing.iter().any(|m| m.starts_with("uid")),
        "{report:?}"
    );
    assert!(!report.ok);

    // Required: refused, naming the layer. Not required: the runner still works as uid 1000.
    let run = |require: Vec<String>| {
        let cmd = cmd.clone();
        async move {
            mcp_sandbox::execute(
                &local_catalog(),
                &cmd,
                ExecRequest {
                    request: mcp_sandbox::context::RequestContext::default()
                        .with_limits(Limits::default()),
                    code: "return 1 + 1".into(),
                    require_layers: require,
                    ..Default::default()
                },
            )
            .await
        }
    };
    let o = run(vec!["uid".into()]).await;
    let e = o.error.expect("refused");
    assert_eq!(e.code.as_str(), "SANDBOX_UNAVAILABLE", "{e:?}");
    assert!(e.message.contains("uid (unavailable"), "{}", e.message);
    let o = run(vec![]).await;
    assert!(o.success, "{o:?}");
    assert_eq!(o.result, 2);
}
