//! What to change so a layer that does not hold here does: one sentence per layer, chosen from
//! the cause the runner or the kernel reported. `mcp-sandbox check` prints it under the layer;
//! `run` and `serve` print it once at start, with the layers that do not hold (fewer layers is
//! never silent). docs/deploy.md says the same per platform.

use std::collections::BTreeMap;

/// The layers a runner applies, in the order `check` explains them.
pub const ALL_LAYERS: [&str; 8] = [
    "seccomp",
    "no_new_privs",
    "rlimits",
    "namespaces",
    "empty_root",
    "uid",
    "landlock",
    "fds",
];

/// Whether a layer's state says it holds.
pub fn holds(state: &str) -> bool {
    state.starts_with("enforced")
}

/// The layers of `layers` (name → state) that do not hold, each with its state.
pub fn not_held(layers: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    layers
        .iter()
        .filter(|(_, state)| !holds(state))
        .map(|(l, s)| (l.as_str(), s.as_str()))
        .collect()
}

/// The change that makes `layer` hold, given the state it was reported in.
pub fn fix_for(layer: &str, state: &str) -> String {
    let refused = state.contains("EPERM") || state.contains("not permitted");
    match layer {
        "namespaces" if state.contains("cannot be verified") => {
            "the host cannot read the runner's /proc/<pid>/ns links; run `check` as the same user as the gateway".into()
        }
        "namespaces" if state.contains("ENOSPC") || state.contains("EUSERS") => {
            "raise the user namespace limit (sysctl user.max_user_namespaces, e.g. 15000)".into()
        }
        "namespaces" if refused => {
            "unshare(CLONE_NEWUSER) is refused: in a container, run it with the shipped seccomp profile (podman or docker run --security-opt seccomp=deploy/seccomp.json; Kubernetes: seccompProfile Localhost), whose default refuses it without CAP_SYS_ADMIN; on a host, allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0). docs/deploy.md".into()
        }
        "namespaces" => {
            "the kernel must support user namespaces (CONFIG_USER_NS) and let this user create them; see docs/deploy.md".into()
        }
        "empty_root" if state.contains("mount namespace") => {
            "needs the namespaces layer: fix that first".into()
        }
        "empty_root" => {
            "mount(2)/pivot_root(2) inside the runner's own user namespace are refused: run the container with deploy/seccomp.json and, where AppArmor confines containers, without the runtime's default AppArmor profile (--security-opt apparmor=unconfined; Kubernetes: appArmorProfile Unconfined). docs/deploy.md".into()
        }
        "uid" if state.contains("capabilities") => {
            "the runner kept capabilities: the namespaces layer drops them; fix that first".into()
        }
        "uid" => {
            "give the gateway's user a subordinate range of its own so the runner is mapped to an unused uid (`usermod --add-subuids 200000-265535 --add-subgids 200000-265535 USER`, `apt-get install uidmap`), or start the gateway as root so the runner drops to one (in a container: root inside a user namespace, e.g. podman run --userns=auto, Kubernetes hostUsers: false; under systemd: the shipped unit). docs/deploy.md".into()
        }
        "landlock" => {
            "the kernel needs Landlock (Linux ≥ 5.13 booted with landlock in lsm=); a container's seccomp profile must allow landlock_* (deploy/seccomp.json does)".into()
        }
        "seccomp" => {
            "seccomp(2) or prctl(PR_SET_SECCOMP) is refused: the kernel needs CONFIG_SECCOMP_FILTER, and a container's profile must allow them (deploy/seccomp.json does)".into()
        }
        "no_new_privs" => "prctl(PR_SET_NO_NEW_PRIVS) is refused: see docs/deploy.md".into(),
        "rlimits" => {
            "setrlimit is refused or a limit stays unlimited: check the container's or unit's limits (docs/deploy.md)".into()
        }
        "fds" => "close_range(2) is refused or missing (Linux ≥ 5.9): see docs/deploy.md".into(),
        _ => "see docs/deploy.md".into(),
    }
}

/// The one warning `run` and `serve` print at start when some layers do not hold, or `None`.
/// Each layer with its cause and its fix, then how to refuse instead.
pub fn startup_warning(layers: &BTreeMap<String, String>) -> Option<String> {
    let missing = not_held(layers);
    if missing.is_empty() {
        return None;
    }
    let names: Vec<&str> = missing.iter().map(|(l, _)| *l).collect();
    let mut out = format!(
        "mcp-sandbox: warning: isolation layers that do not hold here: {} (scripts still run behind the others)\n",
        names.join(", ")
    );
    for (layer, state) in &missing {
        out.push_str(&format!(
            "  {layer}: {}\n    fix: {}\n",
            crate::term::escape(state),
            fix_for(layer, state)
        ));
    }
    out.push_str("  `--require-isolation all` refuses to run with fewer layers; `mcp-sandbox check` shows each layer as the kernel does\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_unshare_names_the_seccomp_profile() {
        let state = "unavailable: unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS|CLONE_NEWNS) failed: EPERM: Operation not permitted";
        assert!(fix_for("namespaces", state).contains("--security-opt seccomp=deploy/seccomp.json"));
        let layers = BTreeMap::from([
            ("namespaces".to_string(), state.to_string()),
            ("seccomp".to_string(), "enforced".to_string()),
        ]);
        let warning = startup_warning(&layers).expect("a warning");
        assert!(
            warning.contains("do not hold here: namespaces ("),
            "{warning}"
        );
        assert!(!warning.contains("seccomp:"), "{warning}");
    }

    #[test]
    fn every_layer_held_is_silent() {
        let layers = BTreeMap::from([("uid".to_string(), "enforced (uid 65534)".to_string())]);
        assert_eq!(startup_warning(&layers), None);
    }
}
