//! `Intl.DateTimeFormat` natives: the time in an IANA zone (jiff's bundled tzdb, compiled in;
//! nothing read from /usr/share/zoneinfo or `TZ`) formatted by ICU4X's semantic field sets.
//!
//! `intl.js` maps ECMA-402's options to a field set (`{date, time, length, year, align}`,
//! see [`field_set`]); options ICU4X cannot express are refused there with a `RangeError`.

use super::cache::Cache;
use super::locale::parse;
use icu_datetime::fieldsets::builder::{DateFields, FieldSetBuilder};
use icu_datetime::fieldsets::enums::CompositeDateTimeFieldSet;
use icu_datetime::input::{Date, DateTime, Time};
use icu_datetime::options::{Alignment, Length, SubsecondDigits, TimePrecision, YearStyle};
use icu_datetime::{DateTimeFormatter, DateTimeFormatterPreferences};
use rquickjs::{Ctx, Exception, Object};

thread_local! {
    static FORMATTERS: Cache<DateTimeFormatter<CompositeDateTimeFieldSet>> = const { Cache::new() };
}

/// Loads jiff's time-zone database now (its global handle is made on first use): called
/// before the lockdown, in the zygote, so runners find it ready.
pub fn preload() {
    let _ = jiff::tz::db().get("America/New_York");
}

/// The zone's IANA name as `resolvedOptions().timeZone` gives it (`america/new_york` →
/// `America/New_York`; `Etc/UTC`, `Etc/GMT`, `GMT` → `UTC`), or `undefined` if unknown.
pub fn zone_name(name: String) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    if matches!(upper.as_str(), "UTC" | "ETC/UTC" | "ETC/GMT" | "GMT") {
        return Some("UTC".into());
    }
    let tz = jiff::tz::db().get(&name).ok()?;
    tz.iana_name().map(str::to_owned)
}

fn text_prop(o: &Object<'_>, key: &str) -> rquickjs::Result<String> {
    Ok(o.get::<_, Option<String>>(key)?.unwrap_or_default())
}

/// The ICU4X field set for `{date, time, length, year, align}` as `intl.js` encodes them.
fn field_set<'js>(ctx: &Ctx<'js>, spec: &Object<'js>) -> rquickjs::Result<FieldSetBuilder> {
    let mut b = FieldSetBuilder::default();
    b.date_fields = match text_prop(spec, "date")?.as_str() {
        "" => None,
        "D" => Some(DateFields::D),
        "MD" => Some(DateFields::MD),
        "YMD" => Some(DateFields::YMD),
        "DE" => Some(DateFields::DE),
        "MDE" => Some(DateFields::MDE),
        "YMDE" => Some(DateFields::YMDE),
        "E" => Some(DateFields::E),
        "M" => Some(DateFields::M),
        "YM" => Some(DateFields::YM),
        "Y" => Some(DateFields::Y),
        other => {
            return Err(Exception::throw_range(
                ctx,
                &format!("date fields '{other}'"),
            ))
        }
    };
    b.time_precision = match text_prop(spec, "time")?.as_str() {
        "" => None,
        "h" => Some(TimePrecision::Hour),
        "m" => Some(TimePrecision::Minute),
        "s" => Some(TimePrecision::Second),
        "1" => Some(TimePrecision::Subsecond(SubsecondDigits::S1)),
        "2" => Some(TimePrecision::Subsecond(SubsecondDigits::S2)),
        "3" => Some(TimePrecision::Subsecond(SubsecondDigits::S3)),
        other => {
            return Err(Exception::throw_range(
                ctx,
                &format!("time precision '{other}'"),
            ))
        }
    };
    b.length = Some(match text_prop(spec, "length")?.as_str() {
        "long" => Length::Long,
        "medium" => Length::Medium,
        _ => Length::Short,
    });
    if b.date_fields.is_some_and(|d| !matches!(d, DateFields::E)) {
        b.year_style = match text_prop(spec, "year")?.as_str() {
            "full" => Some(YearStyle::Full),
            "era" => Some(YearStyle::WithEra),
            _ => Some(YearStyle::Auto),
        };
    }
    if text_prop(spec, "align")? == "column" {
        b.alignment = Some(Alignment::Column);
    }
    Ok(b)
}

/// Formats `epoch_ms` in `zone` for `tag` (with its `-u-hc`/`-u-ca` keywords) and `spec`.
pub fn format<'js>(
    ctx: Ctx<'js>,
    tag: String,
    zone: String,
    epoch_ms: f64,
    spec: Object<'js>,
) -> rquickjs::Result<String> {
    let range = |what: String| Exception::throw_range(&ctx, &what);
    if !epoch_ms.is_finite() || epoch_ms.abs() > 8.64e15 {
        return Err(range("Invalid time value".into()));
    }
    let tz = jiff::tz::db()
        .get(&zone)
        .map_err(|_| range(format!("Invalid time zone specified: {zone}")))?;
    let ts = jiff::Timestamp::from_millisecond(epoch_ms.floor() as i64)
        .map_err(|e| range(format!("Invalid time value: {e}")))?;
    let local = tz.to_datetime(ts);
    let date = Date::try_new_iso(
        i32::from(local.year()),
        local.month().unsigned_abs(),
        local.day().unsigned_abs(),
    )
    .map_err(|e| range(format!("date out of range: {e}")))?;
    let time = Time::try_new(
        local.hour().unsigned_abs(),
        local.minute().unsigned_abs(),
        local.second().unsigned_abs(),
        local.subsec_nanosecond().unsigned_abs(),
    )
    .map_err(|e| range(format!("time out of range: {e}")))?;
    let builder = field_set(&ctx, &spec)?;
    let key = format!("{tag}|{builder:?}");
    let f = FORMATTERS.with(|c| {
        c.get(&key, || {
            let locale = parse(&ctx, &tag)?;
            let fields = builder
                .build_composite_datetime()
                .map_err(|e| range(format!("unsupported combination of date-time options: {e}")))?;
            DateTimeFormatter::try_new(DateTimeFormatterPreferences::from(&locale), fields)
                .map_err(|e| range(format!("no date-time data for '{tag}': {e}")))
        })
    })?;
    Ok(f.format(&DateTime { date, time }).to_string())
}
