//! W3C trace context (`traceparent`) of a request: the parent a front read from the request
//! (`_meta.traceparent`, the HTTP `traceparent` header, `TRACEPARENT` for `run`), and the trace an
//! execution belongs to once telemetry is on.
//!
//! Span ids are derived from the ids the host already gives each execution and each call (UUIDs,
//! `crate::trace`): the `traceparent` sent downstream with a call names the same span the
//! exporter later builds from the call's trace events, without any state between the two.
//!
//! May import `error`, `trace`, `term` only.

/// A `traceparent` read from a request: whose span the execution's span becomes a child of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub sampled: bool,
}

/// The trace of an execution (and of its capabilities' nested executions), when telemetry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    /// The span of the top-level execution (derived from its execution id).
    pub execution_span: [u8; 8],
    /// The request's parent span, when it came with a `traceparent`.
    pub parent: Option<[u8; 8]>,
    /// Whether the trace is recorded (the sampler's decision, or the parent's flag).
    pub sampled: bool,
}

impl TraceContext {
    /// The `traceparent` of the call whose trace id (a UUID of `crate::trace`) is `call_id`.
    pub fn traceparent_of(&self, call_id: &str) -> String {
        format_traceparent(&self.trace_id, &span_id_of(call_id), self.sampled)
    }
}

/// Longest `traceparent` read; the version-00 form is 55 characters.
const MAX_TRACEPARENT: usize = 256;

/// Parses a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`; a later version may carry more
/// fields after a `-`). `None` for anything else, an all-zero id, version `ff` or upper-case hex
/// (the format is lower-case hex only): a bad header is ignored, as the W3C recommendation
/// says, and the execution starts a trace of its own.
pub fn parse_traceparent(value: &str) -> Option<RemoteParent> {
    let value = value.trim();
    if value.len() > MAX_TRACEPARENT || value.len() < 55 || !value.is_ascii() {
        return None;
    }
    if value.as_bytes()[..55].iter().any(u8::is_ascii_uppercase) {
        return None;
    }
    let version = hex_bytes::<1>(&value[0..2])?;
    if version[0] == 0xff || (version[0] == 0 && value.len() != 55) {
        return None;
    }
    let dashes = [2, 35, 52];
    if dashes.iter().any(|&i| value.as_bytes()[i] != b'-') {
        return None;
    }
    if value.len() > 55 && value.as_bytes()[55] != b'-' {
        return None;
    }
    let trace_id = hex_bytes::<16>(&value[3..35])?;
    let span_id = hex_bytes::<8>(&value[36..52])?;
    let flags = hex_bytes::<1>(&value[53..55])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(RemoteParent {
        trace_id,
        span_id,
        sampled: flags[0] & 1 == 1,
    })
}

/// `00-<trace>-<span>-<flags>`.
pub fn format_traceparent(trace_id: &[u8; 16], span_id: &[u8; 8], sampled: bool) -> String {
    format!(
        "00-{}-{}-{}",
        hex(trace_id),
        hex(span_id),
        if sampled { "01" } else { "00" }
    )
}

/// The span id of a host id (a UUID's last 8 bytes, random in a v4 UUID); never all zero.
pub fn span_id_of(id: &str) -> [u8; 8] {
    let bytes = uuid_bytes(id);
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[8..16]);
    if out == [0; 8] {
        out[7] = 1;
    }
    out
}

/// A trace id from a host id (the UUID's 16 bytes); never all zero.
pub fn trace_id_of(id: &str) -> [u8; 16] {
    let mut out = uuid_bytes(id);
    if out == [0; 16] {
        out[15] = 1;
    }
    out
}

/// The 16 bytes of a UUID in its text form; other text is hashed down (FNV-1a) so any id works.
fn uuid_bytes(id: &str) -> [u8; 16] {
    let digits: String = id.chars().filter(|c| *c != '-').collect();
    if let Some(b) = hex_bytes::<16>(&digits) {
        return b;
    }
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for b in id.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    h.to_be_bytes()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_bytes<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != N * 2 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips_and_bad_ones_are_ignored() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let p = parse_traceparent(tp).unwrap();
        assert!(p.sampled);
        assert_eq!(format_traceparent(&p.trace_id, &p.span_id, true), tp);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319Z-b7ad6b7169203331-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        assert!(
            parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-later")
                .is_some()
        );
    }

    #[test]
    fn an_upper_case_traceparent_is_ignored() {
        let lower = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(parse_traceparent(lower).is_some());
        for upper in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
            "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(upper), None, "{upper}");
        }
    }

    #[test]
    fn span_ids_come_from_uuids() {
        let id = "6f1c2e1a-8a61-4b7e-9d3c-0123456789ab";
        assert_eq!(hex(&span_id_of(id)), "9d3c0123456789ab");
        assert_eq!(hex(&trace_id_of(id)), "6f1c2e1a8a614b7e9d3c0123456789ab");
        assert_ne!(span_id_of("not a uuid"), [0; 8]);
    }
}
