//! An uncaught error of any size ends as the script's own error, cut to a bound with a marker
//! giving the full size — never as a runner that cannot send its outcome (RUNNER_CRASHED).

use crate::common;
use common::*;

const MIB17: usize = 17 * 1024 * 1024;

#[tokio::test]
async fn a_17_mib_error_message_is_truncated_with_its_size() {
    let catalog = local_catalog();
    let cases = [
        // (script, code, the full size the marker names)
        (
            format!("throw new Error('x'.repeat({MIB17}))"),
            "RUNTIME_ERROR",
            "Error: ".len() + MIB17,
        ),
        (
            format!("throw 'y'.repeat({MIB17})"),
            "RUNTIME_ERROR",
            "Uncaught ".len() + MIB17,
        ),
        (
            // A code the host decides (TOOL_ERROR) that no call was answered with is the
            // script's own invention: a plain script error (see provenance in the security model).
            format!("const e = new Error('z'.repeat({MIB17})); e.code = 'TOOL_ERROR'; throw e"),
            "RUNTIME_ERROR",
            "Error: ".len() + MIB17,
        ),
    ];
    for (script, expected, full) in cases {
        let o = run(&catalog, &script).await;
        let e = o.error.as_ref().expect("must fail");
        assert_eq!(
            e.code.as_str(),
            expected,
            "{:?}",
            (&e.code, e.message.len(), e.signal)
        );
        assert!(
            e.message.len() < 70_000,
            "{expected}: {} bytes",
            e.message.len()
        );
        assert!(
            e.message
                .ends_with(&format!("… [truncated: {full} bytes in all]")),
            "{expected}: …{}",
            &e.message[e.message.len().saturating_sub(80)..]
        );
    }
    // The runner was fine: the next execution works.
    assert!(run(&catalog, "return 1").await.success);
}
