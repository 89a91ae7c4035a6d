//! Whether confinement can work here: bubblewrap is installed (found once per process, before
//! the first confined start) and the kernel lets it make its namespaces (a trial run, made only
//! after a confined start failed, to say why: a machine where confinement works never pays it).
//! A confined server that cannot be confined fails to start (never silently unconfined).

use std::path::PathBuf;
use std::sync::OnceLock;

const FIX: &str = "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or set \"confine\": false in the server's entry knowingly (it then runs with everything the gateway can reach)";

/// The bubblewrap executable, or why confinement cannot work (with how to fix it).
pub fn bwrap() -> Result<PathBuf, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND.get_or_init(find).clone()
}

/// Why bubblewrap cannot make a confined server's namespaces here (with how to fix it), or
/// `None` when it can: for a confined start that failed. One trial run per process.
pub fn why_not() -> Option<String> {
    static TRIED: OnceLock<Option<String>> = OnceLock::new();
    TRIED
        .get_or_init(|| match bwrap() {
            Ok(exe) => try_run(exe).err(),
            Err(why) => Some(why),
        })
        .clone()
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
        return Ok(given);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/bin", "/usr/local/bin"])
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("bwrap"))
        .find(|p| p.is_file());
    found.ok_or_else(|| format!("bubblewrap (`bwrap`) is not installed: {FIX}"))
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
