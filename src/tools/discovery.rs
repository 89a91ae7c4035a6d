//! Finding tools: the ranked search behind `search_tools`, and the `mcp-sandbox tools` listing
//! (plain, `--json`, `--typescript`). Tools denied by the policy stay listed, marked as denied.

use crate::context::policy::Policy;
use crate::tools::catalog::{Catalog, ToolInfo};
use crate::tools::typescript::{declarations, ToolDecl};
use serde_json::{json, Value};

/// Most tools one search returns; the rest are counted so the agent can narrow the query.
pub const MAX_SEARCH_RESULTS: usize = 30;

/// Tools matching `query` (words, case-insensitive, against server, name and description) and
/// `server`, best first. An empty query matches every tool.
pub fn search(catalog: &Catalog, query: Option<&str>, server: Option<&str>) -> Vec<ToolInfo> {
    search_in(catalog.tools(), query, server)
}

/// [`search`] over any list of tools (a catalog's tools and saved capabilities).
pub fn search_in(tools: Vec<ToolInfo>, query: Option<&str>, server: Option<&str>) -> Vec<ToolInfo> {
    let terms: Vec<String> = query
        .unwrap_or("")
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.' || c == ':')
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(f64, ToolInfo)> = tools
        .into_iter()
        .filter(|t| server.is_none_or(|s| t.server == s))
        .filter_map(|t| {
            if terms.is_empty() {
                return Some((0.0, t));
            }
            let score = score(&t, &terms);
            (score > 0.0).then_some((score, t))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| (&a.1.server, &a.1.name).cmp(&(&b.1.server, &b.1.name)))
    });
    scored.into_iter().map(|(_, t)| t).collect()
}

fn score(t: &ToolInfo, terms: &[String]) -> f64 {
    let name = t.name.to_lowercase();
    let server = t.server.to_lowercase();
    let desc = t.description.as_deref().unwrap_or("").to_lowercase();
    let name_words: Vec<&str> = name.split(['_', '-']).collect();
    let mut total = 0.0;
    for term in terms {
        let mut s = 0.0;
        if name == *term {
            s += 10.0;
        } else if name_words.contains(&term.as_str()) {
            s += 6.0;
        } else if name.contains(term.as_str()) {
            s += 4.0;
        } else if name_words
            .iter()
            .any(|w| strsim::jaro_winkler(w, term) >= 0.88)
        {
            // Typos and near forms ("directories" for "directory").
            s += 2.0;
        }
        if server == *term {
            s += 3.0;
        }
        if desc.contains(term.as_str()) {
            s += 1.0;
        }
        total += s;
    }
    total
}

/// Saved capabilities as tools `mcp.<namespace>.<action>` for search and declarations, their
/// TypeScript types generated from their input schema (an object with any fields without one).
/// Capabilities whose namespace is a server of `catalog` are left out: the server wins there.
pub fn capability_tools(
    catalog: &Catalog,
    records: &[crate::store::CapabilityRecord],
) -> Vec<ToolInfo> {
    records
        .iter()
        .filter_map(|r| {
            let (namespace, action) = r.parts();
            if action.is_empty()
                || catalog.provider(namespace).is_some()
                || catalog.unavailable().contains_key(namespace)
            {
                return None;
            }
            let what = r.description.as_deref().unwrap_or("(no description)");
            Some(ToolInfo {
                server: namespace.to_string(),
                name: action.to_string(),
                description: Some(format!(
                    "{what}\nSaved capability {} (version {}).",
                    r.id, r.version
                )),
                input_schema: r
                    .input_schema
                    .clone()
                    .unwrap_or_else(|| json!({"type": "object"})),
                output_schema: None,
            })
        })
        .collect()
}

/// Declarations for `tools`, with denied ones marked.
pub fn render(
    catalog: &Catalog,
    policy: &Policy,
    tools: &[ToolInfo],
    with_unavailable: bool,
) -> String {
    render_as(catalog, policy, tools, with_unavailable, Stubs::Typescript)
}

/// How [`render_as`] writes the `mcp` API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stubs {
    /// TypeScript declarations (`declare const mcp: {...}`).
    Typescript,
    /// Python stubs (one class per server).
    Python,
}

/// The `mcp` API of `tools` for scripts of one language.
pub fn render_as(
    catalog: &Catalog,
    policy: &Policy,
    tools: &[ToolInfo],
    with_unavailable: bool,
    stubs: Stubs,
) -> String {
    let decls: Vec<ToolDecl<'_>> = tools
        .iter()
        .map(|t| ToolDecl {
            tool: t,
            denied: policy.check(&t.server, &t.name).err(),
        })
        .collect();
    let empty = Default::default();
    let unavailable = if with_unavailable {
        catalog.unavailable()
    } else {
        &empty
    };
    match stubs {
        Stubs::Typescript => declarations(&decls, unavailable),
        Stubs::Python => crate::tools::python_stubs::stubs(&decls, unavailable),
    }
}

