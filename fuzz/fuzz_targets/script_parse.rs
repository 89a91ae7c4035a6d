//! The host's parse path on arbitrary scripts: the nesting guard, the static analysis of
//! `mcp.X.Y` references and the TypeScript strip must return (a value or a structured error)
//! for every input, never panic, hang or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_sandbox::script::transpile::{to_javascript, Language};

fuzz_target!(|data: &[u8]| {
    let Ok(code) = std::str::from_utf8(data) else {
        return;
    };
    let _ = mcp_sandbox::script::analysis::tool_references(code);
    let _ = to_javascript(code, Language::Typescript);
    let _ = to_javascript(code, Language::Javascript);
});
