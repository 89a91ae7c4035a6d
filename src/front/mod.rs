//! The ways in: the command line ([`cli`]), the MCP server that `serve` runs over stdio or HTTP
//! ([`mcp`]), the web view of executions, traces and the graph ([`ui`]), and the signals that end
//! a run or a server ([`shutdown`]).
//!
//! May import every layer below (`sandbox`, `exec`, `gate`, `tools`, `config`, `script`,
//! `store`, `context`, `error`, `trace`, `term`); nothing below imports `front`.

pub mod cli;
pub mod mcp;
pub mod shutdown;
pub mod ui;
