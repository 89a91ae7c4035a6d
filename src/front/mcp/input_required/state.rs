//! `requestState` of an approval asked through `input_required`: which execution, which
//! question, whose session — signed (HMAC-SHA256, rmcp's `RequestStateCodec`) with a key every
//! gateway on the state store shares (`store::secrets`; without a store, one per process),
//! expiring after the approval timeout and the session's time-to-live, and bound to the tenant and principal (associated data:
//! another principal's state fails verification). Signed, not encrypted, but for the session
//! handle it names: that is encrypted (XChaCha20-Poly1305 under a key derived from the same
//! secret, bound to the principal), so a task id or `requestState` that a proxy logs (the
//! `Mcp-Name` header carries a task id) does not give the handle away.
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
    /// Encrypts the session handle a payload names.
    handles: crate::tools::catalog::oauth_store::SealKey,
}

/// What an encrypted handle starts with.
const HANDLE_PREFIX: &str = "h1.";

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
        use sha2::Digest;
        let mut derive = sha2::Sha256::new();
        derive.update(b"mcp-sandbox: the session handles of requestStates and task ids\0");
        derive.update(&key);
        let handles =
            crate::tools::catalog::oauth_store::SealKey::from_bytes(derive.finalize().into());
        let codec = RequestStateCodec::try_new(key).map_err(|e| KeyError(e.to_string()))?;
        Ok(StateCodec { codec, handles })
    }

    /// `handle` encrypted for `principal` (`h1.` + hex of nonce and ciphertext).
    fn hide(&self, handle: &str, principal: &Principal) -> Result<String, String> {
        let (nonce, sealed) = self
            .handles
            .seal(&bound_to(principal), handle.as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(format!("{HANDLE_PREFIX}{}{}", hex(&nonce), hex(&sealed)))
    }

    /// What [`StateCodec::hide`] encrypted for `principal`.
    fn reveal(&self, hidden: &str, principal: &Principal) -> Option<String> {
        let bytes = unhex(hidden.strip_prefix(HANDLE_PREFIX)?)?;
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(24);
        let plain = self.handles.open(&bound_to(principal), nonce, sealed)?;
        String::from_utf8(plain).ok()
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
        let mut payload = payload.clone();
        if let Some(h) = &payload.handle {
            payload.handle = Some(self.hide(h, principal)?);
        }
        self.codec
            .seal_json_with(&payload, &options)
            .map_err(|e| e.to_string())
    }

    /// The payload of `sealed`, if it was sealed by a gateway of this store for `principal`
    /// and has not expired.
    pub fn open(&self, sealed: &str, principal: &Principal) -> Result<Payload, ErrorData> {
        if sealed.len() > MAX_STATE_BYTES {
            return Err(invalid());
        }
        let mut payload: Payload = self
            .codec
            .open_json_with(sealed, &bound_to(principal))
            .map_err(|e| {
                tracing::info!("a requestState was refused: {e}");
                invalid()
            })?;
        if let Some(h) = &payload.handle {
            payload.handle = Some(self.reveal(h, principal).ok_or_else(invalid)?);
        }
        Ok(payload)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
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
    fn the_handle_it_names_is_not_in_clear() {
        let c = StateCodec::new(Some(&"ab".repeat(32))).unwrap();
        let alice = principal("alice", "t");
        let handle = format!("session_{}", "7".repeat(64));
        let p = Payload {
            handle: Some(handle.clone()),
            ..payload()
        };
        let sealed = c.seal(&p, &alice, Duration::from_secs(60)).unwrap();
        // The sealed text, and the payload part of it decoded as base64 of any alphabet.
        assert!(
            !sealed.contains(&handle) && !sealed.contains(&"7".repeat(16)),
            "{sealed}"
        );
        for part in sealed.split('.') {
            for decoded in [b64(part, false), b64(part, true)] {
                let text = String::from_utf8_lossy(&decoded);
                assert!(!text.contains(&"7".repeat(16)), "{text}");
            }
        }
        assert_eq!(c.open(&sealed, &alice).unwrap(), p);
    }

    /// Lenient base64 (standard or URL-safe alphabet, padding ignored).
    fn b64(text: &str, url: bool) -> Vec<u8> {
        let alphabet: &[u8] = if url {
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        } else {
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        };
        let mut bits = 0u32;
        let mut n = 0;
        let mut out = Vec::new();
        for c in text.bytes() {
            let Some(v) = alphabet.iter().position(|a| *a == c) else {
                continue;
            };
            bits = (bits << 6) | v as u32;
            n += 6;
            if n >= 8 {
                n -= 8;
                out.push((bits >> n) as u8);
            }
        }
        out
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
