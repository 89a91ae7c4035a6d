//! No Python script kills the runner (issue 58, item 1), through the real CLI and runner: the
//! inputs that ended `RUNNER_CRASHED` with SIGSYS (a stack overflow in the parser, an allocation
//! the address-space limit refused, answers held for a `gather` past the memory limit) end with
//! a code that says what to do, and generated scripts of the same families never crash it.

use crate::python_scripts::{fixture, run_py, write_config};
use serde_json::{json, Value};

fn code(o: &Value) -> &str {
    o["error"]["code"].as_str().unwrap_or_else(|| panic!("{o}"))
}

#[test]
fn a_long_expression_chain_is_refused_before_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let chain = format!("a = 1\nx = {}1\nx\n", "1+".repeat(115_000));
    let (o, _) = run_py(dir.path(), &config, &chain, &[]);
    assert_eq!(
        o["error"]["message"],
        "line 2: the script nests expressions more than 1000 levels deep (each open bracket, and each operator of one chain such as 1+1+… or a.b.c…, is a level; monty accepts 200): build the value in steps, with a loop or intermediate variables",
        "{o}"
    );
    assert_eq!(code(&o), "LIMIT_EXCEEDED");
    for src in [
        format!("x = a{}\n", ".b".repeat(100_000)),
        format!("x = f{}\n", "()".repeat(100_000)),
    ] {
        let (o, _) = run_py(dir.path(), &config, &src, &[]);
        assert_eq!(code(&o), "LIMIT_EXCEEDED", "{o}");
    }
    // Within the scan's bound but past monty's own: monty's refusal, not a crash.
    let (o, _) = run_py(
        dir.path(),
        &config,
        &format!("x = {}1\n", "1+".repeat(450)),
        &[],
    );
    assert_eq!(code(&o), "SYNTAX_ERROR", "{o}");
    // An ordinary long flat script still runs.
    let flat = format!("xs = [{}]\nlen(xs)\n", "-1, ".repeat(20_000));
    let (o, _) = run_py(dir.path(), &config, &flat, &[]);
    assert_eq!(o["result"], 20_000, "{o}");
}

#[test]
fn a_huge_split_is_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let (o, _) = run_py(
        dir.path(),
        &config,
        "parts = ('a,' * 12_000_000).split(',')\nlen(parts)\n",
        &[],
    );
    assert_eq!(code(&o), "MEMORY_LIMIT", "{o}");
}

#[test]
fn many_large_answers_held_for_a_gather_are_memory_limit() {
    // Two calls at a time and a small memory limit: the runner holds more than `memory_mb` after
    // a few answers, long before the host's bound on answers it has not read yet (32 MiB, eight
    // of these) could end the run first.
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"fixture": fixture()}),
        json!({"limits": {"max_concurrent_calls": 2}}),
    );
    let (o, _) = run_py(
        dir.path(),
        &config,
        "import asyncio\nrs = await asyncio.gather(*[mcp.fixture.big(bytes=4_000_000) for _ in range(40)])\nlen(rs)\n",
        &["--memory-mb", "16"],
    );
    assert_eq!(code(&o), "MEMORY_LIMIT", "{o}");
}

/// A small seeded generator (xorshift): scripts of the families that crashed the runner, and
/// their neighbours; none may end `RUNNER_CRASHED`.
#[test]
fn generated_scripts_never_crash_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fixture": fixture()}), json!({}));
    let mut seed: u64 = 0x5eed_0058;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let ops = ["+", "-", "*", ".real+", " and ", " or ", " if 1 else "];
    let mut scripts = Vec::new();
    for _ in 0..6 {
        let n = 100 + next(60_000) as usize;
        let op = ops[next(ops.len() as u64) as usize];
        let src = match next(6) {
            0 => format!("x = {}1\n", format!("1{op}").repeat(n)),
            1 => format!("x = {}1{}\n", "(".repeat(n % 3_000), ")".repeat(n % 3_000)),
            2 => format!("x = {}1{}\n", "[".repeat(n % 3_000), "]".repeat(n % 3_000)),
            3 => format!("x = ('ab,' * {}).split(',')\nlen(x)\n", n * 200),
            4 => format!("s = '-'.join(['x'] * {})\nlen(s)\n", n * 100),
            _ => format!("x = {}y\n", "not ".repeat(n)),
        };
        scripts.push(src);
    }
    for src in scripts {
        let (o, _) = run_py(dir.path(), &config, &src, &["--memory-mb", "64"]);
        let what: String = src.chars().take(60).collect();
        assert_ne!(o["error"]["code"], "RUNNER_CRASHED", "{what}…: {o}");
        assert_ne!(o["error"]["code"], "PROTOCOL_ERROR", "{what}…: {o}");
    }
}
