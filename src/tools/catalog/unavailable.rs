//! The code of a call to a configured server that could not be started or restarted: a
//! confined server that cannot be confined is `SERVER_CONFINEMENT_UNAVAILABLE` (its fix is not
//! the server's: bubblewrap, user namespaces, or `"confine": false`), anything else
//! `SERVER_UNAVAILABLE`. A start failure travels as its reason text; the confinement's reason
//! starts with its code (`confine::ConfineError` writes it so), which is what is read here.

use crate::error::ErrorCode;

/// How the reason of a server that died and could not be started again begins.
pub const RESTART_FAILED: &str = "it died and could not be restarted: ";

/// The code calls to a server unavailable for `reason` fail with.
pub fn unavailable_code(reason: &str) -> ErrorCode {
    let reason = reason.strip_prefix(RESTART_FAILED).unwrap_or(reason);
    match reason.strip_prefix(super::confine::UNAVAILABLE) {
        Some(rest) if rest.starts_with(':') => ErrorCode::ServerConfinementUnavailable,
        _ => ErrorCode::ServerUnavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_confinements_own_reason_has_its_code() {
        let confined =
            "SERVER_CONFINEMENT_UNAVAILABLE: server 'x' is confined but bubblewrap was not found";
        assert_eq!(
            unavailable_code(confined),
            ErrorCode::ServerConfinementUnavailable
        );
        assert_eq!(
            unavailable_code(&format!("{RESTART_FAILED}{confined}")),
            ErrorCode::ServerConfinementUnavailable
        );
        for other in [
            "did not finish starting within 10000 ms",
            "it exited: SERVER_CONFINEMENT_UNAVAILABLE: a server's own stderr",
            "SERVER_CONFINEMENT_UNAVAILABLEX: not the code",
            "it died and could not be restarted: cannot start `x`",
        ] {
            assert_eq!(
                unavailable_code(other),
                ErrorCode::ServerUnavailable,
                "{other}"
            );
        }
    }
}
