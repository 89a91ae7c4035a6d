//! Issue 63 item 5: every client recipe in the README and docs/ is written in the shape its client
//! documents, so a reader who pastes it gets a working entry. A recipe is the fenced block after
//! a `<!-- client: NAME… -->` marker; each is parsed as that client reads it:
//!
//! - `claude-code`: `claude mcp add [--transport stdio|http|sse] [--header "K: V"]… [--env K=V]…
//!   [--scope local|user|project] NAME (URL | -- COMMAND ARGS…)`, no flag Claude Code lacks;
//! - `cursor`: `{"mcpServers": {NAME: {command, args?, env?} | {url, headers?}}}`, variables only
//!   as Cursor interpolates them (`${env:NAME}`, `${userHome}`, `${workspaceFolder}`…);
//! - `vscode`: `{"servers": {NAME: {type: stdio, command, args?, env?, envFile?} | {type: http,
//!   url, headers?}}, "inputs": […]}`, each `${input:ID}` declared in `inputs`;
//! - `claude-desktop`: `{"mcpServers": {NAME: {command, args?, env?}}}` with an absolute command,
//!   and no `url` (Claude Desktop does not connect to a remote server written in that file).
//!
//! Every other `claude mcp add` line of a shell block is checked as Claude Code's too. In each,
//! an `mcp-sandbox` command line (also one run through `ssh` or `wsl.exe`) must parse
//! with the real command-line parser, a remote `https://` entry must send `Authorization`, and a
//! JSON client entry that starts `mcp-sandbox` without a marker fails (it would go unchecked).

use crate::doc_commands::{is_host, pages, shell_commands};
use clap::Parser;
use mcp_sandbox::front::cli::command::Cli;
use serde_json::{Map, Value};

/// One recipe: where it is, its clients, its block.
struct Recipe {
    at: String,
    clients: Vec<String>,
    lang: String,
    text: String,
}

/// The fenced blocks of `text` (page `name`): each with the clients of the marker just before it
/// (none without one), and its info string and text.
fn blocks(name: &str, text: &str) -> Vec<Recipe> {
    let mut out = Vec::new();
    let mut marker: Option<Vec<String>> = None;
    let mut open: Option<Recipe> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(r) => out.push(r),
                None => {
                    open = Some(Recipe {
                        at: format!("{name}:{}", i + 1),
                        clients: marker.take().unwrap_or_default(),
                        lang: info.trim().to_string(),
                        text: String::new(),
                    })
                }
            }
            continue;
        }
        if let Some(r) = open.as_mut() {
            r.text.push_str(line);
            r.text.push('\n');
            continue;
        }
        if let Some(list) = trimmed
            .strip_prefix("<!-- client:")
            .and_then(|r| r.strip_suffix("-->"))
        {
            marker = Some(list.split_whitespace().map(str::to_string).collect());
        } else if !trimmed.is_empty() {
            marker = None;
        }
    }
    out
}

/// The `mcp-sandbox …` words of a command and its arguments (also behind `ssh host` or
/// `wsl.exe`), if it runs `mcp-sandbox`.
fn host_words(words: &[String]) -> Option<Vec<String>> {
    let i = words.iter().position(|w| is_host(w))?;
    let mut out = vec!["mcp-sandbox".to_string()];
    out.extend(words[i + 1..].iter().cloned());
    Some(out)
}

fn check_host(words: &[String], at: &str, failures: &mut Vec<String>) {
    if let Some(host) = host_words(words) {
        if let Err(e) = Cli::try_parse_from(&host) {
            failures.push(format!("{at}: `{}` does not parse: {e}", host.join(" ")));
        }
    }
}

