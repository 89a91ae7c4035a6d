//! The `mcp.<server>.<tool>` a Python script names, read from its text (the host has no Python
//! parser): `mcp.X.Y` and `getattr(mcp.X, "Y")`, anywhere outside comments. Used to find the
//! capabilities a Python script calls before it runs. A name in a string literal is found too:
//! an extra lookup, never a missed one. No call is "certain" here (there is no flow analysis), so
//! an unknown name is refused when the script calls it (`TOOL_NOT_FOUND` from the runner), not
//! before.

use super::references::{References, ToolReference};

/// The references of `code`.
pub fn references(code: &str) -> References {
    let mut all = std::collections::BTreeSet::new();
    for line in code.lines() {
        let line = strip_comment(line);
        let mut rest = line;
        while let Some(at) = find_word(rest, "mcp") {
            let after = &rest[at + 3..];
            if let Some((server, tail)) = dotted(after) {
                if let Some((tool, _)) = dotted(tail) {
                    all.insert(ToolReference {
                        server: server.to_string(),
                        tool: tool.to_string(),
                    });
                } else if let Some(tool) = getattr_name(tail, &rest[..at]) {
                    all.insert(ToolReference {
                        server: server.to_string(),
                        tool,
                    });
                }
            }
            rest = after;
        }
    }
    References {
        all,
        certain_calls: Default::default(),
    }
}

/// `line` without a `#` comment (a `#` inside a string literal ends nothing).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// Where `word` starts in `s` as a whole identifier.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = s[from..].find(word) {
        let at = from + rel;
        let before = s[..at].chars().next_back();
        let after = s[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident(before) && !ident(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `.name` at the start of `s` (spaces allowed around the dot): the name and what follows.
fn dotted(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start().strip_prefix('.')?.trim_start();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map_or(s.len(), |(i, _)| i);
    let name = &s[..end];
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    valid.then(|| (name.trim_end_matches('-'), &s[end..]))
}

/// The tool of `getattr(mcp.X, "Y")`: `before` ends with `getattr(` and `tail` starts `, "Y")`.
fn getattr_name(tail: &str, before: &str) -> Option<String> {
    let before = before.trim_end().strip_suffix('(')?.trim_end();
    if !before.ends_with("getattr") {
        return None;
    }
    let tail = tail.trim_start().strip_prefix(',')?.trim_start();
    let quote = tail.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &tail[1..];
    let end = body.find(quote)?;
    Some(body[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(code: &str) -> Vec<String> {
        references(code).all.iter().map(|r| r.qualified()).collect()
    }

    #[test]
    fn attribute_chains_and_getattr_are_references() {
        let code = "import asyncio\nr = await mcp.reports.weekly(team='a')\nx = await getattr(mcp.fs, \"read-file\")(path='p')\ny = mcp . fixture . echo\n# mcp.commented.out(1)\ns = '# not a comment' ; z = await mcp.tools.add(a=1)\nnot_mcp.a.b\n";
        assert_eq!(
            names(code),
            [
                "fixture:echo",
                "fs:read-file",
                "reports:weekly",
                "tools:add"
            ]
        );
        assert!(references(code).certain_calls.is_empty());
    }
}
