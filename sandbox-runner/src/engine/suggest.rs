//! "Did you mean": the configured tools closest to a name that is not one (both engines).

use std::collections::{BTreeMap, BTreeSet};

/// Up to three `server:tool` names closest to the one asked for: by tool name within the same
/// server, by the whole `server:tool` name across servers.
pub fn closest(
    tools: &BTreeMap<String, BTreeSet<String>>,
    server: &str,
    tool: &str,
) -> Vec<String> {
    let wanted = format!("{server}:{tool}");
    let mut scored: Vec<(f64, String)> = tools
        .iter()
        .flat_map(|(s, tools)| tools.iter().map(move |t| (s, t)))
        .map(|(s, t)| {
            let score = if s == server {
                strsim::normalized_damerau_levenshtein(tool, t)
            } else {
                strsim::normalized_damerau_levenshtein(&wanted, &format!("{s}:{t}")) * 0.9
            };
            (score, format!("{s}:{t}"))
        })
        .filter(|(score, _)| *score >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}
