//! `Intl.NumberFormat`, `Intl.PluralRules` and `Intl.ListFormat` natives.
//!
//! The JS side has already validated the options; this module turns the number into a decimal
//! (the shortest form that reads back as the same double, as V8 does), rounds it half away from
//! zero to the requested digits, and formats it with ICU4X.

use super::cache::Cache;
use super::locale::parse;
use crate::engine::convert::js_text;
use fixed_decimal::Sign;
use fixed_decimal::{SignedRoundingMode, UnsignedRoundingMode};
use icu_decimal::input::{Decimal, FloatPrecision, SignDisplay};
use icu_decimal::options::{DecimalFormatterOptions, GroupingStrategy};
use icu_decimal::{DecimalFormatter, DecimalFormatterPreferences};
use icu_experimental::dimension::percent::formatter::PercentFormatter;
use icu_experimental::dimension::percent::options::{
    Display as PercentDisplay, PercentFormatterOptions,
};
use icu_list::options::{ListFormatterOptions, ListLength};
use icu_list::{ListFormatter, ListFormatterPreferences};
use icu_plurals::{PluralCategory, PluralRuleType, PluralRules, PluralRulesOptions};
use rquickjs::{Ctx, Exception, Object, Value};
use writeable::Writeable;

/// A plain decimal formatter, or the locale's percent pattern around one.
enum NumberFormatter {
    Decimal(DecimalFormatter),
    Percent(PercentFormatter<DecimalFormatter>),
}

thread_local! {
    static DECIMALS: Cache<NumberFormatter> = const { Cache::new() };
    static PLURALS: Cache<PluralRules> = const { Cache::new() };
    static LISTS: Cache<ListFormatter> = const { Cache::new() };
}

/// Digit options, as `intl.js` resolved them (ECMA-402's `SetNumberFormatDigitOptions`).
pub struct Digits {
    min_int: i16,
    min_frac: i16,
    max_frac: i16,
    /// `[min, max]` significant digits, when they rule instead of fraction digits.
    significant: Option<(i16, i16)>,
}

fn int_prop(o: &Object<'_>, key: &str) -> rquickjs::Result<Option<i16>> {
    let v: Option<f64> = o.get(key)?;
    Ok(v.map(|v| v.clamp(0.0, 100.0) as i16))
}

impl Digits {
    pub fn read(o: &Object<'_>) -> rquickjs::Result<Self> {
        let min_sig = int_prop(o, "minSig")?;
        let max_sig = int_prop(o, "maxSig")?;
        Ok(Digits {
            min_int: int_prop(o, "minInt")?.unwrap_or(1),
            min_frac: int_prop(o, "minFrac")?.unwrap_or(0),
            max_frac: int_prop(o, "maxFrac")?.unwrap_or(3),
            significant: min_sig.zip(max_sig),
        })
    }

    /// Rounds and pads `d` as these options say.
    pub fn apply(&self, d: &mut Decimal) {
        let half_expand = SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand);
        match self.significant {
            Some((min, max)) => {
                if !d.absolute.is_zero() {
                    let top = d.absolute.nonzero_magnitude_start();
                    d.round_with_mode(top - max + 1, half_expand);
                }
                d.absolute.trim_end();
                let top = if d.absolute.is_zero() {
                    0
                } else {
                    d.absolute.nonzero_magnitude_start()
                };
                d.absolute.pad_end(top - min + 1);
            }
            None => {
                d.round_with_mode(-self.max_frac, half_expand);
                d.absolute.trim_end();
                d.absolute.pad_end(-self.min_frac);
            }
        }
        d.absolute.pad_start(self.min_int);
    }
}

/// The value as a decimal: a finite number, or the digits of a BigInt (given as a string).
pub fn decimal<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<Decimal> {
    let bad =
        |what: &str| Exception::throw_range(ctx, &format!("cannot format {what} as a number"));
    if let Some(s) = value.as_string() {
        let text = js_text(s);
        return Decimal::try_from_str(&text).map_err(|_| bad(&text));
    }
    let n = value
        .as_float()
        .or_else(|| value.as_int().map(f64::from))
        .unwrap_or(f64::NAN);
    Decimal::try_from_f64(n, FloatPrecision::RoundTrip).map_err(|_| bad(&n.to_string()))
}

fn sign_display(name: &str) -> SignDisplay {
    match name {
        "never" => SignDisplay::Never,
        "always" => SignDisplay::Always,
        "exceptZero" => SignDisplay::ExceptZero,
        "negative" => SignDisplay::Negative,
        _ => SignDisplay::Auto,
    }
}

