//! What a static read of a script finds: the `mcp.server.tool` it names. Shared by the JavaScript
//! analysis ([`crate::script::analysis`]) and the Python reader ([`crate::script::python_refs`]),
//! which both import this file and not each other.

use std::collections::BTreeSet;

/// One static reference `mcp.server.tool`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolReference {
    pub server: String,
    pub tool: String,
}

impl ToolReference {
    /// `server:tool`
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.server, self.tool)
    }
}

/// What the static analysis finds in a script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// Every static `mcp.X.Y` reference, sorted and deduplicated.
    pub all: BTreeSet<ToolReference>,
    /// The calls `mcp.X.Y(…)` that certainly run when the script runs to completion: in a
    /// top-level statement of the body (an expression, a declaration, a `return`), not after a
    /// top-level statement that may `return`, and not inside a function, a block, `if`, `try`,
    /// a loop, `switch`, `?:`, `&&`/`||`/`??`, `?.` or a default value. Only these may be
    /// refused before the script runs: elsewhere the call may be dead code, feature-detected
    /// or caught, and the runner's proxy rejects it when (if) it runs.
    pub certain_calls: BTreeSet<ToolReference>,
}
