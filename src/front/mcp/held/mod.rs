//! Executions that outlive their request: one owner for yield, wait, cancel, tasks,
//! `input_required` questions and their answers, and executions reached through another gateway.
//!
//! An execution is held when `execute_code` asks for `yield_after_ms`, is made a task, or may
//! ask a 2026-07-28 client a question (`input_required`). The fronts only read their requests
//! and call in here: `execute_code` ([`start::run`]), `wait_execution`/`cancel_execution`
//! ([`local::wait`], [`local::cancel`]), `tasks/get`/`tasks/cancel`/`tasks/update`
//! ([`local::take`], [`remote`], [`respond::answer_question`]), the retry of `execute_code`
//! carrying answers ([`respond::resume`]).
//!
//! The files, each importing only the ones listed before it:
//!
//! - [`registry`]: every held execution of this gateway by id under its owner (tenant,
//!   principal, session), its state ([`registry::Phase`]) and the transitions between states;
//! - [`reply`]: what a held execution answers (its outcome within the output budget and the
//!   unread-answer budget, `running`, the one answer to an unknown id, progress notes);
//! - [`remote`]: its row in the state store, so any gateway sharing it can answer or cancel it,
//!   and the verdict when the gateway running it stopped;
//! - [`local`]: reading or cancelling one by id, this gateway's or through the store;
//! - [`respond`]: the request that waits on one (the outcome, a question, or `running`), and
//!   the retry or `tasks/update` that answers its question;
//! - [`start`]: running one in its own task and answering its first request.
//!
//! The states the issue names map onto [`registry::Phase`] and two signals beside it:
//!
//! - running: `Running{recorded: false}`; yielded (its request answered `running`, a task, or
//!   `input_required`): `Running{recorded: true}`, a row in the store;
//! - waiting for an answer: still `Running`, with a question open on its
//!   `input_required::QuestionSlot` (the 2026-07-28 protocol's part, held by the registry
//!   entry); resumed: the slot's question answered (by a retry, `tasks/update`, the web view or
//!   the client's elicitation: the first answer wins) and cleared;
//! - cancelled: its token cancelled (`cancel_execution`, `tasks/cancel`, a withdrawn request,
//!   the end of its session, a flag on its row from another gateway), then `Finished` with
//!   `CANCELLED` like any end; finished: `Finished` (outcome here) or `Stored` (outcome in its
//!   row); read: `Read`; expired: a `Finished` one dropped by the registry's sweep after the
//!   session's idle TTL or end (a row's, by the store's TTL).

pub mod local;
pub mod registry;
pub mod remote;
pub mod reply;
pub mod respond;
pub mod start;
