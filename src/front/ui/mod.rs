//! The web view (`/ui`): recent executions, one execution as a waterfall of its calls, its
//! logs and code, the tool graph and the saved capabilities, read from the state store's audit
//! log, graph and capability tables. `serve --http` mounts it behind its authentication;
//! `mcp-sandbox ui` serves it for a state store alone (loopback only).
//!
//! [`routes`] answers the requests (the page, its assets, the JSON API under `/ui/api/`) and
//! decides who sees what; [`api`] runs the read-only queries. The page (`assets/`: HTML, CSS
//! and JavaScript written for it, compiled in with `include_str!`) polls the API once a second
//! while it is open; nothing is fetched from anywhere else (its Content-Security-Policy says
//! `default-src 'self'`).
//!
//! [`approvals`] lists and answers the questions waiting for a person (`serve --http`);
//! [`labels`] shows and clears a principal's data-flow labels; [`egress`] lists confined
//! servers' refused connections.
//!
//! May import `store`, `config`, `gate` (the pending questions), `tools` (the egress proxy's
//! refused connections) and `context`; `front::mcp` and `front::cli` import it, it
//! imports neither.

pub mod api;
pub mod approvals;
pub mod egress;
pub mod labels;
pub mod limit;
pub mod routes;
pub mod viewer;

pub use routes::{router, router_on, UiAccess};
