//! `requestState` of an approval asked through `input_required`: which execution, which
//! question, whose session — signed (HMAC-SHA256, rmcp's `RequestStateCodec`) with a key every
//! gateway on the state store shares (`store::secrets`; without a store, one per process),
//! expiring after the approval timeout and the session's time-to-live, and bound to the tenant and principal (associated data:
//! another principal's state fails verification). Signed, not encrypted: the client can read
//! what it carries, which is only what it already holds (its session handle, ids).
//!
//! Every failure to open one — malformed, forged, tampered, expired, another principal's — is
//! one and the same answer ([`invalid`]), as the codec's contract asks.

use crate::context::principal::Principal;
use crate::context::session::SessionScope;
use rmcp::model::{RequestStateCodec, SealOptions};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

/// A `requestState` longer than this is not opened.
pub const MAX_STATE_BYTES: usize = 8 * 1024;
/// The stable code of a `requestState` that does not open.
pub const INVALID: &str = "REQUEST_STATE_INVALID";

/// What a `requestState` carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Payload {
    /// The execution, in the gateway's registry (`executions`).
    pub execution: String,
    /// The question asked (its id on the web view's registry); `None` when nothing was asked.
    pub question: Option<String>,
    /// The owner's session (its `SessionScope::session`).
    pub session: String,
    /// The session handle the final answer names (a session opened for a sessionless call).
    pub handle: Option<String>,
    /// When a task was created (a task id's payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

impl Payload {
    /// The execution's owner: the caller's tenant and principal, this payload's session.
    pub fn owner(&self, principal: &Principal) -> SessionScope {
        SessionScope::new(
            principal.tenant.clone(),
            principal.id.clone(),
            self.session.clone(),
        )
    }
}

/// Seals and opens `requestState`s.
pub struct StateCodec {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for StateCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateCodec").finish_non_exhaustive()
    }
}

/// The key could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the requestState key: {0}")]
pub struct KeyError(String);

impl StateCodec {
    /// A codec on `key_hex` (the store's shared secret), or on a fresh key of this process.
    pub fn new(key_hex: Option<&str>) -> Result<StateCodec, KeyError> {
        let key = match key_hex {
            Some(hex) => hex.as_bytes().to_vec(),
            None => {
                let mut bytes = vec![0u8; 32];
                getrandom::fill(&mut bytes).map_err(|e| KeyError(e.to_string()))?;
                bytes
            }
        };
        let codec = RequestStateCodec::try_new(key).map_err(|e| KeyError(e.to_string()))?;
        Ok(StateCodec { codec })
    }

    /// `payload` sealed for `principal`, valid for `ttl`.
    pub fn seal(
        &self,
        payload: &Payload,
        principal: &Principal,
        ttl: Duration,
    ) -> Result<String, String> {
        let bound = bound_to(principal);
        let options = SealOptions::new().associated_data(&bound).ttl(ttl);
        self.codec
            .seal_json_with(payload, &options)
            .map_err(|e| e.to_string())
    }

    /// The payload of `sealed`, if it was sealed by a gateway of this store for `principal`
    /// and has not expired.
    pub fn open(&self, sealed: &str, principal: &Principal) -> Result<Payload, ErrorData> {
        if sealed.len() > MAX_STATE_BYTES {
            return Err(invalid());
        }
        self.codec
            .open_json_with(sealed, &bound_to(principal))
            .map_err(|e| {
                tracing::info!("a requestState was refused: {e}");
                invalid()
            })
    }
}

/// The associated data: tenant and principal id, each length-prefixed.
fn bound_to(principal: &Principal) -> Vec<u8> {
    let mut b = Vec::new();
    for part in [&principal.tenant, &principal.id] {
        b.extend_from_slice(&(part.len() as u64).to_be_bytes());
        b.extend_from_slice(part.as_bytes());
    }
    b
}

/// The one answer to a `requestState` that does not open.
pub fn invalid() -> ErrorData {
    ErrorData::invalid_params(
        "requestState is not valid: it is malformed, was changed, has expired (it lives for the approval timeout and then the session's time-to-live), or was given to another principal. Nothing was answered or resumed. Send requestState back exactly as the input_required result gave it, as the same principal; if it expired, run the script again",
        Some(json!({"code": INVALID})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(id: &str, tenant: &str) -> Principal {
        let mut p = Principal::local();
        p.id = id.into();
        p.tenant = tenant.into();
        p
    }

    fn payload() -> Payload {
        Payload {
            execution: "e1".into(),
            question: Some("q1".into()),
            session: "s".into(),
            handle: None,
            created_at: None,
        }
    }

    fn code(e: ErrorData) -> String {
        e.data.unwrap()["code"].as_str().unwrap().to_string()
    }

    #[test]
    fn opens_for_its_principal_only_and_never_changed() {
        let c = StateCodec::new(Some(&"ab".repeat(32))).unwrap();
        let alice = principal("alice", "t");
        let ttl = Duration::from_secs(60);
        let sealed = c.seal(&payload(), &alice, ttl).unwrap();
        assert_eq!(c.open(&sealed, &alice).unwrap(), payload());
        // Another principal, another tenant with the same id, a tenant/id split moved.
        for other in [
            principal("bob", "t"),
            principal("alice", "u"),
            principal("lice", "ta"),
        ] {
            assert_eq!(code(c.open(&sealed, &other).unwrap_err()), INVALID);
        }
        // One character changed anywhere.
        for i in 0..sealed.len() {
            let mut b = sealed.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(b).unwrap();
            if changed != sealed {
                assert!(c.open(&changed, &alice).is_err(), "changed at {i}");
            }
        }
        // Another store's key.
        let other = StateCodec::new(Some(&"cd".repeat(32))).unwrap();
        assert_eq!(code(other.open(&sealed, &alice).unwrap_err()), INVALID);
        // Too long, empty, garbage.
        for bad in [
            "".to_string(),
            "x".repeat(MAX_STATE_BYTES + 1),
            "rs1.\u{0}".into(),
        ] {
            assert_eq!(code(c.open(&bad, &alice).unwrap_err()), INVALID);
        }
    }

    #[test]
    fn expires() {
        let c = StateCodec::new(None).unwrap();
        let alice = principal("alice", "t");
        let sealed = c
            .seal(&payload(), &alice, Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(code(c.open(&sealed, &alice).unwrap_err()), INVALID);
    }
}