/// Declarations of tools cut to a byte bound (see [`render_within`]).
pub struct Rendered {
    pub text: String,
    /// How many of the tools it declares (the first ones), the last perhaps cut.
    pub shown: usize,
    /// The tool whose declaration is cut (alone, it is over the bound), if one is.
    pub cut: Option<String>,
}

/// What a text costs an answer that carries it twice: as text, and as a JSON string in
/// `structuredContent` (quotes, backslashes and control characters escaped).
pub fn twice_bytes(text: &str) -> usize {
    text.len() + json_string_bytes(text)
}

fn json_string_bytes(text: &str) -> usize {
    2 + text.chars().map(escaped_len).sum::<usize>()
}

fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// [`render_as`] within `max_bytes` as [`twice_bytes`] counts: all of `tools` when they fit,
/// else the most of the first ones that fit; when even the first does not, its declaration cut
/// (at a line's end when one is near; the text then does not parse: the answer says so). The
/// count that fits is found by halving: a render per step, not one per tool.
pub fn render_within(
    catalog: &Catalog,
    policy: &Policy,
    tools: &[ToolInfo],
    with_unavailable: bool,
    stubs: Stubs,
    max_bytes: usize,
) -> Rendered {
    let render = |n: usize| render_as(catalog, policy, &tools[..n], with_unavailable, stubs);
    let all = render(tools.len());
    if twice_bytes(&all) <= max_bytes || tools.is_empty() {
        return Rendered {
            text: all,
            shown: tools.len(),
            cut: None,
        };
    }
    // The largest n (< tools.len()) whose render fits: renders grow with n.
    let (mut fits, mut over) = (0, tools.len());
    let mut best = None;
    while over - fits > 1 {
        let mid = (fits + over) / 2;
        let text = render(mid);
        if twice_bytes(&text) <= max_bytes {
            fits = mid;
            best = Some(text);
        } else {
            over = mid;
        }
    }
    if let Some(text) = best {
        return Rendered {
            text,
            shown: fits,
            cut: None,
        };
    }
    let mut text = render(1);
    // The longest prefix that fits (2 for the JSON string's quotes).
    let mut spent = 2;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        spent += c.len_utf8() + escaped_len(c);
        if spent > max_bytes {
            break;
        }
        end = i + c.len_utf8();
    }
    // At a line's end when one is in the second half (a long enum is one line: cut inside it).
    let end = match text[..end].rfind('\n') {
        Some(i) if i + 1 >= end / 2 => i + 1,
        _ => end,
    };
    text.truncate(end);
    Rendered {
        text,
        shown: 1,
        cut: Some(tools[0].qualified()),
    }
}

/// `tools --json`: every tool with its schemas and policy verdict, and the unavailable servers.
pub fn to_json(catalog: &Catalog, policy: &Policy) -> Value {
    let tools: Vec<Value> = catalog
        .tools()
        .iter()
        .map(|t| {
            let verdict = policy.check(&t.server, &t.name);
            let mut v = json!({
                "server": t.server,
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
                "allowed": verdict.is_ok(),
            });
            if let Err(reason) = verdict {
                v["denied_reason"] = Value::String(reason);
            }
            v
        })
        .collect();
    let unavailable: Vec<Value> = catalog
        .unavailable()
        .iter()
        .map(|(s, r)| json!({"server": s, "reason": r}))
        .collect();
    json!({"tools": tools, "unavailable": unavailable})
}

/// `tools` without a format flag: one line per tool, then the unavailable servers.
pub fn to_text(catalog: &Catalog, policy: &Policy) -> String {
    let mut out = String::new();
    for t in catalog.tools() {
        let desc = t
            .description
            .as_deref()
            .and_then(|d| d.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim();
        let desc: String = if desc.chars().count() > 100 {
            desc.chars().take(99).collect::<String>() + "…"
        } else {
            desc.to_string()
        };
        let denied = if policy.allows(&t.server, &t.name) {
            ""
        } else {
            " [denied by policy]"
        };
        out.push_str(&format!("{}:{}{denied}  {desc}\n", t.server, t.name));
    }
    for (server, reason) in catalog.unavailable() {
        out.push_str(&format!("{server}: UNAVAILABLE: {reason}\n"));
    }
    out
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    #[test]
    fn twice_bytes_counts_the_json_escapes() {
        let t = "a\"b\\c\nd\u{1}é";
        assert_eq!(
            twice_bytes(t),
            t.len() + serde_json::to_string(t).unwrap().len()
        );
    }
}
