//! The runner's frames, decoded. `rpc_call` — one per tool call, the frame a busy script sends
//! most — is decoded straight into its fields; every other frame, and any `rpc_call` the direct
//! decode does not take, goes through [`RunnerMessage`]'s own decoder, so what the host accepts
//! and the errors it gives are unchanged. (`RunnerMessage` is internally tagged: serde buffers
//! the whole frame into its `Content` tree to find `type`, then decodes that tree a second time.)

use sandbox_runner::protocol::{
    decode_from_runner, json_depth, FrameError, RunnerMessage, INLINE_PARSE_DEPTH,
};
use serde::Deserialize;
use serde_json::Value;

/// How the runner writes every `rpc_call` (`protocol::raw::encode_rpc_call`).
const RPC_CALL_HEAD: &[u8] = br#"{"type":"rpc_call","#;

/// `RunnerMessage::RpcCall` with its tag as a field: the same fields, the same refusals of an
/// unknown or repeated one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RpcCallFrame {
    #[serde(rename = "type")]
    _kind: RpcCallTag,
    id: u64,
    server: String,
    tool: String,
    #[serde(default)]
    args: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum RpcCallTag {
    RpcCall,
}

/// One frame from the runner (the payload, without its length prefix).
pub(super) fn decode_runner_frame(payload: &[u8]) -> Result<RunnerMessage, FrameError> {
    // Deep frames go the general way (parsed on a thread with a large stack).
    if payload.starts_with(RPC_CALL_HEAD) && json_depth(payload) <= INLINE_PARSE_DEPTH {
        if let Ok(f) = serde_json::from_slice::<RpcCallFrame>(payload) {
            return Ok(RunnerMessage::RpcCall {
                id: f.id,
                server: f.server,
                tool: f.tool,
                args: f.args,
            });
        }
    }
    decode_from_runner(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(frame: &str) -> (String, String) {
        let fast = format!("{:?}", decode_runner_frame(frame.as_bytes()));
        let general = format!("{:?}", decode_from_runner(frame.as_bytes()));
        (fast, general)
    }

    #[test]
    fn rpc_calls_decode_as_the_general_decoder_does() {
        for frame in [
            r#"{"type":"rpc_call","id":7,"server":"s","tool":"t","args":{"i":1}}"#,
            r#"{"type":"rpc_call","id":1,"server":"s","tool":"t"}"#,
            r#"{"type":"rpc_call","id":18446744073709551615,"server":"é\u0041","tool":"t\n","args":{"a":[1,2.5,-3,null,true,"\ud83d\ude00"],"b":{"c":{}}}}"#,
            r#"{"type":"rpc_call","id":2,"server":"s","tool":"t","args":null} "#,
        ] {
            let (fast, general) = both(frame);
            assert!(fast.starts_with("Ok(RpcCall"), "{frame}: {fast}");
            assert_eq!(fast, general, "{frame}");
        }
    }

    #[test]
    fn frames_the_direct_decode_refuses_get_the_general_answer() {
        for frame in [
            // An unknown field, a repeated one, a missing one, a wrong type, trailing bytes.
            r#"{"type":"rpc_call","id":1,"server":"s","tool":"t","args":{},"extra":1}"#,
            r#"{"type":"rpc_call","id":1,"id":2,"server":"s","tool":"t"}"#,
            r#"{"type":"rpc_call","type":"log","id":1,"server":"s","tool":"t"}"#,
            r#"{"type":"rpc_call","id":1,"tool":"t"}"#,
            r#"{"type":"rpc_call","id":-1,"server":"s","tool":"t"}"#,
            r#"{"type":"rpc_call","id":1,"server":"s","tool":"t"}{}"#,
            r#"{"type":"rpc_call","id":1,"server":"s","tool":"t","args":{"#,
        ] {
            let (fast, general) = both(frame);
            assert!(fast.starts_with("Err("), "{frame}: {fast}");
            assert_eq!(fast, general, "{frame}");
        }
    }

    #[test]
    fn other_frames_and_deep_calls_take_the_general_way() {
        let deep = format!(
            r#"{{"type":"rpc_call","id":1,"server":"s","tool":"t","args":{}1{}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        let too_deep = format!(
            r#"{{"type":"rpc_call","id":1,"server":"s","tool":"t","args":{}1{}}}"#,
            "[".repeat(1100),
            "]".repeat(1100)
        );
        for frame in [
            r#"{"type":"log","level":"info","message":"m"}"#,
            r#"{"id":1,"type":"rpc_call","server":"s","tool":"t"}"#,
            r#"{"type":"sleep","ms":5}"#,
            deep.as_str(),
            too_deep.as_str(),
        ] {
            let (fast, general) = both(frame);
            assert_eq!(fast, general, "{frame}");
        }
        assert!(both(&deep).0.starts_with("Ok(RpcCall"));
        assert!(both(&too_deep).0.contains("TooDeep"));
    }
}
