//! The operating-system calls of a Python script (monty suspends on each instead of making it):
//! the clock is answered, the environment is empty, and every file operation is refused with a
//! `PermissionError` saying where files are reached from here (a tool). Nothing here touches the
//! kernel beyond `clock_gettime`, which the runner's seccomp filter allows. In a recorded or
//! replayed execution the clock is read through its [`ClockLog`] (kept, or given back).

use crate::engine::replay_clock::ClockLog;
use monty_types::{
    ExcType, ExtFunctionResult, MontyDate, MontyDateTime, MontyException, MontyObject,
    OsFunctionCall,
};

/// The answer to one OS call.
pub fn answer(call: OsFunctionCall, clock: Option<&mut ClockLog>) -> ExtFunctionResult {
    let now_us = move || match clock {
        Some(c) => c.now_us(),
        None => jiff::Timestamp::now().as_microsecond(),
    };
    match call {
        OsFunctionCall::DateToday => {
            let (date, _) = now(0, now_us());
            MontyObject::Date(date).into()
        }
        OsFunctionCall::DateTimeNow(tz) => {
            let offset = tz.as_ref().map_or(0, |z| z.offset_seconds);
            let (date, (h, m, s, us)) = now(offset, now_us());
            MontyObject::DateTime(MontyDateTime {
                year: date.year,
                month: date.month,
                day: date.day,
                hour: h,
                minute: m,
                second: s,
                microsecond: us,
                offset_seconds: tz.as_ref().map(|z| z.offset_seconds),
                timezone_name: tz.and_then(|z| z.name),
            })
            .into()
        }
        // The runner's environment is empty (the host starts it with none).
        OsFunctionCall::Getenv(args) => args.default.into(),
        OsFunctionCall::GetEnviron => MontyObject::Dict(Vec::new().into()).into(),
        other => MontyException::new(
            ExcType::PermissionError,
            Some(format!(
                "PERMISSION_DENIED: {} is not available: the sandbox has no filesystem. Read and \
                 write files through an MCP tool (a filesystem server configured in mcpServers)",
                other.name()
            )),
        )
        .into(),
    }
}

/// The civil date and time at `at_us` (microseconds since the Unix epoch), at `offset` seconds
/// from UTC (naive `now()` is UTC: the runner has no time zone).
fn now(offset: i32, at_us: i64) -> (MontyDate, (u8, u8, u8, u32)) {
    let zone = jiff::tz::Offset::from_seconds(offset)
        .map(jiff::tz::TimeZone::fixed)
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let at = jiff::Timestamp::from_microsecond(at_us).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let civil = zone.to_datetime(at);
    let date = MontyDate {
        year: i32::from(civil.year()),
        month: civil.month().unsigned_abs(),
        day: civil.day().unsigned_abs(),
    };
    let time = (
        civil.hour().unsigned_abs(),
        civil.minute().unsigned_abs(),
        civil.second().unsigned_abs(),
        u32::try_from(civil.subsec_nanosecond() / 1000).unwrap_or(0),
    );
    (date, time)
}
