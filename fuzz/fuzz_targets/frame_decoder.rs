//! The wire protocol's frame reader and message parsers on arbitrary bytes: every frame the
//! bytes contain is decoded as each message type the two sides read; nothing may panic, and a
//! message that decodes must encode again within the frame limit it came in.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_runner::protocol::{
    blocking::read_frame, decode_payload, encode_frame, raw::decode_rpc_result, HostMessage,
    RunnerMessage,
};

/// Small, so the fuzzer also explores the size check.
const MAX: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let mut cursor = std::io::Cursor::new(data);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while read_frame(&mut cursor, MAX, &mut buf).is_ok() {
        if let Ok(m) = decode_payload::<RunnerMessage>(&buf) {
            // Re-encoding may grow the text (escapes), so only the call must not panic.
            let _ = encode_frame(&m, usize::MAX, &mut out);
        }
        if let Ok(m) = decode_payload::<HostMessage>(&buf) {
            let _ = encode_frame(&m, usize::MAX, &mut out);
        }
        let _ = decode_rpc_result(&buf);
        let _ = decode_payload::<serde_json::Value>(&buf);
    }
});
