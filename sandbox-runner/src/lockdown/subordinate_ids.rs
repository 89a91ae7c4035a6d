//! Layer 2 for a host that is not root: the runner's user namespace mapped to one id of the
//! host user's subordinate range (`/etc/subuid`, `/etc/subgid`), as rootless containers do.
//!
//! An unprivileged process may map only its own uid into a user namespace it creates, so
//! without help the runner stays the host user (it could signal the gateway, were it to get past
//! seccomp). `newuidmap`/`newgidmap` (setuid root, Debian's `uidmap`) may write a map that the
//! administrator granted in `/etc/subuid`/`/etc/subgid`. The runner therefore:
//!
//! 1. before `unshare`, reads the host user's ranges and prepares the two commands, then forks
//!    two helper children (still in the host's user namespace) that wait on a pipe;
//! 2. after `unshare(CLONE_NEWUSER|…)`, releases them: each runs `newuidmap`/`newgidmap` on
//!    the runner's pid, mapping the id [`INSIDE_ID`] inside to the **last** id of the range;
//! 3. waits for both, clears the supplementary groups, and switches every gid and uid to
//!    [`INSIDE_ID`] — from then on the kernel sees the runner as that subordinate id, which owns
//!    no file and no process of the host user's.
//!
//! The host can still signal and reap its runners: it created their user namespace, so it holds
//! every capability in it. The runner must not yet be non-dumpable (`newuidmap` checks that the
//! caller owns the target process), and `no_new_privs` must not be set (it would stop the
//! setuid helper from gaining root); both are set later, by layer 6.

use std::ffi::CString;
use std::fs;

use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{
    fork, getresgid, getresuid, getuid, setgroups, setresgid, setresuid, ForkResult, Gid, Pid, Uid,
    User,
};

use super::LockdownError;

/// The id the runner has inside its user namespace (the conventional "nobody").
pub const INSIDE_ID: u32 = 65534;

const NEWUIDMAP: &str = "/usr/bin/newuidmap";
const NEWGIDMAP: &str = "/usr/bin/newgidmap";

/// How to fix a missing range, said in every refusal.
fn fix(user: &str) -> String {
    format!(
        "give the gateway's user a subordinate range of its own and install newuidmap/newgidmap: \
         `usermod --add-subuids 200000-265535 --add-subgids 200000-265535 {user}` and \
         `apt-get install uidmap` (docs/deploy.md, \"Running as a user that is not root\")"
    )
}

/// The outside ids the runner will become, found before `unshare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub outside_uid: u32,
    pub outside_gid: u32,
}

/// The helper children, forked and waiting, between [`Plan::fork_helpers`] and
/// [`Helpers::map`].
pub struct Helpers {
    go: std::os::fd::OwnedFd,
    children: [Pid; 2],
    plan: Plan,
}

impl Plan {
    /// Reads the calling user's ranges. Unsupported (with the fix) when either file has no
    /// range for the user or the helpers are not installed.
    pub fn find() -> Result<Plan, LockdownError> {
        let uid = getuid();
        let name = User::from_uid(uid)
            .ok()
            .flatten()
            .map(|u| u.name)
            .unwrap_or_else(|| uid.to_string());
        for helper in [NEWUIDMAP, NEWGIDMAP] {
            if fs::metadata(helper).is_err() {
                return Err(LockdownError::Unsupported(format!(
                    "{helper} is not installed, so the runner cannot leave uid {uid}; {}",
                    fix(&name)
                )));
            }
        }
        let range = |file: &str| -> Result<u32, LockdownError> {
            let text = fs::read_to_string(file).unwrap_or_default();
            last_id_of_range(&text, &name, uid.as_raw()).ok_or_else(|| {
                LockdownError::Unsupported(format!(
                    "the host runs as uid {uid} ({name}), which has no range in {file}, so the \
                     runner would keep that uid; {}",
                    fix(&name)
                ))
            })
        };
        Ok(Plan {
            outside_uid: range("/etc/subuid")?,
            outside_gid: range("/etc/subgid")?,
        })
    }

    /// Forks the two helpers (before `unshare`: they must stay in the host's user namespace).
    /// Must be called while the process is single-threaded.
    pub fn fork_helpers(&self) -> Result<Helpers, LockdownError> {
        let pid = std::process::id().to_string();
        let inside = INSIDE_ID.to_string();
        let argv = |helper: &str, outside: u32| -> Vec<CString> {
            [helper, &pid, &inside, &outside.to_string(), "1"]
                .iter()
                .filter_map(|s| CString::new(*s).ok())
                .collect()
        };
        let commands = [
            argv(NEWUIDMAP, self.outside_uid),
            argv(NEWGIDMAP, self.outside_gid),
        ];
        let (read, write) =
            nix::unistd::pipe().map_err(|e| LockdownError::errno("pipe (newuidmap helpers)", e))?;
        let mut children = Vec::with_capacity(2);
        for command in &commands {
            // SAFETY: the process is single-threaded (the caller's contract), so the child may
            // run any code; it only reads one byte and execs (or exits) without returning.
            match unsafe { fork() } {
                Ok(ForkResult::Child) => helper_child(&read, command),
                Ok(ForkResult::Parent { child }) => children.push(child),
                Err(e) => {
                    drop(write);
                    reap(&children);
                    return Err(LockdownError::errno("fork (newuidmap helper)", e));
                }
            }
        }
        drop(read);
        Ok(Helpers {
            go: write,
            children: [children[0], children[1]],
            plan: self.clone(),
        })
    }
}

