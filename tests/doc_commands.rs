//! Every `mcp-sandbox` command the README and docs/ show is one the program accepts (issue 47
//! item 6). The `console` blocks are run and their output compared by `tests/walkthrough.rs`;
//! this file checks the rest with the real command-line parser (`Cli`), so a renamed flag or
//! subcommand fails here until the page says the new thing:
//!
//! - every command line of a `sh`/`bash`/`shell`/`console` block (continuations joined, split at
//!   `&&`, `||`, `|`, `;`), and the `command` + `args` of a JSON client entry that starts
//!   `mcp-sandbox`, must parse completely;
//! - a synopsis (an unlabelled block) and an inline `` `mcp-sandbox …` `` span name only
//!   subcommands that exist and `--flags` those subcommands take;
//! - any other program in a block must be one of [`OTHER_PROGRAMS`], each with where it is run.
//!
//! And the README's policy example is the `sandbox` section of the config its commands use.

use crate::common::repo_root;
use clap::{CommandFactory, Parser};
use mcp_sandbox::front::cli::command::Cli;
use std::path::Path;

/// Programs other than `mcp-sandbox` that pages may show, and what runs them.
const OTHER_PROGRAMS: &[(&str, &str)] = &[
    (
        "cargo",
        ".ci/run runs the README's build; tests/install_layout.rs checks the installed layout",
    ),
    ("scripts/test.sh", ".ci/run (the README's test command)"),
    ("scripts/setup.sh", ".ci/run, before the tests"),
    (
        "benches/compare.sh",
        "the benchmark notes (docs/performance.md); not run by the tests",
    ),
    (
        "target/release/deps/sandbox-<hash>",
        "the benchmark (.ci/run's benchmark step)",
    ),
    (
        ".venv/bin/python",
        "tests/walkthrough.rs runs the walkthrough's agent",
    ),
    (
        "claude",
        "Claude Code's CLI; the mcp-sandbox command it is given is parsed here",
    ),
    (
        "apt-get",
        "the operator's install of Debian packages (docs/deploy.md: uidmap); scripts/setup.sh runs it",
    ),
    (
        "usermod",
        "the operator's subordinate id range (docs/deploy.md); scripts/setup.sh writes the test user's range",
    ),
    (
        "sudo",
        "the operator's PostgreSQL setup (docs/multi-gateway.md); not run by the tests",
    ),
    (
        "npm",
        "the walkthrough's setup (`npm ci`, as scripts/setup.sh runs it); .ci/run runs setup.sh",
    ),
    (
        "python3",
        "the walkthrough's setup of .venv (as scripts/setup.sh makes it)",
    ),
    (
        ".venv/bin/pip",
        "the walkthrough's setup of .venv (as scripts/setup.sh fills it)",
    ),
    (
        "deploy/build-image.sh",
        "tests/container_image.rs builds the image with it",
    ),
    (
        "podman",
        "tests/container_image.rs runs the image under Debian's podman",
    ),
    (
        "install",
        "the operator's install under systemd (docs/deploy.md); tests/deploy_files.rs verifies the unit",
    ),
    ("openssl", "the operator's key (docs/deploy.md); not run by the tests"),
    ("chmod", "the operator's key (docs/deploy.md); not run by the tests"),
    (
        "systemctl",
        "the operator's systemd (docs/deploy.md); tests/deploy_files.rs runs systemd-analyze verify",
    ),
    ("export", "a shell builtin"),
    ("echo", "a shell builtin"),
];

/// The pages checked: the README and every page of docs/.
pub(crate) fn pages() -> Vec<std::path::PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced block: its info string and lines.
struct Block {
    lang: String,
    lines: Vec<String>,
}

/// The fenced blocks of a page, and its text outside them.
fn split_page(text: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<Block> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            match open.take() {
                Some(b) => blocks.push(b),
                None => {
                    open = Some(Block {
                        lang: info.trim().to_string(),
                        lines: Vec::new(),
                    })
                }
            }
            continue;
        }
        match open.as_mut() {
            Some(b) => b.lines.push(line.to_string()),
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    (blocks, prose)
}

