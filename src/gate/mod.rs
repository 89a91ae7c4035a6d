//! The door every tool call passes on its way from a runner to a tool: the name is known, the
//! request's policy allows it, the arguments fit the limits and the tool's schema
//! ([`check_call`]); unknown names get bounded "did you mean" suggestions ([`suggest`]).
//! Calls an `ask` rule matches wait for a person's answer ([`approval`]); on `serve --http` the
//! questions also wait on the web view ([`pending`]).
//!
//! May import `tools`, `store` (pending questions shared by several gateways), `context`, `error`,
//! `trace`, `term`.

pub mod approval;
pub mod check_call;
pub mod pending;
pub mod suggest;