/// In a helper child: waits for the parent's byte, then runs the map command.
fn helper_child(read: &std::os::fd::OwnedFd, command: &[CString]) -> ! {
    let mut byte = [0u8; 1];
    if matches!(nix::unistd::read(read, &mut byte), Ok(1)) {
        // The setuid helper gets stdio only: not the runner's socket, nor the pipe.
        // SAFETY: close_range takes plain integers; CLOEXEC only marks this child's fds.
        unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if let Some(path) = command.first() {
            let _ = nix::unistd::execv(path.as_c_str(), command);
        }
    }
    // SAFETY: _exit ends only this child, without running the parent's exit handlers.
    unsafe { libc::_exit(126) }
}

fn reap(children: &[Pid]) {
    for child in children {
        let _ = waitpid(*child, None);
    }
}

impl Helpers {
    /// After `unshare`: lets both helpers write their map, waits for them, and switches to
    /// the mapped ids. Returns the uid layer's result.
    pub fn map(self) -> Result<Option<String>, LockdownError> {
        let Helpers { go, children, plan } = self;
        let released = nix::unistd::write(&go, &[1u8, 1u8]);
        drop(go);
        let mut failed = Vec::new();
        for (child, name) in children.iter().zip(["newuidmap", "newgidmap"]) {
            match waitpid(*child, None) {
                Ok(WaitStatus::Exited(_, 0)) => {}
                other => failed.push(format!("{name}: {other:?}")),
            }
        }
        if let Err(e) = released {
            return Err(LockdownError::errno("write (release newuidmap helpers)", e));
        }
        if !failed.is_empty() {
            return Err(LockdownError::NotHeld(format!(
                "mapping the runner to subordinate uid {} / gid {} failed ({}); its stderr says why",
                plan.outside_uid,
                plan.outside_gid,
                failed.join(", ")
            )));
        }
        switch_ids(&plan)
    }

    /// Ends the helpers without mapping (when `unshare` failed).
    pub fn abandon(self) {
        drop(self.go);
        reap(&self.children);
    }
}

fn switch_ids(plan: &Plan) -> Result<Option<String>, LockdownError> {
    let id = INSIDE_ID;
    // newgidmap leaves setgroups allowed when the map comes from /etc/subgid; the host user's
    // supplementary groups would otherwise still count in the kernel's checks.
    setgroups(&[]).map_err(|e| LockdownError::errno("setgroups([]) in the user namespace", e))?;
    setresgid(Gid::from_raw(id), Gid::from_raw(id), Gid::from_raw(id))
        .map_err(|e| LockdownError::errno("setresgid (mapped gid)", e))?;
    setresuid(Uid::from_raw(id), Uid::from_raw(id), Uid::from_raw(id))
        .map_err(|e| LockdownError::errno("setresuid (mapped uid)", e))?;
    let u = getresuid().map_err(|e| LockdownError::errno("getresuid", e))?;
    let g = getresgid().map_err(|e| LockdownError::errno("getresgid", e))?;
    let all = |ids: [u32; 3]| ids.iter().all(|x| *x == id);
    if !all([u.real.as_raw(), u.effective.as_raw(), u.saved.as_raw()])
        || !all([g.real.as_raw(), g.effective.as_raw(), g.saved.as_raw()])
    {
        return Err(LockdownError::NotHeld(format!(
            "ids are uid {}/{}/{} gid {}/{}/{} after switching to the mapped id {id}",
            u.real, u.effective, u.saved, g.real, g.effective, g.saved
        )));
    }
    let groups = nix::unistd::getgroups().map_err(|e| LockdownError::errno("getgroups", e))?;
    if !groups.is_empty() {
        return Err(LockdownError::NotHeld(format!(
            "supplementary groups {groups:?} remain after setgroups([])"
        )));
    }
    Ok(Some(format!(
        "subordinate uid {} gid {} of the host user's range (newuidmap)",
        plan.outside_uid, plan.outside_gid
    )))
}

/// The last id of the first range in `text` (the format of `/etc/subuid`: `name:start:count`)
/// whose owner is `name` or the number `uid`.
pub fn last_id_of_range(text: &str, name: &str, uid: u32) -> Option<u32> {
    text.lines().find_map(|line| {
        let mut parts = line.trim().split(':');
        let owner = parts.next()?;
        let start: u32 = parts.next()?.trim().parse().ok()?;
        let count: u32 = parts.next()?.trim().parse().ok()?;
        let mine = owner == name || owner.parse::<u32>().ok() == Some(uid);
        (mine && count > 0)
            .then(|| start.checked_add(count - 1))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_id_of_the_users_range() {
        let text = "# comment\nalice:100000:65536\n65534:200000:10\nbob:x:1\n";
        assert_eq!(last_id_of_range(text, "alice", 1000), Some(165535));
        assert_eq!(last_id_of_range(text, "nobody", 65534), Some(200009));
        assert_eq!(last_id_of_range(text, "bob", 1001), None);
        assert_eq!(last_id_of_range(text, "carol", 1002), None);
        assert_eq!(last_id_of_range("x:4294967295:2\n", "x", 1), None);
        assert_eq!(last_id_of_range("x:5:0\n", "x", 1), None);
    }
}
