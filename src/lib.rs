//! `mcp-sandbox`: run untrusted JavaScript written by AI agents in an OS-isolated runner process
//! whose only way out is MCP tool calls that this host checks, routes and traces.
//!
//! Library entry point: build a [`catalog::Catalog`] of tool providers (MCP servers from a config
//! file, in-process tools), then [`session::execute`] scripts against it.

pub mod analysis;
pub mod budget;
pub mod capability;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod config;
pub mod discovery;
pub mod error;
pub mod gate;
pub mod isolation;
pub mod learning_cli;
pub mod limits;
pub mod nesting;
pub mod outbox;
pub mod outcome;
pub mod policy;
pub mod pool;
pub mod provenance;
pub mod runner;
pub mod runner_process;
pub mod sandbox;
pub mod server;
pub mod session;
pub mod shutdown;
pub mod store;
pub mod suggest;
pub mod term;
pub mod trace;
pub mod transpile;
pub mod typescript;
pub mod validate;
pub mod zygote;

pub use catalog::{CallContext, Catalog, InProcessServer, ToolInfo, ToolProvider};
pub use error::{ErrorCode, ExecError};
pub use limits::Limits;
pub use outcome::Outcome;
pub use runner::RunnerCommand;
pub use sandbox::{QueueOptions, Sandbox};
pub use session::{execute, ExecRequest, SpawnHook};
