//! `mcp-sandbox`: run untrusted JavaScript written by AI agents in an OS-isolated runner process
//! whose only way out is MCP tool calls that this host checks, routes and traces.
//!
//! Library entry point: build a [`Catalog`] of tool providers (MCP servers from a config file,
//! in-process tools), then [`execute`] scripts against it, or keep a [`Sandbox`] (runner pool,
//! queue) for many executions. The host is layered by concern; imports run one way, top to
//! bottom (docs/architecture.md):
//!
//! | layer | job |
//! |---|---|
//! | [`front`] | the ways in: the CLI, the MCP server (`serve`), signals |
//! | [`sandbox`] | the library's front door: a catalog, a runner pool and a queue |
//! | [`exec`] | one execution from queue to outcome |
//! | [`gate`] | the door every tool call passes |
//! | [`tools`] | what a script can reach: MCP servers, in-process tools, their schemas |
//! | [`config`] | the config file, read into the types of the layers above |
//! | [`script`], [`store`] | reading a script before it runs; the state store |
//! | [`context`] | who is asking, under which limits and policy |
//! | [`error`], [`trace`], [`term`] | codes, trace events, terminal-safe text |
//!
//! A program embedding the library must ignore `SIGPIPE`, as the runtime of every Rust binary
//! does before `main`: a write to a runner or an MCP server that has just exited is then an
//! `EPIPE` error the host handles, not a signal that kills the process.

pub mod config;
pub mod context;
pub mod error;
pub mod exec;
pub mod front;
pub mod gate;
pub mod sandbox;
pub mod script;
pub mod store;
pub mod telemetry;
pub mod term;
pub mod tools;
pub mod trace;

pub use context::limits::Limits;
pub use error::{ErrorCode, ExecError};
pub use exec::outcome::Outcome;
pub use exec::runner::RunnerCommand;
pub use exec::session::{execute, ExecRequest, SpawnHook};
pub use sandbox::{QueueOptions, Sandbox};
pub use tools::catalog::{CallContext, Catalog, InProcessServer, ToolInfo, ToolProvider};
