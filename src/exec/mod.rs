//! One execution from queue to outcome: spawn (or take from the pool) a runner, verify its
//! isolation, send it the script, serve its tool calls through the gate, and turn what came back
//! into an [`outcome::Outcome`]. A capability call is a nested execution ([`capability`]).
//!
//! May import `gate`, `tools`, `config`, `script`, `store`, `context`, `error`, `trace`, `term`.

pub mod audit;
pub mod audit_breaker;
pub mod audit_queue;
pub mod budget;
pub mod capability;
pub mod capability_author;
pub mod capability_call;
pub mod cpu_time;
pub mod fair_share;
pub mod hints;
pub mod isolation;
pub mod isolation_fixes;
pub mod learning;
pub mod live;
pub mod outbox;
pub mod outcome;
pub mod output_budget;
pub mod passthrough;
pub mod placeholders;
pub mod pool;
pub mod provenance;
pub mod recording;
pub mod recording_audit;
pub mod replay;
pub mod retry_queue;
pub mod runner;
pub mod runner_path;
pub mod runner_process;
pub mod sealing;
pub mod session;
pub mod state;
pub mod zygote;
