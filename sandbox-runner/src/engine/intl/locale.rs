//! Locale tags: canonical form, and the lookup of a requested list in the documented set.

use super::super::convert::js_text;
use icu_locale::{Locale, LocaleCanonicalizer};
use rquickjs::{Ctx, Exception, Object};

/// The locales `Intl` offers (docs/scripting.md "Intl"): CLDR's modern locales whose default numbering
/// system is Latin digits, each with data compiled into the runner. A requested locale that is
/// not here falls back by removing subtags from the end (`de-LU` → `de`, ECMA-402's lookup),
/// then to [`DEFAULT`]; `resolvedOptions().locale` names the one used.
pub const SUPPORTED: &[&str] = &[
    "cs", "cs-CZ", "da", "da-DK", "de", "de-AT", "de-CH", "de-DE", "el", "el-GR", "en", "en-AU",
    "en-CA", "en-GB", "en-IE", "en-IN", "en-NZ", "en-US", "en-ZA", "es", "es-419", "es-AR",
    "es-ES", "es-MX", "es-US", "fi", "fi-FI", "fr", "fr-BE", "fr-CA", "fr-CH", "fr-FR", "he",
    "he-IL", "hi", "hi-IN", "hu", "hu-HU", "id", "id-ID", "it", "it-CH", "it-IT", "ja", "ja-JP",
    "ko", "ko-KR", "nb", "nb-NO", "nl", "nl-BE", "nl-NL", "pl", "pl-PL", "pt", "pt-BR", "pt-PT",
    "ro", "ro-RO", "ru", "ru-RU", "sk", "sk-SK", "sv", "sv-SE", "tr", "tr-TR", "uk", "uk-UA", "vi",
    "vi-VN", "zh", "zh-CN", "zh-Hans", "zh-Hant", "zh-HK", "zh-TW",
];

/// The locale used when none of the requested ones is available (as Node's default here).
pub const DEFAULT: &str = "en-US";

/// `Intl.getCanonicalLocales` for one tag: its canonical spelling, or a `RangeError`.
pub fn canonical<'js>(ctx: Ctx<'js>, tag: rquickjs::String<'js>) -> rquickjs::Result<String> {
    let text = js_text(&tag);
    match Locale::try_from_str(&text) {
        Ok(mut locale) => {
            // CLDR's aliases (`iw` → `he`, `cmn` → `zh`, `sh` → `sr-Latn`, `SU` → `RU`, …).
            LocaleCanonicalizer::new_extended().canonicalize(&mut locale);
            Ok(locale.to_string())
        }
        Err(_) => Err(Exception::throw_range(
            &ctx,
            &format!(
                "Incorrect locale information provided: '{text}' is not a BCP 47 language tag"
            ),
        )),
    }
}

/// The longest available prefix of `tag` (without its extensions), if any.
fn best_available(locale: &Locale) -> Option<&'static str> {
    let id = locale.id.to_string();
    let mut candidate = id.as_str();
    loop {
        if let Some(found) = SUPPORTED.iter().find(|s| **s == candidate) {
            return Some(found);
        }
        let cut = candidate.rfind('-')?;
        candidate = &candidate[..cut];
        // A singleton left at the end is not a locale (`x-private`): cut it too.
        if candidate.len() >= 2 && candidate.as_bytes()[candidate.len() - 2] == b'-' {
            candidate = &candidate[..candidate.len() - 2];
        }
    }
}

/// ECMA-402's lookup over canonical tags: `{locale, ext}` where `ext` holds the `-u-` keywords
/// of the requested tag that matched (`{kn: "true", hc: "h12"}`), or the default locale.
pub fn resolve<'js>(ctx: Ctx<'js>, requested: Vec<String>) -> rquickjs::Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    let ext = Object::new(ctx.clone())?;
    let mut chosen = DEFAULT;
    for tag in &requested {
        let Ok(locale) = Locale::try_from_str(tag) else {
            continue;
        };
        if let Some(found) = best_available(&locale) {
            chosen = found;
            for (key, value) in locale.extensions.unicode.keywords.iter() {
                let value = value.to_string();
                let value = if value.is_empty() {
                    "true".into()
                } else {
                    value
                };
                ext.set(key.to_string(), value)?;
            }
            break;
        }
    }
    out.set("locale", chosen)?;
    out.set("ext", ext)?;
    Ok(out)
}

/// `supportedLocalesOf`: the canonical tags of `requested` that have an available prefix.
pub fn supported(requested: Vec<String>) -> Vec<String> {
    requested
        .into_iter()
        .filter(|tag| {
            Locale::try_from_str(tag)
                .ok()
                .and_then(|l| best_available(&l))
                .is_some()
        })
        .collect()
}

/// Parses a tag the JS side built from a resolved locale and keywords (`de-u-kn-true`).
pub fn parse<'js>(ctx: &Ctx<'js>, tag: &str) -> rquickjs::Result<Locale> {
    Locale::try_from_str(tag)
        .map_err(|_| Exception::throw_range(ctx, &format!("invalid locale '{tag}'")))
}
