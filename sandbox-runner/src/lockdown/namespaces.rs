//! Layer 3: fresh user, network, IPC, UTS and mount namespaces, then no capabilities at all.
//!
//! All five are created by one `unshare` call: an unprivileged process may only create the
//! others together with a new user namespace. The new network namespace has no interface at
//! all (not even a loopback that is up), the IPC namespace has no SysV objects or POSIX message
//! queues, and the mount namespace is a private copy (mount events do not propagate back).
//!
//! The new user namespace gives the process every capability *inside* it; they are all dropped
//! right away (bounding set, ambient set, then effective/permitted/inheritable), and the layer
//! checks that none is left.

use nix::errno::Errno;
use nix::sched::{unshare, CloneFlags};

use super::subordinate_ids::Plan;
use super::{LayerResult, LockdownError};

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// One 32-bit half of the three capability sets (`struct __user_cap_data_struct`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CapData {
    pub effective: u32,
    pub permitted: u32,
    pub inheritable: u32,
}

/// Creates the namespaces and drops every capability.
pub fn apply() -> LayerResult {
    apply_with_root().0
}

/// Creates the namespaces, pivots into an empty root while the new namespace's capabilities
/// are held ([`super::empty_root`]), then drops every capability. Returns both layers' results.
pub fn apply_with_root() -> (LayerResult, LayerResult) {
    let (ns, root, _) = apply_with_root_mapped(None);
    (ns, root)
}

/// As [`apply_with_root`], and for a host that is not root (`plan` given) maps the new user
/// namespace to a subordinate id right after it is created ([`super::subordinate_ids`]),
/// returning the uid layer's result as the third value.
pub fn apply_with_root_mapped(
    plan: Option<Result<Plan, LockdownError>>,
) -> (LayerResult, LayerResult, Option<LayerResult>) {
    let mapping = plan.is_some();
    let mut uid: Option<LayerResult> = None;
    let helpers = match plan.map(|p| p.and_then(|p| p.fork_helpers())) {
        None => None,
        Some(Ok(h)) => Some(h),
        Some(Err(e)) => {
            uid = Some(Err(e));
            None
        }
    };
    if let Err(e) = create() {
        if let Some(h) = helpers {
            h.abandon();
        }
        let why =
            |what: &str| format!("needs the {what} namespace, which could not be created: {e}");
        let uid = match uid {
            Some(r) => Some(r),
            None if mapping => Some(Err(LockdownError::Unsupported(why("user")))),
            None => None,
        };
        let root = Err(LockdownError::Unsupported(why("mount")));
        return (Err(e), root, uid);
    }
    if let Some(h) = helpers {
        uid = Some(h.map());
    }
    let root = std::panic::catch_unwind(super::empty_root::apply).unwrap_or_else(|_| {
        Err(LockdownError::NotHeld(
            "internal error: the layer panicked".into(),
        ))
    });
    let ns = drop_all_capabilities()
        .map(|()| Some("user, net, ipc, uts, mount; no capabilities left".to_string()));
    (ns, root, uid)
}

fn create() -> Result<(), LockdownError> {
    let flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWNET
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWNS;
    unshare(flags).map_err(|e| {
        let hint = match e {
            Errno::EPERM => {
                "user namespaces are disabled for unprivileged processes: sysctl \
                 kernel.unprivileged_userns_clone=0 or kernel.apparmor_restrict_unprivileged_userns=1, \
                 or a container/seccomp profile forbids unshare"
            }
            Errno::ENOSPC | Errno::EUSERS => {
                "the user.max_user_namespaces (or max_net_namespaces…) limit is reached or 0"
            }
            Errno::EINVAL => {
                "the kernel lacks namespace support (CONFIG_USER_NS/CONFIG_NET_NS), or the \
                 process has more than one thread"
            }
            _ => "see unshare(2)",
        };
        LockdownError::errno("unshare(CLONE_NEWUSER|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS|CLONE_NEWNS)", e)
            .with_hint(hint)
    })
}

/// Empties the bounding, ambient, effective, permitted and inheritable sets, and checks them.
pub fn drop_all_capabilities() -> Result<(), LockdownError> {
    // Bounding set: needs CAP_SETPCAP, which the new user namespace gave us.
    let mut cap = 0;
    loop {
        // SAFETY: PR_CAPBSET_DROP takes a capability number; EINVAL marks the end of the list.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            let e = Errno::last();
            if e == Errno::EINVAL && cap > 0 {
                break;
            }
            return Err(LockdownError::errno("prctl(PR_CAPBSET_DROP)", e));
        }
        cap += 1;
        if cap > 64 {
            break;
        }
    }
    let last_cap = cap - 1;
    for c in 0..=last_cap {
        // SAFETY: PR_CAPBSET_READ only reads the bounding set.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_READ, c, 0, 0, 0) };
        if rc != 0 {
            return Err(LockdownError::NotHeld(format!(
                "capability {c} is still in the bounding set"
            )));
        }
    }

    // Ambient set.
    // SAFETY: PR_CAP_AMBIENT_CLEAR_ALL takes no pointers.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(LockdownError::last("prctl(PR_CAP_AMBIENT_CLEAR_ALL)"));
    }

    // Effective, permitted, inheritable.
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: header and data are valid, properly laid out (#[repr(C)]) and live for the
    // call; version 3 makes the kernel read exactly two CapData entries.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if rc != 0 {
        return Err(LockdownError::last("capset(0, 0, 0)"));
    }

    let now = capget_self()?;
    if now.iter().any(|d| *d != CapData::default()) {
        return Err(LockdownError::NotHeld(format!(
            "capabilities remain after capset: {now:?}"
        )));
    }
    // SAFETY: PR_CAP_AMBIENT_IS_SET only reads; checking capability 0 up to the last one.
    let ambient_left = (0..=last_cap).any(|c| unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1
    });
    if ambient_left {
        return Err(LockdownError::NotHeld(
            "an ambient capability remains".into(),
        ));
    }
    Ok(())
}

/// The calling thread's capability sets (both 32-bit halves).
pub fn capget_self() -> Result<[CapData; 2], LockdownError> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and data are valid and #[repr(C)]; with version 3 the kernel writes
    // exactly two CapData entries into `data`.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(LockdownError::last("capget"));
    }
    Ok(data)
}