/// Checks one `claude mcp add` command line.
fn check_claude_code(words: &[String], at: &str, failures: &mut Vec<String>) -> bool {
    let mut fail = |m: String| failures.push(format!("{at}: {m} (in `{}`)", words.join(" ")));
    if words.len() < 3 || words[..3] != ["claude", "mcp", "add"] {
        fail("a Claude Code recipe line is not `claude mcp add …`".into());
        return false;
    }
    let mut transport = "stdio".to_string();
    let mut headers: Vec<String> = Vec::new();
    let mut positional: Vec<String> = Vec::new();
    let mut rest = words[3..].iter();
    let mut command: Option<Vec<String>> = None;
    while let Some(w) = rest.next() {
        if w == "--" {
            command = Some(rest.by_ref().cloned().collect());
            break;
        }
        let value = |rest: &mut std::slice::Iter<'_, String>| rest.next().cloned();
        match w.as_str() {
            "--transport" | "-t" => match value(&mut rest) {
                Some(t) if ["stdio", "http", "sse"].contains(&t.as_str()) => transport = t,
                other => fail(format!(
                    "--transport takes stdio, http or sse, not {other:?}"
                )),
            },
            "--header" | "-H" => match value(&mut rest) {
                Some(h) if h.split_once(": ").is_some_and(|(n, _)| !n.is_empty()) => {
                    headers.push(h)
                }
                other => fail(format!("--header takes \"Name: value\", not {other:?}")),
            },
            "--env" | "-e" => match value(&mut rest) {
                Some(e) if e.split_once('=').is_some_and(|(k, _)| !k.is_empty()) => {}
                other => fail(format!("--env takes KEY=value, not {other:?}")),
            },
            "--scope" | "-s" => match value(&mut rest) {
                Some(s) if ["local", "user", "project"].contains(&s.as_str()) => {}
                other => fail(format!(
                    "--scope takes local, user or project, not {other:?}"
                )),
            },
            flag if flag.starts_with('-') => fail(format!(
                "`claude mcp add` has no {flag} (it has --transport, --header, --env, --scope)"
            )),
            _ => positional.push(w.clone()),
        }
    }
    match (transport.as_str(), &command) {
        ("stdio", Some(cmd)) => {
            if positional.len() != 1 {
                fail("a stdio server is `NAME -- COMMAND ARGS…`".into());
            }
            if !cmd.first().is_some_and(|c| c.starts_with('/')) {
                fail("the command is not an absolute path".into());
            }
            check_host(cmd, at, failures);
        }
        ("http" | "sse", None) => {
            let url = positional.get(1).cloned().unwrap_or_default();
            if positional.len() != 2 || !(url.starts_with("https://") || url.starts_with("http://"))
            {
                fail("a remote server is `NAME URL`".into());
            }
            let authorized = headers
                .iter()
                .any(|h| h.to_ascii_lowercase().starts_with("authorization: bearer "));
            if url.starts_with("https://") && !authorized {
                fail("a remote gateway recipe sends no `Authorization: Bearer …` header".into());
            }
            return authorized;
        }
        _ => fail(
            "a stdio server needs `-- COMMAND`, a remote one --transport http and a URL".into(),
        ),
    }
    false
}

/// `${…}` references of `text`.
fn variables(text: &str) -> Vec<String> {
    text.split("${")
        .skip(1)
        .filter_map(|r| r.split_once('}').map(|(v, _)| v.to_string()))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

fn is_string_map(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| o.values().all(Value::is_string))
}

fn is_string_list(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
}

/// Checks one server entry of a JSON recipe for `client`. Returns whether it is a remote entry
/// with an `Authorization` header.
fn check_entry(
    client: &str,
    name: &str,
    entry: &Map<String, Value>,
    at: &str,
    failures: &mut Vec<String>,
) -> bool {
    let mut fail = |m: String| failures.push(format!("{at}: {client} entry '{name}': {m}"));
    let keys: Vec<&str> = entry.keys().map(String::as_str).collect();
    let kind = match client {
        "vscode" => match entry.get("type").and_then(Value::as_str) {
            Some("stdio") => "stdio",
            Some("http" | "sse") => "remote",
            other => {
                fail(format!(
                    "VS Code needs \"type\": \"stdio\" or \"http\", not {other:?}"
                ));
                return false;
            }
        },
        _ if entry.contains_key("url") => "remote",
        _ => "stdio",
    };
    let allowed: &[&str] = match (client, kind) {
        ("vscode", "stdio") => &["type", "command", "args", "env", "envFile"],
        ("vscode", _) => &["type", "url", "headers"],
        ("claude-desktop", _) => &["command", "args", "env"],
        (_, "stdio") => &["command", "args", "env"],
        _ => &["url", "headers"],
    };
    if client == "claude-desktop" && entry.contains_key("url") {
        fail("Claude Desktop does not connect to a remote server written in claude_desktop_config.json (only through Settings → Connectors)".into());
        return false;
    }
    if let Some(k) = keys.iter().find(|k| !allowed.contains(k)) {
        fail(format!(
            "{k:?} is not a key this client reads here (it reads {allowed:?})"
        ));
    }
    for (key, ok) in [
        ("args", entry.get("args").is_none_or(is_string_list)),
        ("env", entry.get("env").is_none_or(is_string_map)),
        ("headers", entry.get("headers").is_none_or(is_string_map)),
    ] {
        if !ok {
            fail(format!("{key} has the wrong shape"));
        }
    }
    for var in strings(&Value::Object(entry.clone()))
        .iter()
        .flat_map(|s| variables(s))
    {
        let ok = match client {
            "cursor" => {
                var.starts_with("env:")
                    || [
                        "userHome",
                        "workspaceFolder",
                        "workspaceFolderBasename",
                        "pathSeparator",
                        "/",
                    ]
                    .contains(&var.as_str())
            }
            "vscode" => {
                var.starts_with("env:")
                    || var.starts_with("input:")
                    || var == "workspaceFolder"
                    || var == "userHome"
            }
            _ => false,
        };
        if !ok {
            fail(format!("${{{var}}} is not a variable {client} expands"));
        }
    }
    if kind == "stdio" {
        let command = entry
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let absolute = command.starts_with('/') || command.get(1..3) == Some(":\\");
        if !absolute {
            fail(format!("command {command:?} is not an absolute path"));
        }
        let mut words = vec![command.to_string()];
        words.extend(strings(entry.get("args").unwrap_or(&Value::Null)));
        check_host(&words, at, failures);
        return false;
    }
    let url = entry.get("url").and_then(Value::as_str).unwrap_or_default();
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        fail(format!("url {url:?} is not an http(s) URL"));
    }
    let authorized = entry
        .get("headers")
        .and_then(Value::as_object)
        .and_then(|h| h.get("Authorization"))
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("Bearer "));
    if url.starts_with("https://") && !authorized {
        fail("a remote gateway entry sends no Authorization: Bearer header".into());
    }
    authorized
}

