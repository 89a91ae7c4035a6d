//! Reading a script before it runs, on the host: a bound on bracket nesting ([`nesting`]), the
//! tool references a static read finds ([`analysis`]), and TypeScript to JavaScript
//! ([`transpile`]), and positions in that JavaScript mapped back to the TypeScript
//! ([`source_map`]). The script is untrusted: every parse runs on its own large-stack thread.
//!
//! May import `error` only.

pub mod analysis;
pub mod nesting;
pub mod python_refs;
pub mod references;
pub mod source_map;
pub mod transpile;
