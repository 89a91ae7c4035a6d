//! What a Python script can reach: `mcp.<server>.<tool>(...)` and the session-state functions.
//!
//! `mcp` and each server are host objects (monty class instances with ids of ours): calling a
//! method on a server suspends the interpreter with that server's id and the method's name, and
//! reading an attribute that is not a method call (`getattr(mcp.fs, "read-file")`) asks the host,
//! which answers with an external function named `server.tool`. A name the script calls that no
//! code defines also reaches the host: `store`, `load`, `keys` and `remove` are answered, any
//! other is a `NameError` (that is where `eval` and `exec` end up: there are none).

use crate::protocol::{UnavailableServer, WireError, STATE_OPERATIONS, STATE_SERVER};
use monty_types::{
    ExcType, MontyClassInstance, MontyClassType, MontyException, MontyObject, MontyUuid,
    NameLookupResult,
};
use std::collections::{BTreeMap, BTreeSet};

/// Where a call the interpreter suspended on goes.
#[derive(Debug)]
pub enum Route {
    /// A tool of a server (or a session-state operation, `$state`).
    Call { server: String, tool: String },
    /// Refused in the script with this exception (`mcp.x()`, which is no tool).
    Raise(MontyException),
    /// Refused with a coded error (an unknown tool, a server that is down): raised as the
    /// exception of a failed call, so that uncaught it ends the script with its code, as in
    /// JavaScript.
    Fail(WireError),
    /// No such function: a `NameError`.
    NotFound(String),
}

