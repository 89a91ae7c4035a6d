//! Layer 6: not dumpable, and `no_new_privs`.
//!
//! - `PR_SET_DUMPABLE 0`: no core dump, and processes of the same uid cannot `ptrace` the
//!   runner or read its `/proc/<pid>/mem` (its `/proc` files become root-owned).
//! - `PR_SET_NO_NEW_PRIVS 1`: `execve` can never grant privileges again (setuid bits and file
//!   capabilities are ignored); it is also what lets an unprivileged process install a seccomp
//!   filter. It cannot be unset, and is inherited by any child.

use nix::sys::prctl::{get_dumpable, get_no_new_privs, set_dumpable, set_no_new_privs};

use super::{LayerResult, LockdownError};

/// Sets both flags and reads them back.
pub fn apply() -> LayerResult {
    set_dumpable(false).map_err(|e| LockdownError::errno("prctl(PR_SET_DUMPABLE, 0)", e))?;
    set_no_new_privs().map_err(|e| LockdownError::errno("prctl(PR_SET_NO_NEW_PRIVS, 1)", e))?;
    match get_no_new_privs() {
        Ok(true) => {}
        Ok(false) => {
            return Err(LockdownError::NotHeld(
                "PR_GET_NO_NEW_PRIVS reads 0 after setting it".into(),
            ))
        }
        Err(e) => return Err(LockdownError::errno("prctl(PR_GET_NO_NEW_PRIVS)", e)),
    }
    match get_dumpable() {
        Ok(false) => Ok(Some("not dumpable".into())),
        Ok(true) => Err(LockdownError::NotHeld(
            "PR_GET_DUMPABLE reads 1 after setting 0".into(),
        )),
        Err(e) => Err(LockdownError::errno("prctl(PR_GET_DUMPABLE)", e)),
    }
}
