//! `sandbox-runner`: the locked-down process that runs one script for `mcp-sandbox`.
//!
//! The library part is shared with the host so both sides use the same wire types:
//! - [`protocol`] — frame codec and message types (always built; no heavy dependencies).
//! - `lockdown` — the OS isolation layers, applied before any user code is read (feature `lockdown`).
//! - `engine` — QuickJS, the `mcp` proxies and the runner's single-threaded loop (feature `engine`).
//! - `python` — monty for Python scripts, with the same channel, limits and loop shape.

pub mod protocol;
/// The zygote's control protocol (always built: the host speaks it).
pub mod zygote_wire;

#[cfg(all(feature = "lockdown", feature = "engine"))]
pub mod zygote;

#[cfg(feature = "lockdown")]
pub mod lockdown;

/// Copy-on-write pre-faulting of a forked runner (used by the zygote).
#[cfg(all(feature = "lockdown", feature = "engine"))]
pub mod prefault;
/// Which pages an execution touches, learned once per zygote (narrows [`prefault`]).
#[cfg(all(feature = "lockdown", feature = "engine"))]
pub mod prefault_probe;

#[cfg(feature = "engine")]
pub mod engine;

/// Python scripts on monty, in the same process model as [`engine`] (feature `engine`).
#[cfg(feature = "engine")]
pub mod python;