/// `NumberFormat.prototype.format` of a finite value (`intl.js` handles NaN and ±Infinity)
/// with options `{minInt, minFrac, maxFrac, minSig, maxSig, grouping, sign, percent}`.
pub fn format<'js>(
    ctx: Ctx<'js>,
    tag: String,
    value: Value<'js>,
    opts: Object<'js>,
) -> rquickjs::Result<String> {
    let mut d = decimal(&ctx, &value)?;
    if opts.get::<_, Option<bool>>("percent")?.unwrap_or(false) {
        d.multiply_pow10(2);
    }
    Digits::read(&opts)?.apply(&mut d);
    let sign: Option<String> = opts.get("sign")?;
    d.apply_sign_display(sign_display(sign.as_deref().unwrap_or("auto")));
    let grouping = match opts.get::<_, Option<String>>("grouping")?.as_deref() {
        Some("false") => GroupingStrategy::Never,
        Some("always") => GroupingStrategy::Always,
        Some("min2") => GroupingStrategy::Min2,
        _ => GroupingStrategy::Auto,
    };
    let percent = opts.get::<_, Option<bool>>("percent")?.unwrap_or(false);
    // The percent pattern shows a plus sign only when asked to display one explicitly.
    let explicit = percent && d.sign == Sign::Positive;
    if explicit {
        d.sign = Sign::None; // the pattern's own plus sign stands for it
    }
    let key = format!("{tag}|{grouping:?}|{percent}|{explicit}");
    let f = DECIMALS.with(|c| {
        c.get(&key, || {
            let no_data =
                |e| Exception::throw_range(&ctx, &format!("no number data for '{tag}': {e}"));
            let locale = parse(&ctx, &tag)?;
            let mut options = DecimalFormatterOptions::default();
            options.grouping_strategy = Some(grouping);
            let decimal =
                DecimalFormatter::try_new(DecimalFormatterPreferences::from(&locale), options)
                    .map_err(no_data)?;
            if !percent {
                return Ok(NumberFormatter::Decimal(decimal));
            }
            let mut options = PercentFormatterOptions::default();
            options.display = if explicit {
                PercentDisplay::ExplicitSign
            } else {
                PercentDisplay::Standard
            };
            PercentFormatter::try_new_with_decimal_formatter((&locale).into(), decimal, options)
                .map(NumberFormatter::Percent)
                .map_err(no_data)
        })
    })?;
    let mut out = String::new();
    let written = match &*f {
        NumberFormatter::Decimal(f) => f.format(&d).write_to(&mut out),
        NumberFormatter::Percent(f) => f.format(&d).write_to(&mut out),
    };
    written.map_err(|_| Exception::throw_range(&ctx, "cannot format the number"))?;
    Ok(out)
}

fn rules<'js>(
    ctx: &Ctx<'js>,
    tag: &str,
    ordinal: bool,
) -> rquickjs::Result<std::rc::Rc<PluralRules>> {
    let key = format!("{tag}|{ordinal}");
    PLURALS.with(|c| {
        c.get(&key, || {
            let locale = parse(ctx, tag)?;
            let kind = if ordinal {
                PluralRuleType::Ordinal
            } else {
                PluralRuleType::Cardinal
            };
            PluralRules::try_new(
                (&locale).into(),
                PluralRulesOptions::default().with_type(kind),
            )
            .map_err(|e| Exception::throw_range(ctx, &format!("no plural rules for '{tag}': {e}")))
        })
    })
}

fn category_name(c: PluralCategory) -> &'static str {
    match c {
        PluralCategory::Zero => "zero",
        PluralCategory::One => "one",
        PluralCategory::Two => "two",
        PluralCategory::Few => "few",
        PluralCategory::Many => "many",
        PluralCategory::Other => "other",
    }
}

/// `PluralRules.prototype.select` of a finite value, rounded as the digit options say.
pub fn plural<'js>(
    ctx: Ctx<'js>,
    tag: String,
    ordinal: bool,
    value: Value<'js>,
    opts: Object<'js>,
) -> rquickjs::Result<&'static str> {
    let mut d = decimal(&ctx, &value)?;
    Digits::read(&opts)?.apply(&mut d);
    Ok(category_name(rules(&ctx, &tag, ordinal)?.category_for(&d)))
}

/// `resolvedOptions().pluralCategories`, in CLDR order (zero, one, two, few, many, other).
pub fn plural_categories(
    ctx: Ctx<'_>,
    tag: String,
    ordinal: bool,
) -> rquickjs::Result<Vec<&'static str>> {
    Ok(rules(&ctx, &tag, ordinal)?
        .categories()
        .map(category_name)
        .collect())
}

/// `ListFormat.prototype.format`: `kind` is conjunction, disjunction or unit; `style` long,
/// short or narrow.
pub fn list(
    ctx: Ctx<'_>,
    tag: String,
    kind: String,
    style: String,
    items: Vec<String>,
) -> rquickjs::Result<String> {
    let key = format!("{tag}|{kind}|{style}");
    let f = LISTS.with(|c| {
        c.get(&key, || {
            let locale = parse(&ctx, &tag)?;
            let prefs = ListFormatterPreferences::from(&locale);
            let length = match style.as_str() {
                "short" => ListLength::Short,
                "narrow" => ListLength::Narrow,
                _ => ListLength::Wide,
            };
            let options = ListFormatterOptions::default().with_length(length);
            match kind.as_str() {
                "disjunction" => ListFormatter::try_new_or(prefs, options),
                "unit" => ListFormatter::try_new_unit(prefs, options),
                _ => ListFormatter::try_new_and(prefs, options),
            }
            .map_err(|e| Exception::throw_range(&ctx, &format!("no list data for '{tag}': {e}")))
        })
    })?;
    Ok(f.format_to_string(items.iter()))
}