pub struct Host {
    tools: BTreeMap<String, BTreeSet<String>>,
    /// Each unavailable server's code and reason.
    unavailable: BTreeMap<String, (&'static str, String)>,
    /// Each server's object id, by server name (index order).
    servers: Vec<(String, MontyUuid)>,
    mcp: MontyUuid,
}

/// Ids of the host objects: not secrets (the script can only use the objects it is given), just
/// distinct from each other.
fn uuid(n: u32) -> MontyUuid {
    MontyUuid::from_u128((0x6d63_702d_7361_6e64_626f_785f_u128 << 32) | u128::from(n))
}

impl Host {
    pub fn new(tools: &[crate::protocol::ToolRef], unavailable: &[UnavailableServer]) -> Self {
        let mut by_server: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for t in tools {
            by_server
                .entry(t.server.clone())
                .or_default()
                .insert(t.name.clone());
        }
        let unavailable: BTreeMap<String, (&'static str, String)> = unavailable
            .iter()
            .map(|u| (u.server.clone(), (u.code(), u.reason.clone())))
            .collect();
        let names: BTreeSet<&String> = by_server.keys().chain(unavailable.keys()).collect();
        let servers = names
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    s.clone(),
                    uuid(u32::try_from(i).unwrap_or(u32::MAX - 1) + 1),
                )
            })
            .collect();
        Host {
            tools: by_server,
            unavailable,
            servers,
            mcp: uuid(0),
        }
    }

    /// The `mcp` object: one attribute per server.
    pub fn mcp_object(&self) -> MontyObject {
        let attrs = self
            .servers
            .iter()
            .map(|(name, id)| {
                (
                    MontyObject::String(name.clone()),
                    instance(name, *id, Vec::new()),
                )
            })
            .collect();
        instance("mcp", self.mcp, attrs)
    }

    fn server_of(&self, id: MontyUuid) -> Option<&str> {
        self.servers
            .iter()
            .find(|(_, sid)| *sid == id)
            .map(|(s, _)| s.as_str())
    }

    /// A suspended call: `object` is the receiver's id for a method call.
    pub fn route(&self, name: &str, object: Option<MontyUuid>) -> Route {
        match object {
            Some(id) if id == self.mcp => Route::Raise(exception(
                ExcType::TypeError,
                format!(
                    "mcp.{name}(...) is not a tool: call one as mcp.<server>.<tool>(key=value); \
                     the servers are {}",
                    self.server_list()
                ),
            )),
            Some(id) => match self.server_of(id) {
                Some(server) => self.tool_route(server, name),
                None => Route::NotFound(name.to_string()),
            },
            None => match name.split_once('.') {
                // Only a function the host handed out has a dot in its name.
                Some((server, tool)) => self.tool_route(server, tool),
                None if STATE_OPERATIONS.contains(&name) => Route::Call {
                    server: STATE_SERVER.to_string(),
                    tool: name.to_string(),
                },
                None => Route::NotFound(name.to_string()),
            },
        }
    }

    fn tool_route(&self, server: &str, tool: &str) -> Route {
        if let Some((code, reason)) = self.unavailable.get(server) {
            let mut err = WireError::new(
                *code,
                format!("MCP server '{server}' is unavailable: {reason}"),
            );
            err.tool = Some(format!("{server}:{tool}"));
            return Route::Fail(err);
        }
        if self.tools.get(server).is_some_and(|t| t.contains(tool)) {
            return Route::Call {
                server: server.to_string(),
                tool: tool.to_string(),
            };
        }
        let mut err = WireError::new(
            "TOOL_NOT_FOUND",
            format!(
                "unknown tool '{server}:{tool}'; {}",
                self.hint(server, tool)
            ),
        );
        err.tool = Some(format!("{server}:{tool}"));
        err.alternatives = Some(crate::engine::suggest::closest(&self.tools, server, tool));
        Route::Fail(err)
    }

    fn hint(&self, server: &str, tool: &str) -> String {
        let close = crate::engine::suggest::closest(&self.tools, server, tool);
        if close.is_empty() {
            match self.tools.get(server) {
                Some(tools) => format!(
                    "the tools of '{server}' are: {}",
                    tools.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => format!("the servers are {}", self.server_list()),
            }
        } else {
            format!("did you mean {}?", close.join(", "))
        }
    }

    fn server_list(&self) -> String {
        let names: Vec<&str> = self.servers.iter().map(|(s, _)| s.as_str()).collect();
        if names.is_empty() {
            "none (no MCP server is configured)".into()
        } else {
            names.join(", ")
        }
    }

    /// An attribute read the interpreter could not answer itself; `Err` is a coded failure
    /// (an unknown server or tool), raised as a failed call's exception.
    pub fn lookup(
        &self,
        name: &str,
        object: Option<MontyUuid>,
    ) -> Result<NameLookupResult, WireError> {
        Ok(match object {
            Some(id) if id == self.mcp => {
                return Err(WireError::new(
                    "TOOL_NOT_FOUND",
                    format!(
                        "no MCP server '{name}'; the servers are {}",
                        self.server_list()
                    ),
                ))
            }
            Some(id) => match self.server_of(id) {
                Some(server) => match self.tool_route(server, name) {
                    Route::Call { .. } => NameLookupResult::Value(MontyObject::Function {
                        name: format!("{server}.{name}"),
                        docstring: None,
                    }),
                    Route::Raise(e) => NameLookupResult::Error(e),
                    Route::Fail(err) => return Err(err),
                    Route::NotFound(_) => NameLookupResult::Undefined,
                },
                None => NameLookupResult::Undefined,
            },
            None if STATE_OPERATIONS.contains(&name) => {
                NameLookupResult::Value(MontyObject::Function {
                    name: name.to_string(),
                    docstring: None,
                })
            }
            None => NameLookupResult::Undefined,
        })
    }
}

fn instance(name: &str, id: MontyUuid, attrs: Vec<(MontyObject, MontyObject)>) -> MontyObject {
    MontyObject::ClassInstance(Box::new(MontyClassInstance {
        class_type: MontyClassType {
            name: name.to_string(),
            id,
            host_defined: true,
            is_dataclass: false,
            attrs: Vec::new().into(),
        },
        instance_id: id,
        attrs: attrs.into(),
    }))
}

pub fn exception(kind: ExcType, message: String) -> MontyException {
    MontyException::new(kind, Some(message))
}

