//! Every integration test of the host, one file per behaviour, compiled into one test binary
//! (one compile and one link instead of one per file). Run one behaviour with
//! `cargo nextest run --test integration <file>::` or `cargo test --test integration <file>::`.
//! Kept in sync by scripts/consolidate-tests.py.

mod common;
mod serve_support;

mod builtins_sweep;
mod capabilities;
mod check_command;
mod cli;
mod context_keys;
mod cpu_limit;
mod deadlock;
mod error_codes;
mod gateway_checks;
mod hostile_memory;
mod hostile_runner;
mod hostile_scripts;
mod learning_cli;
mod learning_graph;
mod load;
mod lone_surrogates;
mod mcp_faults;
mod mcp_roundtrip;
mod nesting_depth;
mod no_leaks;
mod oversized_errors;
mod parallel_calls;
mod queue_bound;
mod random_kills;
mod reference_servers;
mod runner_faults;
mod runner_path;
mod runner_pool;
mod script_nesting;
mod search_capabilities;
mod serve_admission;
mod serve_cancellation;
mod serve_capability_quota;
mod serve_connections;
mod serve_learning;
mod serve_limits;
mod serve_origin;
mod serve_protocol_errors;
mod serve_python_sdk;
mod serve_sessions;
mod serve_shutdown;
mod serve_soak;
mod serve_unread_answers;
mod server_env;
mod server_process_tree;
mod server_startup;
mod shutdown;
mod state_location;
mod store_concurrency;
mod tools_cli;
mod uid_layer;
mod unknown_tools;