/// Checks one JSON recipe for `client`; returns whether it holds a remote entry with a token.
fn check_json(client: &str, text: &str, at: &str, failures: &mut Vec<String>) -> bool {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            failures.push(format!("{at}: not JSON: {e}"));
            return false;
        }
    };
    let (section, top): (&str, &[&str]) = match client {
        "vscode" => ("servers", &["servers", "inputs"]),
        "claude-desktop" => ("mcpServers", &["mcpServers", "globalShortcut"]),
        _ => ("mcpServers", &["mcpServers"]),
    };
    let Some(obj) = value.as_object() else {
        failures.push(format!("{at}: not a JSON object"));
        return false;
    };
    if let Some(k) = obj.keys().find(|k| !top.contains(&k.as_str())) {
        failures.push(format!(
            "{at}: {client} reads no top-level {k:?} (it reads {top:?})"
        ));
    }
    let Some(servers) = obj.get(section).and_then(Value::as_object) else {
        failures.push(format!("{at}: {client} reads its servers from {section:?}"));
        return false;
    };
    let mut authorized = false;
    for (name, entry) in servers {
        match entry.as_object() {
            Some(e) => authorized |= check_entry(client, name, e, at, failures),
            None => failures.push(format!("{at}: entry '{name}' is not an object")),
        }
    }
    if client == "vscode" {
        let declared: Vec<&str> = obj
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "promptString" && i["description"].is_string())
            .filter_map(|i| i["id"].as_str())
            .collect();
        for var in strings(&Value::Object(servers.clone()))
            .iter()
            .flat_map(|s| variables(s))
        {
            if let Some(id) = var.strip_prefix("input:") {
                if !declared.contains(&id) {
                    failures.push(format!(
                        "{at}: ${{input:{id}}} is not declared in \"inputs\" (a promptString with a description)"
                    ));
                }
            }
        }
    }
    authorized
}