/// The exception type a failed call raises, by its code: the ones a script is likely to catch
/// by type get Python's own; the message always starts with the code (`"CODE: message"`).
pub fn exception_type(code: &str) -> ExcType {
    match code {
        "PERMISSION_DENIED" => ExcType::PermissionError,
        "TOOL_TIMEOUT" => ExcType::TimeoutError,
        "INVALID_ARGUMENTS" => ExcType::ValueError,
        "TOOL_NOT_FOUND" => ExcType::AttributeError,
        "STATE_VALUE_INVALID" => ExcType::TypeError,
        _ => ExcType::RuntimeError,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolRef;

    fn host() -> Host {
        let tools = [("fixture", "echo"), ("fixture", "add"), ("fs", "read-file")]
            .iter()
            .map(|(s, t)| ToolRef {
                server: s.to_string(),
                name: t.to_string(),
            })
            .collect::<Vec<_>>();
        let down = [
            UnavailableServer {
                server: "down".into(),
                reason: "it exited".into(),
                code: None,
            },
            UnavailableServer {
                server: "boxed".into(),
                reason: "SERVER_CONFINEMENT_UNAVAILABLE: server 'boxed' is confined but …".into(),
                code: Some("SERVER_CONFINEMENT_UNAVAILABLE".into()),
            },
            UnavailableServer {
                server: "odd".into(),
                reason: "it exited".into(),
                code: Some("TOOL_TIMEOUT".into()),
            },
        ];
        Host::new(&tools, &down)
    }

    fn server_id(h: &Host, name: &str) -> MontyUuid {
        h.servers.iter().find(|(s, _)| s == name).unwrap().1
    }

    #[test]
    fn a_method_of_a_server_object_is_its_tool() {
        let h = host();
        let id = server_id(&h, "fixture");
        assert!(
            matches!(h.route("echo", Some(id)), Route::Call { server, tool } if server == "fixture" && tool == "echo")
        );
        let Route::Fail(e) = h.route("ecko", Some(id)) else {
            panic!("expected a refusal")
        };
        assert_eq!(exception_type(&e.code), ExcType::AttributeError);
        assert_eq!(
            format!("{}: {}", e.code, e.message),
            "TOOL_NOT_FOUND: unknown tool 'fixture:ecko'; did you mean fixture:echo?"
        );
        assert_eq!(e.tool.as_deref(), Some("fixture:ecko"));
    }

    #[test]
    fn only_names_the_host_handed_out_or_state_functions_are_calls() {
        let h = host();
        assert!(
            matches!(h.route("fs.read-file", None), Route::Call { server, tool } if server == "fs" && tool == "read-file")
        );
        assert!(
            matches!(h.route("store", None), Route::Call { server, tool } if server == STATE_SERVER && tool == "store")
        );
        assert!(matches!(h.route("eval", None), Route::NotFound(n) if n == "eval"));
        let Route::Fail(e) = h.route("echo", Some(server_id(&h, "down"))) else {
            panic!("expected a refusal")
        };
        assert_eq!(
            format!("{}: {}", e.code, e.message),
            "SERVER_UNAVAILABLE: MCP server 'down' is unavailable: it exited"
        );
        // The host's code for the server, when it is one a call to an unavailable server may
        // have; any other is SERVER_UNAVAILABLE.
        let Route::Fail(e) = h.route("echo", Some(server_id(&h, "boxed"))) else {
            panic!("expected a refusal")
        };
        assert_eq!(e.code, "SERVER_CONFINEMENT_UNAVAILABLE");
        let Route::Fail(e) = h.route("echo", Some(server_id(&h, "odd"))) else {
            panic!("expected a refusal")
        };
        assert_eq!(e.code, "SERVER_UNAVAILABLE");
    }

    #[test]
    fn getattr_of_a_tool_name_gives_a_callable_named_server_dot_tool() {
        let h = host();
        match h.lookup("read-file", Some(server_id(&h, "fs"))) {
            Ok(NameLookupResult::Value(MontyObject::Function { name, .. })) => {
                assert_eq!(name, "fs.read-file")
            }
            other => panic!("unexpected {other:?}"),
        }
        match h.lookup("nope", Some(h.mcp)) {
            Err(e) => assert_eq!(
                format!("{}: {}", e.code, e.message),
                "TOOL_NOT_FOUND: no MCP server 'nope'; the servers are boxed, down, fixture, fs, odd"
            ),
            other => panic!("unexpected {other:?}"),
        }
    }
}
