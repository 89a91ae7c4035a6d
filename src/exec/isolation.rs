//! What the kernel shows about a runner's isolation, read by the host from `/proc/<pid>` after
//! the runner said `ready`: the runner's own report is a claim, this is the evidence. One source
//! of truth for the session (which refuses a runner missing a required layer), the pool (which
//! checks each pre-started runner the same way, since it comes from the same `runner::start`),
//! `mcp-sandbox check`, and the outcome's metrics.
//!
//! | layer | what the host reads | enforced when |
//! |---|---|---|
//! | seccomp | `Seccomp:` in `status` | `2` (filter mode) |
//! | no_new_privs | `NoNewPrivs:` in `status` | `1` |
//! | uid | `Uid:`, `Gid:` and `CapEff:` in `status` | no uid is 0 or the host's own, and no capability |
//! | namespaces | `/proc/<pid>/ns/{user,net,ipc,uts,mnt}` against `/proc/self/ns/*` | every one differs |
//! | namespaces, non-root host | `uid_map`, `net/unix`, `mountinfo` against the host's (the `ns` links need root) | user, net and mount seen to differ; ipc and uts made in the same `unshare` |
//! | rlimits | `Max address space`, `Max cpu time` in `limits` | both finite |
//! | landlock, fds | not visible to another process | taken from the runner, marked so |

use std::collections::BTreeMap;

/// The namespaces a runner must not share with the host.
const NAMESPACES: [&str; 5] = ["user", "net", "ipc", "uts", "mnt"];

/// What `/proc` shows about one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub seccomp: Option<String>,
    pub no_new_privs: Option<String>,
    /// `Uid:` (real, effective, saved, fs), tab-separated as the kernel prints it.
    pub uid: Option<String>,
    pub cap_eff: Option<String>,
    pub cap_prm: Option<String>,
    /// Namespaces shared with the host, or why they could not be compared.
    pub shared_namespaces: Result<Vec<String>, String>,
    /// When the `ns` links could not be read (a host that is not root may not read them: the
    /// runner is not dumpable), what the files it may read show: `Ok(evidence)` when the user,
    /// network and mount namespaces are seen to be the runner's own, `Err(which is not)`.
    pub namespaces_indirect: Option<Result<String, String>>,
    /// `Max address space` and `Max cpu time` soft limits, as the kernel prints them.
    pub address_space: Option<String>,
    pub cpu_time: Option<String>,
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .map(|v| v.trim().to_string())
}

/// The soft limit of one row of `/proc/<pid>/limits`.
fn soft_limit(text: &str, row: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(row))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
}

/// The host's own namespaces, read once: a process's namespaces change only if it calls
/// `setns`/`unshare`, which the host never does (this halves the `/proc` reads per runner).
fn own_namespaces() -> &'static Result<Vec<std::path::PathBuf>, String> {
    static OURS: std::sync::OnceLock<Result<Vec<std::path::PathBuf>, String>> =
        std::sync::OnceLock::new();
    OURS.get_or_init(|| {
        NAMESPACES
            .iter()
            .map(|ns| {
                std::fs::read_link(format!("/proc/self/ns/{ns}"))
                    .map_err(|e| format!("cannot read /proc/self/ns/{ns}: {e}"))
            })
            .collect()
    })
}

fn shared_namespaces(pid: u32) -> Result<Vec<String>, String> {
    let ours = own_namespaces().as_ref().map_err(Clone::clone)?;
    let mut shared = Vec::new();
    for (ns, ours) in NAMESPACES.iter().zip(ours) {
        let theirs = std::fs::read_link(format!("/proc/{pid}/ns/{ns}"))
            .map_err(|e| format!("cannot read /proc/{pid}/ns/{ns}: {e}"))?;
        if &theirs == ours {
            shared.push(ns.to_string());
        }
    }
    Ok(shared)
}

/// The namespaces as a host that may not read `/proc/<pid>/ns` sees them, from files any process
/// of the same user may read:
/// - user: `uid_map` differs from the host's (a process in the host's user namespace shows the
///   host's map);
/// - network: `net/unix` lists no socket, while the host's lists at least the socketpair it
///   holds to this runner (a socket belongs to the namespace it was made in);
/// - mount: `mountinfo` differs from the host's (the runner's root is its own empty tmpfs).
///
/// IPC and UTS have no such file; the runner makes them in the same `unshare` call as the
/// user namespace (all or none), so they follow from it and its report.
fn indirect_namespaces(pid: u32) -> Result<String, String> {
    let read = |path: String| {
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
    };
    if read(format!("/proc/{pid}/uid_map"))? == read("/proc/self/uid_map".into())? {
        return Err("it shares the host's user namespace (the same uid_map)".into());
    }
    let sockets = |text: String| text.lines().skip(1).count();
    let (theirs, ours) = (
        sockets(read(format!("/proc/{pid}/net/unix"))?),
        sockets(read("/proc/self/net/unix".into())?),
    );
    if theirs != 0 || ours == 0 {
        return Err(format!(
            "its network namespace cannot be told from the host's ({theirs} Unix sockets in it, {ours} in the host's)"
        ));
    }
    if read(format!("/proc/{pid}/mountinfo"))? == read("/proc/self/mountinfo".into())? {
        return Err("it shares the host's mount namespace (the same mountinfo)".into());
    }
    Ok("the kernel shows its own user (uid_map), network (no host socket) and mount (mountinfo) namespaces; ipc and uts made in the same unshare call; the ns links need root to read".into())
}

