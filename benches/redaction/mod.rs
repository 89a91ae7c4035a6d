//! The redaction key of the benchmark (secrets and personal data never reach the model), run
//! alone with `cargo bench --bench sandbox -- redaction`:
//!
//! - `redaction_mb_per_s`: how fast the gateway replaces sensitive values by placeholders in an
//!   execution's outcome (`ExecPlaceholders::redact_outcome`, what `Sandbox::execute` does before
//!   the audit record and the answer), with the five built-in detectors on, over a 10 MiB result
//!   (20,000 strings of ~524 bytes) holding 100,000 matches (e-mail addresses, phone numbers,
//!   Luhn-valid card numbers, IBANs, API keys; 4,000 distinct values, so the session's map is
//!   used, not overflowed): MiB of result per second, median of 5 runs (`p50`) and the slowest
//!   (`min`). Target: at least 100.

use mcp_sandbox::context::sensitive::{Sensitive, SensitiveConfig};
use mcp_sandbox::exec::placeholders::ExecPlaceholders;
use mcp_sandbox::Outcome;
use serde_json::{json, Value};
use std::time::Instant;

/// A Luhn-valid 16-digit card number built from `i`.
fn card(i: usize) -> String {
    let body = format!("4{:014}", 100_000_000 + i);
    let digits: Vec<u32> = body.chars().filter_map(|c| c.to_digit(10)).collect();
    let mut sum = 0;
    for (k, d) in digits.iter().rev().enumerate() {
        sum += if k % 2 == 0 {
            let x = d * 2;
            if x > 9 {
                x - 9
            } else {
                x
            }
        } else {
            *d
        };
    }
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// A valid German IBAN built from `i` (check digits computed with mod 97).
fn iban(i: usize) -> String {
    let bban = format!("37040044{:010}", 532_013_000 + i);
    // "DE00" moved to the end: D=13, E=14.
    let moved = format!("{bban}131400");
    let rem = moved
        .bytes()
        .fold(0u32, |r, b| (r * 10 + u32::from(b - b'0')) % 97);
    format!("DE{:02}{bban}", 98 - rem)
}

fn result() -> (Value, usize) {
    let mut items = Vec::with_capacity(20_000);
    let mut bytes = 0;
    for i in 0..20_000 {
        let k = i % 800;
        let s = format!(
            "customer {i:06} wrote from user{k}@example.com, phone +1 415 555 {:04}, paid with {} into {} using key sk_live_{:024}; the rest of this note is ordinary text about the order, its items, the delivery address line and when it should arrive, with numbers like 2026-11-24 and 1234.56 that are not sensitive at all. {}",
            1000 + k,
            card(k),
            iban(k),
            k,
            "lorem ipsum dolor sit amet ".repeat(6)
        );
        bytes += s.len();
        items.push(Value::String(s));
    }
    (Value::Array(items), bytes)
}

pub async fn bench() -> Value {
    let config: SensitiveConfig = serde_json::from_value(json!({
        "detect": ["email", "phone", "card", "iban", "secret"]
    }))
    .expect("config");
    let sensitive = Sensitive::compile(&config).expect("compile");
    let (value, bytes) = result();
    let mut rates = Vec::new();
    for _ in 0..5 {
        let placeholders = ExecPlaceholders::open(sensitive.clone(), None, None)
            .await
            .expect("open");
        let mut outcome = Outcome {
            success: true,
            result: value.clone(),
            error: None,
            logs: Vec::new(),
            traces: Vec::new(),
            metrics: Default::default(),
        };
        let t = Instant::now();
        placeholders.redact_outcome(&mut outcome);
        let s = t.elapsed().as_secs_f64();
        let text = outcome.result.to_string();
        assert!(!text.contains("user1@example.com"), "not redacted");
        let matches = text.matches('\u{27EA}').count();
        assert_eq!(matches, 100_000, "every value masked once");
        rates.push(bytes as f64 / (1024.0 * 1024.0) / s);
    }
    rates.sort_by(f64::total_cmp);
    json!({"redaction_mb_per_s": {
        "p50": (rates[2] * 10.0).round() / 10.0,
        "min": (rates[0] * 10.0).round() / 10.0,
        "mib": (bytes as f64 / 1048576.0 * 10.0).round() / 10.0,
        "matches": 100_000,
    }})
}
