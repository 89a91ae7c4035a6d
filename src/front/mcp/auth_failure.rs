//! Why a request's credential is refused: shared by the API-token and JWT checks
//! ([`crate::front::mcp::auth`], [`crate::front::mcp::jwt`]), which import this file and not
//! each other's.

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFailure {
    /// No credential: 401 without an error code.
    Missing,
    /// A credential that is not valid (wrong, revoked, expired, badly signed): 401
    /// `invalid_token`.
    Invalid(String),
    /// A valid credential without the right to use this server: 403 `insufficient_scope`.
    Forbidden(String),
}