/// Reads what the kernel shows about `pid` (a few small `/proc` files; no process is stopped).
pub fn observe(pid: u32) -> Observed {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    let shared = shared_namespaces(pid);
    Observed {
        seccomp: field(&status, "Seccomp:"),
        no_new_privs: field(&status, "NoNewPrivs:"),
        uid: field(&status, "Uid:"),
        cap_eff: field(&status, "CapEff:"),
        cap_prm: field(&status, "CapPrm:"),
        shared_namespaces: shared.clone(),
        namespaces_indirect: shared.is_err().then(|| indirect_namespaces(pid)),
        address_space: soft_limit(&limits, "Max address space"),
        cpu_time: soft_limit(&limits, "Max cpu time"),
    }
}

/// The host's effective uid.
fn host_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Each layer as the kernel shows it: `enforced (…)` or `unavailable: why`. A layer the runner
/// itself reports unavailable stays so; layers the kernel does not show keep the runner's word,
/// marked as such.
pub fn verify(claimed: &BTreeMap<String, String>, seen: &Observed) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let seccomp = match seen.seccomp.as_deref() {
        Some("2") => "enforced (the kernel shows Seccomp: 2)".to_string(),
        _ => format!(
            "unavailable: the kernel shows Seccomp: {} (2 is a filter)",
            show(&seen.seccomp)
        ),
    };
    out.insert("seccomp".to_string(), seccomp);
    let nnp = match seen.no_new_privs.as_deref() {
        Some("1") => "enforced (the kernel shows NoNewPrivs: 1)".to_string(),
        _ => format!(
            "unavailable: the kernel shows NoNewPrivs: {}",
            show(&seen.no_new_privs)
        ),
    };
    out.insert("no_new_privs".to_string(), nnp);
    out.insert("uid".to_string(), uid_layer(seen));
    let ns = match &seen.shared_namespaces {
        Ok(shared) if shared.is_empty() => {
            "enforced (the kernel shows its own user, net, ipc, uts and mount namespaces)"
                .to_string()
        }
        Ok(shared) => format!(
            "unavailable: it shares the host's {} namespace(s)",
            shared.join(", ")
        ),
        Err(e) => match &seen.namespaces_indirect {
            Some(Ok(evidence)) => format!("enforced ({evidence})"),
            Some(Err(why)) => format!("unavailable: {why}"),
            None => format!("unavailable: cannot be verified ({e})"),
        },
    };
    out.insert("namespaces".to_string(), ns);
    let finite = |v: &Option<String>| v.as_deref().is_some_and(|v| v != "unlimited");
    let rl = if finite(&seen.address_space) && finite(&seen.cpu_time) {
        format!(
            "enforced (the kernel shows address space {} bytes, cpu {} s)",
            show(&seen.address_space),
            show(&seen.cpu_time)
        )
    } else {
        format!(
            "unavailable: the kernel shows address space {}, cpu time {}",
            show(&seen.address_space),
            show(&seen.cpu_time)
        )
    };
    out.insert("rlimits".to_string(), rl);
    // A layer is enforced only when the kernel shows it and the runner does not say otherwise
    // (a runner may know it fell short in a way /proc cannot show).
    for (layer, state) in claimed {
        if !state.starts_with("enforced") {
            out.insert(layer.clone(), state.clone());
        }
    }
    for (layer, state) in claimed {
        out.entry(layer.clone()).or_insert_with(|| {
            if state.starts_with("enforced") {
                format!("{state} (as the runner reports it; not visible in /proc)")
            } else {
                state.clone()
            }
        });
    }
    out
}

fn uid_layer(seen: &Observed) -> String {
    let Some(uids) = &seen.uid else {
        return "unavailable: the kernel shows no Uid line".into();
    };
    let ids: Vec<u32> = uids
        .split_whitespace()
        .filter_map(|u| u.parse().ok())
        .collect();
    let host = host_uid();
    if ids.len() != 4 {
        return format!("unavailable: cannot read the uids ({uids:?})");
    }
    if ids.contains(&0) {
        return "unavailable: the runner runs as root (uid 0); start the host as root so it can drop to an unprivileged uid".into();
    }
    if ids.contains(&host) {
        return format!(
            "unavailable: the runner keeps the host's own uid {host} (give the host's user a range in /etc/subuid and /etc/subgid, or start the host as root, so the runner runs as an unused uid)"
        );
    }
    match seen.cap_eff.as_deref() {
        Some(caps) if caps.trim_start_matches('0').is_empty() => {
            format!(
                "enforced (the kernel shows uid {}, no capabilities)",
                ids[1]
            )
        }
        other => format!(
            "unavailable: the runner holds capabilities (CapEff: {})",
            other.unwrap_or("?")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_isolated_and_says_so() {
        let seen = observe(std::process::id());
        let v = verify(&BTreeMap::new(), &seen);
        assert!(
            v["namespaces"].contains("user, net, ipc, uts, mnt"),
            "{v:?}"
        );
        assert!(v["seccomp"].starts_with("unavailable"), "{v:?}");
        let claimed = BTreeMap::from([("landlock".to_string(), "enforced (abi 7)".to_string())]);
        let v = verify(&claimed, &seen);
        assert!(v["landlock"].contains("as the runner reports it"), "{v:?}");
    }
}
