//! What a script can reach: the [`catalog`] of tool providers (MCP servers over stdio, in-process
//! tools, APIs described by OpenAPI: [`openapi`]), their compiled input [`schema`]s, listing them ([`discovery`]) and their TypeScript
//! declarations ([`typescript`]).
//!
//! May import `config`, `store`, `context`, `error`, `trace`, `term`.

pub mod catalog;
pub mod discovery;
pub mod egress;
pub mod openapi;
pub mod passthrough;
pub mod python_stubs;
pub mod schema;
pub mod typescript;
