//! Layer 2: run as an unprivileged uid/gid.
//!
//! When started as root: supplementary groups are cleared, then real, effective and saved gid,
//! then uid are set to the configured id (default 65534, "nobody"). Leaving root also clears the
//! permitted and effective capability sets. The layer then checks that every id is the new one,
//! that no capability is left and that `setuid(0)` is refused.

use nix::errno::Errno;
use nix::unistd::{getgroups, getresgid, getresuid, setgroups, setresgid, setresuid, Gid, Uid};

use super::{LayerResult, LockdownError};

/// Whether any of the real, effective or saved uids is root (then [`apply`] drops to the
/// configured id; otherwise the namespaces layer maps a subordinate id).
pub fn started_as_root() -> bool {
    getresuid()
        .map(|r| [r.real, r.effective, r.saved].iter().any(|u| u.is_root()))
        .unwrap_or(false)
}

/// Drops root to `uid`/`gid`. When not started as root there is nothing to drop to: the layer
/// is reported unavailable (the runner runs as the host's user).
pub fn apply(uid: u32, gid: u32) -> LayerResult {
    let before = getresuid().map_err(|e| LockdownError::errno("getresuid", e))?;
    let is_root = [before.real, before.effective, before.saved]
        .iter()
        .any(|u| u.is_root());
    if !is_root {
        // Not a drop at all: the runner keeps the host user's own uid, and with it everything
        // that user may read or signal were another layer (Landlock) to fail.
        return Err(LockdownError::Unsupported(format!(
            "the runner was started by uid {} (not root), so it keeps that user's uid instead \
             of dropping to an unused one; start mcp-sandbox as root (it drops the runner to \
             uid {uid}) to get this layer",
            before.effective.as_raw()
        )));
    }
    if uid == 0 {
        return Err(LockdownError::Unsupported(
            "started as root and the configured uid is 0; configure an unprivileged uid".into(),
        ));
    }
    if !before.effective.is_root() {
        // Real or saved uid is 0 (a setuid-root binary run by a user): drop to the effective one.
        let e = before.effective;
        setresuid(e, e, e).map_err(|err| LockdownError::errno("setresuid", err))?;
        return verify(e.as_raw(), None);
    }

    setgroups(&[]).map_err(|e| {
        LockdownError::errno("setgroups([])", e).with_hint("root without CAP_SETGID?")
    })?;
    let g = Gid::from_raw(gid);
    setresgid(g, g, g)
        .map_err(|e| LockdownError::errno("setresgid", e).with_hint("root without CAP_SETGID?"))?;
    let u = Uid::from_raw(uid);
    setresuid(u, u, u)
        .map_err(|e| LockdownError::errno("setresuid", e).with_hint("root without CAP_SETUID?"))?;
    verify(uid, Some(gid))
}

fn verify(uid: u32, gid: Option<u32>) -> LayerResult {
    let r = getresuid().map_err(|e| LockdownError::errno("getresuid", e))?;
    if [r.real, r.effective, r.saved]
        .iter()
        .any(|u| u.as_raw() != uid)
    {
        return Err(LockdownError::NotHeld(format!(
            "uids are {}/{}/{} after setresuid({uid})",
            r.real, r.effective, r.saved
        )));
    }
    if let Some(gid) = gid {
        let g = getresgid().map_err(|e| LockdownError::errno("getresgid", e))?;
        if [g.real, g.effective, g.saved]
            .iter()
            .any(|x| x.as_raw() != gid)
        {
            return Err(LockdownError::NotHeld(format!(
                "gids are {}/{}/{} after setresgid({gid})",
                g.real, g.effective, g.saved
            )));
        }
        let groups = getgroups().map_err(|e| LockdownError::errno("getgroups", e))?;
        if !groups.is_empty() {
            return Err(LockdownError::NotHeld(format!(
                "supplementary groups {groups:?} remain after setgroups([])"
            )));
        }
    }
    // Leaving root must have cleared the capabilities (no SECBIT_KEEP_CAPS games).
    let caps = super::namespaces::capget_self()?;
    if caps.iter().any(|d| d.effective != 0 || d.permitted != 0) {
        return Err(LockdownError::NotHeld(
            "capabilities remain after leaving root (SECBIT_KEEP_CAPS or SECBIT_NO_SETUID_FIXUP \
             set by the parent?)"
                .into(),
        ));
    }
    // Regaining root must be impossible. Raw syscall: glibc's wrapper would broadcast the
    // change to other threads, and there must not be any.
    // SAFETY: setuid takes a plain integer; on success it would only change this process's ids
    // (checked below, reported as not held).
    let rc = unsafe { libc::syscall(libc::SYS_setuid, 0 as libc::uid_t) };
    if rc == 0 {
        return Err(LockdownError::NotHeld(
            "setuid(0) succeeded after the drop".into(),
        ));
    }
    let errno = Errno::last();
    if errno != Errno::EPERM {
        return Err(LockdownError::NotHeld(format!(
            "setuid(0) after the drop failed with {errno}, expected EPERM"
        )));
    }
    Ok(Some(match gid {
        Some(gid) => format!("uid {uid}, gid {gid}, no supplementary groups"),
        None => format!("uid {uid}"),
    }))
}
