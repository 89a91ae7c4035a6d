use super::{
    finish_frame as finish, json_depth, FrameError, WireError, LENGTH_PREFIX, MAX_VALUE_DEPTH,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// `rpc_call` with `args_json` (already valid JSON) spliced in.
pub fn encode_rpc_call(
    id: u64,
    server: &str,
    tool: &str,
    args_json: &str,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    buf.clear();
    buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
    buf.extend_from_slice(br#"{"type":"rpc_call","id":"#);
    buf.extend_from_slice(id.to_string().as_bytes());
    buf.extend_from_slice(br#","server":"#);
    serde_json::to_writer(&mut *buf, server)?;
    buf.extend_from_slice(br#","tool":"#);
    serde_json::to_writer(&mut *buf, tool)?;
    check_depth(args_json.as_bytes())?;
    buf.extend_from_slice(br#","args":"#);
    buf.extend_from_slice(args_json.as_bytes());
    buf.push(b'}');
    finish(buf, max)
}

/// A successful `execution_complete` with `result_json` (already valid JSON) spliced in.
pub fn encode_complete_ok(
    result_json: &str,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    check_depth(result_json.as_bytes())?;
    buf.clear();
    buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
    buf.extend_from_slice(br#"{"type":"execution_complete","success":true,"result":"#);
    buf.extend_from_slice(result_json.as_bytes());
    buf.push(b'}');
    finish(buf, max)
}

/// A successful `rpc_result`, serializing `result` in place (no copy of the value).
pub fn encode_rpc_result_ok(
    id: u64,
    result: &serde_json::Value,
    max: usize,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    buf.clear();
    buf.extend_from_slice(&[0u8; LENGTH_PREFIX]);
    buf.extend_from_slice(br#"{"type":"rpc_result","id":"#);
    buf.extend_from_slice(id.to_string().as_bytes());
    buf.extend_from_slice(br#","success":true,"result":"#);
    let start = buf.len();
    serde_json::to_writer(&mut *buf, result)?;
    if let Err(e) = check_depth(&buf[start..]) {
        buf.clear();
        return Err(e);
    }
    buf.push(b'}');
    finish(buf, max)
}

/// `TooDeep` when a value nests deeper than [`MAX_VALUE_DEPTH`].
pub fn check_depth(json: &[u8]) -> Result<(), FrameError> {
    let depth = json_depth(json);
    if depth > MAX_VALUE_DEPTH {
        return Err(FrameError::TooDeep {
            depth,
            max: MAX_VALUE_DEPTH,
        });
    }
    Ok(())
}

/// An `rpc_result` as the runner reads it: the result stays raw JSON text for QuickJS to parse.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcResultRef<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub id: u64,
    pub success: bool,
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    #[serde(default)]
    pub error: Option<WireError>,
}

/// The `wake` frame, as the host's serializer writes it.
pub const WAKE: &[u8] = br#"{"type":"wake"}"#;

/// Decodes an `rpc_result` payload; any other frame type is an error.
pub fn decode_rpc_result(payload: &[u8]) -> Result<RpcResultRef<'_>, FrameError> {
    let r: RpcResultRef<'_> = serde_json::from_slice(payload)?;
    if r.kind != "rpc_result" {
        return Err(FrameError::Invalid(serde::de::Error::custom(format!(
            "expected rpc_result, got {}",
            r.kind
        ))));
    }
    Ok(r)
}