/// Checks every recipe of `pages`; returns the failures and, per page, the clients recipes exist
/// for (`NAME` or `NAME+token` for one reaching a gateway with a token).
fn check_pages(pages: &[(String, String)]) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut failures = Vec::new();
    let mut found = Vec::new();
    for (name, text) in pages {
        let mut clients = Vec::new();
        for block in blocks(name, text) {
            if block.clients.is_empty() {
                // Every `claude mcp add` line is Claude Code's, marked or not.
                if matches!(block.lang.as_str(), "sh" | "bash" | "shell" | "console") {
                    for line in block.text.lines() {
                        let line = line.trim_start().trim_start_matches("$ ");
                        for words in shell_commands(line) {
                            if words.len() >= 3 && words[..3] == ["claude", "mcp", "add"] {
                                check_claude_code(&words, &block.at, &mut failures);
                            }
                        }
                    }
                }
                // A client entry that starts mcp-sandbox must be marked, or it goes unchecked.
                if block.lang == "json" {
                    if let Ok(v) = serde_json::from_str::<Value>(&block.text) {
                        let section = v.get("mcpServers").or_else(|| v.get("servers"));
                        let runs_host = section.and_then(Value::as_object).is_some_and(|s| {
                            s.values().any(|e| {
                                let mut words = strings(&e["command"]);
                                words.extend(strings(&e["args"]));
                                host_words(&words).is_some()
                            })
                        });
                        if runs_host {
                            failures.push(format!(
                                "{}: a client entry that runs mcp-sandbox has no `<!-- client: … -->` marker",
                                block.at
                            ));
                        }
                    }
                }
                continue;
            }
            for client in &block.clients {
                let authorized = match (client.as_str(), block.lang.as_str()) {
                    ("claude-code", "sh") => {
                        let mut any = false;
                        for line in block.text.lines().filter(|l| !l.trim().is_empty()) {
                            for words in shell_commands(line) {
                                any |= check_claude_code(&words, &block.at, &mut failures);
                            }
                        }
                        any
                    }
                    ("cursor" | "vscode" | "claude-desktop", "json") => {
                        check_json(client, &block.text, &block.at, &mut failures)
                    }
                    (c, l) => {
                        failures.push(format!(
                            "{}: no check for a {c} recipe in a `{l}` block",
                            block.at
                        ));
                        false
                    }
                };
                clients.push(if authorized {
                    format!("{client}+token")
                } else {
                    client.clone()
                });
            }
        }
        found.push((name.clone(), clients));
    }
    (failures, found)
}

#[test]
fn every_client_recipe_is_in_the_shape_its_client_reads() {
    let pages: Vec<(String, String)> = pages()
        .into_iter()
        .map(|p| {
            let name = p
                .strip_prefix(crate::common::repo_root())
                .unwrap_or(&p)
                .display()
                .to_string();
            (name, std::fs::read_to_string(&p).expect("read page"))
        })
        .collect();
    let (failures, found) = check_pages(&pages);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README and the recipes page each have every client, and the token recipes.
    for page in ["README.md", "docs/serving.md"] {
        let clients = &found.iter().find(|(n, _)| n == page).expect("page").1;
        for want in [
            "claude-code",
            "claude-code+token",
            "cursor+token",
            "vscode+token",
            "claude-desktop",
        ] {
            let have = clients
                .iter()
                .any(|c| c == want || (!want.contains('+') && c.starts_with(want)));
            assert!(have, "{page} has no {want} recipe: {clients:?}");
        }
    }
}

#[test]
fn the_recipe_checker_rejects_what_the_clients_reject() {
    let page = "<!-- client: claude-code -->\n```sh\nclaude mcp add --transport http s https://gw/mcp --headers \"Authorization: Bearer x\"\nclaude mcp add s /home/me/.cargo/bin/mcp-sandbox serve\nclaude mcp add --scope global s -- /home/me/.cargo/bin/mcp-sandbox serve --htp x\n```\n\
<!-- client: claude-desktop -->\n```json\n{\"mcpServers\": {\"s\": {\"url\": \"https://gw/mcp\", \"headers\": {\"Authorization\": \"Bearer x\"}}}}\n```\n\
<!-- client: cursor -->\n```json\n{\"mcpServers\": {\"s\": {\"url\": \"https://gw/mcp\", \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}}}}\n```\n\
<!-- client: vscode -->\n```json\n{\"servers\": {\"s\": {\"url\": \"https://gw/mcp\", \"headers\": {\"Authorization\": \"Bearer ${input:t}\"}}}}\n```\n\
<!-- client: vscode -->\n```json\n{\"servers\": {\"s\": {\"type\": \"http\", \"url\": \"https://gw/mcp\", \"headers\": {\"Authorization\": \"Bearer ${input:t}\"}}}}\n```\n\
```json\n{\"mcpServers\": {\"s\": {\"command\": \"mcp-sandbox\", \"args\": [\"serve\"]}}}\n```\n";
    let (failures, _) = check_pages(&[("t.md".into(), page.into())]);
    let expected = [
        "has no --headers",
        "a stdio server needs `-- COMMAND`",
        "--scope takes local, user or project, not Some(\"global\")",
        "`mcp-sandbox serve --htp x` does not parse",
        "Claude Desktop does not connect to a remote server written in claude_desktop_config.json",
        "${TOKEN} is not a variable cursor expands",
        "VS Code needs \"type\": \"stdio\" or \"http\", not None",
        "${input:t} is not declared in \"inputs\"",
        "has no `<!-- client: … -->` marker",
    ];
    for want in expected {
        assert!(
            failures.iter().any(|f| f.contains(want)),
            "{want:?} not among {failures:#?}"
        );
    }
}
