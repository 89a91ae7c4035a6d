//! "Did you mean" for unknown tool names: the closest known `server:tool` names by edit
//! distance. The input is untrusted (a script or a runner chose it), so the work is bounded
//! before it starts: a name longer than [`MAX_NAME_BYTES`] gets no suggestions at all, at most
//! [`MAX_CANDIDATES`] names are compared (optimal string alignment, linear memory), and names
//! whose lengths are too far apart to score are skipped without comparing. Worst case:
//! `MAX_CANDIDATES` comparisons of 128-byte strings.

use crate::tools::catalog::MAX_NAME_BYTES;

/// How many suggestions at most.
pub const MAX_SUGGESTIONS: usize = 3;

/// How many known names are compared at most.
pub const MAX_CANDIDATES: usize = 1024;

/// The lowest similarity (0..1) that is still suggested.
const MIN_SCORE: f64 = 0.5;

/// Up to [`MAX_SUGGESTIONS`] `server.tool` names from `known` closest to `server.tool`, best
/// first: by tool name within the same server, by the whole name across servers.
pub fn closest<'a>(
    server: &str,
    tool: &str,
    known: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    if server.len() > MAX_NAME_BYTES || tool.len() > MAX_NAME_BYTES {
        return Vec::new();
    }
    let wanted = format!("{server}:{tool}");
    let mut scored: Vec<(f64, String)> = Vec::new();
    for (s, t) in known.into_iter().take(MAX_CANDIDATES) {
        if s.len() > MAX_NAME_BYTES || t.len() > MAX_NAME_BYTES {
            continue;
        }
        let full = format!("{s}:{t}");
        let (a, b, weight) = if s == server {
            (tool, t, 1.0)
        } else {
            (wanted.as_str(), full.as_str(), 0.9)
        };
        // normalized distance ≥ |len a − len b| / max len: skip pairs that cannot reach MIN_SCORE.
        let (la, lb) = (a.chars().count(), b.chars().count());
        let longest = la.max(lb).max(1) as f64;
        if (1.0 - la.abs_diff(lb) as f64 / longest) * weight < MIN_SCORE {
            continue;
        }
        let score = similarity(a, b) * weight;
        if score >= MIN_SCORE {
            scored.push((score, full));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, c)| c)
        .collect()
}

/// 1 − the optimal-string-alignment distance (edits and adjacent transpositions) over the longer
/// length: Damerau–Levenshtein's verdict for typos, in three rows of memory.
fn similarity(a: &str, b: &str) -> f64 {
    let longest = a.chars().count().max(b.chars().count());
    if longest == 0 {
        return 1.0;
    }
    1.0 - strsim::osa_distance(a, b) as f64 / longest as f64
}

/// `server:tool` as it may appear in a message (the one form every message and document uses
/// for a tool; code calls it as `mcp.server.tool`): escaped and cut to a readable length.
pub fn shown(server: &str, tool: &str) -> String {
    let full = format!("{server}:{tool}");
    crate::term::clip(&crate::term::escape(&full), 2 * MAX_NAME_BYTES + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn suggests_close_names_and_bounds_the_work() {
        let known = [
            ("fs", "read_file"),
            ("fs", "write_file"),
            ("mem", "read_graph"),
        ];
        assert_eq!(closest("fs", "read_fil", known)[0], "fs:read_file");
        assert!(closest("mem", "zzzzzzzz", known).is_empty());
        let huge = "r".repeat(4 * 1024 * 1024);
        let t = Instant::now();
        assert!(closest("fs", &huge, known).is_empty());
        let many: Vec<(String, String)> = (0..20_000)
            .map(|i| ("srv".to_string(), format!("{}{i}", "t".repeat(120))))
            .collect();
        let long = "t".repeat(128);
        let _ = closest(
            "srv",
            &long,
            many.iter().map(|(s, t)| (s.as_str(), t.as_str())),
        );
        // A hang guard, not a speed figure: unbounded work (a 4 MiB name against every tool,
        // 20,000 names of 120 characters) takes minutes; the bounded work took 3 s unoptimized
        // on a busy 2-core machine.
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    }
}
