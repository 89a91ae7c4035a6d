//! `Intl.Collator` and `String.prototype.localeCompare`: ICU4X's collation (UCA with the
//! locale's CLDR tailoring).

use super::cache::Cache;
use super::locale::parse;
use crate::engine::convert::js_text;
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, Strength};
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};
use rquickjs::{Ctx, Exception};

thread_local! {
    static COLLATORS: Cache<CollatorBorrowed<'static>> = const { Cache::new() };
}

/// ECMA-402's sensitivity as ICU options: `base` compares letters only, `accent` adds
/// accents, `case` adds case but not accents, `variant` (the default for sorting) everything.
fn options(sensitivity: &str, ignore_punctuation: bool) -> CollatorOptions {
    let mut o = CollatorOptions::default();
    let (strength, case_level) = match sensitivity {
        "base" => (Strength::Primary, CaseLevel::Off),
        "accent" => (Strength::Secondary, CaseLevel::Off),
        "case" => (Strength::Primary, CaseLevel::On),
        _ => (Strength::Tertiary, CaseLevel::Off),
    };
    o.strength = Some(strength);
    o.case_level = Some(case_level);
    if ignore_punctuation {
        o.alternate_handling = Some(AlternateHandling::Shifted);
    }
    o
}

/// Compares `a` and `b` as the collator for `tag` (with its `-u-kn`/`-u-kf` keywords) and the
/// options would: -1, 0 or 1.
pub fn compare<'js>(
    ctx: Ctx<'js>,
    tag: String,
    sensitivity: String,
    ignore_punctuation: bool,
    a: rquickjs::String<'js>,
    b: rquickjs::String<'js>,
) -> rquickjs::Result<i32> {
    let key = format!("{tag}|{sensitivity}|{ignore_punctuation}");
    let collator = COLLATORS.with(|c| {
        c.get(&key, || {
            let locale = parse(&ctx, &tag)?;
            Collator::try_new(
                CollatorPreferences::from(&locale),
                options(&sensitivity, ignore_punctuation),
            )
            .map_err(|e| {
                Exception::throw_range(&ctx, &format!("no collation data for '{tag}': {e}"))
            })
        })
    })?;
    Ok(collator.compare(&js_text(&a), &js_text(&b)) as i32)
}
