//! `Intl.RelativeTimeFormat` natives: ICU4X's relative-time formatter (`icu_experimental`),
//! one per length and unit.

use super::cache::Cache;
use super::locale::parse;
use super::number::{decimal, Digits};
use icu_experimental::relativetime::options::Numeric;
use icu_experimental::relativetime::{
    RelativeTimeFormatter, RelativeTimeFormatterOptions, RelativeTimeFormatterPreferences,
};
use icu_provider::DataError;
use rquickjs::{Ctx, Exception, Object, Value};
use writeable::Writeable;

thread_local! {
    static FORMATTERS: Cache<RelativeTimeFormatter> = const { Cache::new() };
}

type Constructor = fn(
    RelativeTimeFormatterPreferences,
    RelativeTimeFormatterOptions,
) -> Result<RelativeTimeFormatter, DataError>;

/// The constructor for `style` (long, short, narrow) and a singular ECMA-402 unit.
fn constructor(style: &str, unit: &str) -> Option<Constructor> {
    use RelativeTimeFormatter as R;
    Some(match (style, unit) {
        ("long", "second") => R::try_new_long_second,
        ("long", "minute") => R::try_new_long_minute,
        ("long", "hour") => R::try_new_long_hour,
        ("long", "day") => R::try_new_long_day,
        ("long", "week") => R::try_new_long_week,
        ("long", "month") => R::try_new_long_month,
        ("long", "quarter") => R::try_new_long_quarter,
        ("long", "year") => R::try_new_long_year,
        ("short", "second") => R::try_new_short_second,
        ("short", "minute") => R::try_new_short_minute,
        ("short", "hour") => R::try_new_short_hour,
        ("short", "day") => R::try_new_short_day,
        ("short", "week") => R::try_new_short_week,
        ("short", "month") => R::try_new_short_month,
        ("short", "quarter") => R::try_new_short_quarter,
        ("short", "year") => R::try_new_short_year,
        ("narrow", "second") => R::try_new_narrow_second,
        ("narrow", "minute") => R::try_new_narrow_minute,
        ("narrow", "hour") => R::try_new_narrow_hour,
        ("narrow", "day") => R::try_new_narrow_day,
        ("narrow", "week") => R::try_new_narrow_week,
        ("narrow", "month") => R::try_new_narrow_month,
        ("narrow", "quarter") => R::try_new_narrow_quarter,
        ("narrow", "year") => R::try_new_narrow_year,
        _ => return None,
    })
}

/// `RelativeTimeFormat.prototype.format(value, unit)` for a finite value (`intl.js` checks it
/// and makes the unit singular); `numeric` is `always` or `auto` ("yesterday").
pub fn format<'js>(
    ctx: Ctx<'js>,
    tag: String,
    style: String,
    numeric: String,
    unit: String,
    value: Value<'js>,
) -> rquickjs::Result<String> {
    let Some(make) = constructor(&style, &unit) else {
        return Err(Exception::throw_range(
            &ctx,
            &format!("Invalid unit argument for format() '{unit}'"),
        ));
    };
    let mut d = decimal(&ctx, &value)?;
    Digits::read(&Object::new(ctx.clone())?)?.apply(&mut d);
    let key = format!("{tag}|{style}|{numeric}|{unit}");
    let f = FORMATTERS.with(|c| {
        c.get(&key, || {
            let locale = parse(&ctx, &tag)?;
            let mut options = RelativeTimeFormatterOptions::default();
            options.numeric = Some(if numeric == "auto" {
                Numeric::Auto
            } else {
                Numeric::Always
            });
            make((&locale).into(), options).map_err(|e| {
                Exception::throw_range(&ctx, &format!("no relative-time data for '{tag}': {e}"))
            })
        })
    })?;
    let mut out = String::new();
    f.format(d)
        .write_to(&mut out)
        .map_err(|_| Exception::throw_range(&ctx, "cannot format the relative time"))?;
    Ok(out)
}
