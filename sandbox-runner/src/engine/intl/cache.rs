//! A small per-thread cache of built formatters, keyed by locale and options.
//!
//! Bounded in entries (a script that asks for thousands of distinct option sets empties it
//! and starts over) so memory stays within what the execution's limit already accounts for.

use std::cell::RefCell;
use std::rc::Rc;

/// At most this many formatters of one kind are kept.
const MAX_ENTRIES: usize = 32;

/// Formatters of one kind, most recently built last.
pub struct Cache<T> {
    entries: RefCell<Vec<(String, Rc<T>)>>,
}

impl<T> Cache<T> {
    pub const fn new() -> Self {
        Cache {
            entries: RefCell::new(Vec::new()),
        }
    }

    /// The formatter for `key`, building it with `make` the first time.
    pub fn get<E>(&self, key: &str, make: impl FnOnce() -> Result<T, E>) -> Result<Rc<T>, E> {
        if let Some((_, v)) = self.entries.borrow().iter().find(|(k, _)| k == key) {
            return Ok(v.clone());
        }
        let value = Rc::new(make()?);
        let mut entries = self.entries.borrow_mut();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.push((key.to_owned(), value.clone()));
        Ok(value)
    }
}
