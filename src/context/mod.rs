//! Who is asking, under which limits and policy, in which trace: the values a request carries
//! from the front that received it to every layer that acts on it.
//!
//! May import `error`, `trace`, `term` only.

pub mod limits;
pub mod policy;
