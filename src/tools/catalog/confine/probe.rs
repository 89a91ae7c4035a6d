//! Whether confinement can work here: bubblewrap is installed and the kernel lets it make a
//! user namespace. Found once per process; a confined server that cannot be confined fails to
//! start (never silently unconfined).

use std::path::PathBuf;
use std::sync::OnceLock;

const FIX: &str = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or set \"confine\": false in the server's entry knowingly (it then runs with everything the gateway can reach)";

/// The bubblewrap executable, or why confinement cannot work (with how to fix it).
pub fn bwrap() -> Result<PathBuf, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(find).clone()
}

/// Names the bubblewrap executable instead of the `PATH` search.
pub const BWRAP_VAR: &str = "MCP_SANDBOX_BWRAP";

fn find() -> Result<PathBuf, String> {
    if let Some(given) = std::env::var_os(BWRAP_VAR).filter(|v| !v.is_empty()) {
        let given = PathBuf::from(given);
        if !given.is_file() {
            return Err(format!(
                "bubblewrap was not found at {} ({BWRAP_VAR}): {FIX}",
                given.display()
            ));
        }
        return try_run(given);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let exe = path
        .split(':')
        .chain(["/usr/bin", "/usr/local/bin"])
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("bubblewrap (`bwrap`) is not installed: {FIX}"))?;
    try_run(exe)
}

/// `exe` if it makes the namespaces a confined server needs.
fn try_run(exe: PathBuf) -> Result<PathBuf, String> {
    let out = std::process::Command::new(&exe)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--",
        ])
        // bubblewrap itself runs inside: a minimal image may have no /bin/true.
        .arg(&exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} cannot be run ({e}): {FIX}", exe.display()))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} cannot make its namespaces here ({}): {FIX}",
            exe.display(),
            said.trim()
        ));
    }
    Ok(exe)
}
