//! The escape matrix against the Python engine (issue 48 item 5): what a script would use to
//! reach the machine — files, the environment, processes, sockets, native code, dynamic code,
//! deep recursion, huge allocations, endless loops — each refused by the interpreter or stopped
//! by the runner's limits, with a structured outcome; none crashes the runner or the host, and
//! every lockdown layer is reported enforced. Also: Python monty lacks fails naming the construct
//! and the line (item 3).

use crate::python_scripts::run_py;
use serde_json::{json, Value};

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": {}}).to_string()).unwrap();
    path
}

/// (script, error code, the message's beginning)
const ESCAPES: &[(&str, &str, &str)] = &[
    (
        "open('/etc/passwd').read()",
        "RUNTIME_ERROR",
        "PermissionError: PERMISSION_DENIED: open is not available: the sandbox has no filesystem",
    ),
    (
        "from pathlib import Path\nPath('/proc/self/environ').read_bytes()",
        "RUNTIME_ERROR",
        "PermissionError: PERMISSION_DENIED: Path.read_bytes is not available",
    ),
    (
        "import os\nos.system('id')",
        "RUNTIME_ERROR",
        "AttributeError: module 'os' has no attribute 'system' (line 2)",
    ),
    (
        "import subprocess",
        "RUNTIME_ERROR",
        "ModuleNotFoundError: No module named 'subprocess' (line 1)",
    ),
    (
        "import socket",
        "RUNTIME_ERROR",
        "ModuleNotFoundError: No module named 'socket' (line 1)",
    ),
    (
        "import ctypes",
        "RUNTIME_ERROR",
        "ModuleNotFoundError: No module named 'ctypes' (line 1)",
    ),
    (
        "import importlib",
        "RUNTIME_ERROR",
        "ModuleNotFoundError: No module named 'importlib' (line 1)",
    ),
    (
        "__import__('os')",
        "RUNTIME_ERROR",
        "NameError: name '__import__' is not defined (line 1)",
    ),
    (
        "eval('1 + 1')",
        "RUNTIME_ERROR",
        "NameError: name 'eval' is not defined (line 1)",
    ),
    (
        "exec('x = 1')",
        "RUNTIME_ERROR",
        "NameError: name 'exec' is not defined (line 1)",
    ),
    (
        "compile('1', 'f', 'eval')",
        "RUNTIME_ERROR",
        "NameError: name 'compile' is not defined (line 1)",
    ),
    (
        "def f(n):\n    return f(n + 1)\nf(0)",
        "RUNTIME_ERROR",
        "RecursionError: maximum recursion depth exceeded",
    ),
    (
        "x = 'a' * (10 ** 10)",
        "MEMORY_LIMIT",
        "the script ran out of memory",
    ),
    (
        "x = [0] * (10 ** 9)",
        "MEMORY_LIMIT",
        "the script ran out of memory",
    ),
    (
        "l = []\nwhile True:\n    l.append('x' * 1000)",
        "MEMORY_LIMIT",
        "the script ran out of memory",
    ),
    (
        "2 ** (2 ** 40)",
        "MEMORY_LIMIT",
        "the script ran out of memory",
    ),
    (
        "while True:\n    pass",
        "CPU_LIMIT",
        "the script used more than 2000 ms of CPU time",
    ),
    ("import os\nos.environ", "", ""),
];

fn check(o: &Value, code: &str, start: &str, script: &str) {
    if code.is_empty() {
        assert_eq!(o["success"], true, "{script}: {o}");
        return;
    }
    assert_eq!(o["success"], false, "{script}: {o}");
    assert_eq!(o["error"]["code"], code, "{script}: {o}");
    let message = o["error"]["message"].as_str().unwrap();
    assert!(message.starts_with(start), "{script}: {message}");
}

#[test]
fn every_way_out_is_refused_or_stopped_with_a_structured_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    for (script, code, start) in ESCAPES {
        let (o, _) = run_py(
            dir.path(),
            &config,
            script,
            &["--cpu-ms", "2000", "--memory-mb", "64"],
        );
        check(&o, code, start, script);
        for (layer, state) in o["metrics"]["isolation"].as_object().unwrap() {
            assert!(
                state.as_str().unwrap().starts_with("enforced"),
                "{script}: layer {layer} is {state}"
            );
        }
    }
    // The environment a script sees is empty (the host starts the runner with none).
    let (o, _) = run_py(
        dir.path(),
        &config,
        "import os\n[os.getenv('HOME'), os.getenv('PATH', 'none'), dict(os.environ)]",
        &[],
    );
    assert_eq!(o["result"], json!([null, "none", {}]), "{o}");
}

/// (script, the message's beginning): Python that monty 0.0.23 does not have.
const UNSUPPORTED: &[(&str, &str, &str)] = &[
    (
        "class A(Exception):\n    pass",
        "SYNTAX_ERROR",
        "NotImplementedError: The monty syntax parser does not yet support class inheritance and metaclasses (line 1). Python scripts run on monty",
    ),
    (
        "x = 1\nmatch x:\n    case 1:\n        pass",
        "SYNTAX_ERROR",
        "NotImplementedError: The monty syntax parser does not yet support pattern matching (match statements) (line 2)",
    ),
    (
        "import numpy",
        "RUNTIME_ERROR",
        "ModuleNotFoundError: No module named 'numpy' (line 1). Python scripts run on monty",
    ),
    (
        "x = = 1",
        "SYNTAX_ERROR",
        "SyntaxError: ",
    ),
];

#[test]
fn python_monty_lacks_fails_naming_the_construct_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    for (script, code, start) in UNSUPPORTED {
        let (o, _) = run_py(dir.path(), &config, script, &[]);
        check(&o, code, start, script);
    }
}