/// Shell words of one command line, split into commands at `&&`, `||`, `|`, `;`; quotes
/// removed, a `#` comment dropped.
pub(crate) fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '#' if word.is_none() => break,
            '&' | '|' | ';' => {
                if let Some(w) = word.take() {
                    commands.last_mut().expect("a command").push(w);
                }
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                commands.push(Vec::new());
            }
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    commands.last_mut().expect("a command").push(w);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word {
        commands.last_mut().expect("a command").push(w);
    }
    commands.retain(|c| !c.is_empty());
    commands
}

/// The command lines of a shell or console block, continuations joined.
fn block_command_lines(block: &Block) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in &block.lines {
        let line = if block.lang == "console" {
            match line.trim_start().strip_prefix("$ ") {
                Some(cmd) => cmd,
                None if !pending.is_empty() => line.as_str(),
                None => continue,
            }
        } else {
            line.as_str()
        };
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
            }
            None => {
                pending.push_str(line);
                if !pending.trim().is_empty() {
                    out.push(std::mem::take(&mut pending));
                }
                pending.clear();
            }
        }
    }
    out
}

pub(crate) fn is_host(word: &str) -> bool {
    Path::new(word)
        .file_name()
        .is_some_and(|n| n == "mcp-sandbox")
}

/// Checks one shell command: an `mcp-sandbox` command parses; any other program is known.
fn check_command(words: &[String], at: &str, failures: &mut Vec<String>) {
    let words: Vec<&String> = words
        .iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    let Some(program) = words.first() else {
        return;
    };
    if let Some(i) = words.iter().position(|w| is_host(w)) {
        if let Err(e) = Cli::try_parse_from(words[i..].iter().map(|w| w.as_str())) {
            failures.push(format!(
                "{at}: `{}` does not parse: {e}",
                words
                    .iter()
                    .map(|w| w.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        if i == 0 {
            return;
        }
    }
    if !OTHER_PROGRAMS.iter().any(|(p, _)| p == program) {
        failures.push(format!(
            "{at}: `{program}` is neither mcp-sandbox nor in OTHER_PROGRAMS (say what runs it)"
        ));
    }
}

/// Checks that a partial command (a synopsis or an inline span) names an existing subcommand and
/// only `--flags` it takes.
fn check_names(text: &str, at: &str, failures: &mut Vec<String>) {
    let mut cmd = Cli::command();
    cmd.build();
    let words: Vec<&str> = text.split_whitespace().skip(1).collect();
    let mut current = &cmd;
    let mut path = vec!["mcp-sandbox".to_string()];
    for w in &words {
        match current.find_subcommand(w) {
            Some(sub) => {
                current = sub;
                path.push(w.to_string());
            }
            None => break,
        }
    }
    if path.len() == 1 {
        failures.push(format!("{at}: `{text}` names no subcommand"));
        return;
    }
    for w in words
        .iter()
        .filter_map(|w| w.trim_start_matches(['[', '(']).strip_prefix("--"))
    {
        let name: String = w
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.is_empty() {
            continue;
        }
        let known = name == "help"
            || current.get_arguments().any(|a| {
                a.get_long() == Some(name.as_str())
                    || a.get_all_aliases()
                        .is_some_and(|al| al.contains(&name.as_str()))
            });
        if !known {
            failures.push(format!(
                "{at}: `{}` takes no --{name} (in `{text}`)",
                path.join(" ")
            ));
        }
    }
}

/// The `mcp-sandbox …` commands of an unlabelled block (a synopsis): indented lines continue the
/// previous one, and a line may hold two.
fn synopsis_commands(block: &Block) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in &block.lines {
        let starts = line.starts_with("mcp-sandbox ");
        if !starts && line.starts_with(' ') && !out.is_empty() {
            let last = out.last_mut().expect("a command");
            last.push(' ');
            last.push_str(line.trim());
            continue;
        }
        if starts {
            for part in line.split("mcp-sandbox ").skip(1) {
                out.push(format!("mcp-sandbox {}", part.trim()));
            }
        }
    }
    out
}

/// The `command` + `args` entries of a JSON block whose command is `mcp-sandbox`.
fn json_host_commands(block: &Block) -> Vec<Vec<String>> {
    let text = block.lines.join("\n");
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(servers) = value["mcpServers"].as_object() {
        for entry in servers.values() {
            if entry["command"].as_str().is_some_and(is_host) {
                let mut words = vec!["mcp-sandbox".to_string()];
                for a in entry["args"].as_array().into_iter().flatten() {
                    words.push(a.as_str().unwrap_or_default().to_string());
                }
                out.push(words);
            }
        }
    }
    out
}

#[test]
fn every_command_in_readme_and_docs_is_one_the_program_accepts() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for page in pages() {
        let name = page
            .strip_prefix(repo_root())
            .unwrap_or(&page)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&page).expect("read page");
        let (blocks, prose) = split_page(&text);
        for (i, block) in blocks.iter().enumerate() {
            let at = format!("{name}, block {}", i + 1);
            match block.lang.as_str() {
                "sh" | "bash" | "shell" | "console" => {
                    for line in block_command_lines(block) {
                        for words in shell_commands(&line) {
                            parsed += words.iter().any(|w| is_host(w)) as usize;
                            check_command(&words, &at, &mut failures);
                        }
                    }
                }
                "json" => {
                    for words in json_host_commands(block) {
                        parsed += 1;
                        check_command(&words, &at, &mut failures);
                    }
                }
                "" => {
                    for cmd in synopsis_commands(block) {
                        check_names(&cmd, &at, &mut failures);
                    }
                }
                _ => {}
            }
        }
        let prose = prose.replace('\n', " ");
        for span in prose.split('`').skip(1).step_by(2) {
            if span.starts_with("mcp-sandbox ") {
                check_names(span, &format!("{name}, inline"), &mut failures);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README's own commands alone are more than this: the walk found the blocks.
    assert!(parsed >= 30, "only {parsed} mcp-sandbox commands found");
}

#[test]
fn readme_policy_example_is_the_config_its_commands_use() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README");
    let (blocks, _) = split_page(&readme);
    let shown = blocks
        .iter()
        .find(|b| {
            b.lang == "json"
                && b.lines
                    .first()
                    .is_some_and(|l| l.starts_with("\"sandbox\""))
        })
        .expect("the README shows a `\"sandbox\": {…}` policy example");
    assert!(
        shown.lines.len() <= 10,
        "the policy example is {} lines",
        shown.lines.len()
    );
    let shown: serde_json::Value =
        serde_json::from_str(&format!("{{{}}}", shown.lines.join("\n"))).expect("example is JSON");
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("docs/walkthrough/guarded.json"))
            .expect("config"),
    )
    .expect("guarded.json is JSON");
    assert_eq!(shown["sandbox"], config["sandbox"]);
}

#[test]
fn the_checker_rejects_what_the_program_rejects() {
    let mut failures = Vec::new();
    for line in [
        "mcp-sandbox run x.js --no-such-flag",
        "mcp-sandbox serve --config a.json && mcp-sandbox frobnicate",
        "claude mcp add s -- /bin/mcp-sandbox serve --htp 127.0.0.1:1",
        "unknown-tool --x",
    ] {
        for words in shell_commands(line) {
            check_command(&words, "t", &mut failures);
        }
    }
    check_names("mcp-sandbox audit --since 1h --bogus", "t", &mut failures);
    check_names("mcp-sandbox nothing", "t", &mut failures);
    let got: Vec<&str> = failures
        .iter()
        .map(|f| f.split(':').nth(1).unwrap_or("").trim())
        .collect();
    assert_eq!(failures.len(), 6, "{failures:#?} {got:?}");
    assert!(failures[0].contains("`mcp-sandbox run x.js --no-such-flag` does not parse"));
    assert!(failures[1].contains("`mcp-sandbox frobnicate` does not parse"));
    assert!(failures[2].contains("serve --htp 127.0.0.1:1` does not parse"));
    assert!(failures[3].contains("`unknown-tool` is neither mcp-sandbox nor in OTHER_PROGRAMS"));
    assert_eq!(
        failures[4],
        "t: `mcp-sandbox audit` takes no --bogus (in `mcp-sandbox audit --since 1h --bogus`)"
    );
    assert_eq!(failures[5], "t: `mcp-sandbox nothing` names no subcommand");
}
