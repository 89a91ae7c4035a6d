//! `Intl` inside the locked-down runner: the same strings as Node (20.20, ICU 78) for a table
//! of cases, options it does not implement refused by name, and unknown locales falling back
//! as ECMA-402's lookup says. The expected strings were produced by `node -e` on each
//! expression and are kept here as literals.

use crate::common;
use common::*;
use serde_json::{json, Value};

/// (JavaScript expression, what Node gives for it).
const NODE_CASES: &[(&str, &str)] = &[
    ("new Intl.NumberFormat('de-DE').format(1234567.891)", "1.234.567,891"),
    ("(1234567.891).toLocaleString('en-US')", "1,234,567.891"),
    ("(1234567.891).toLocaleString()", "1,234,567.891"),
    ("(-1234.5).toLocaleString('fr-FR')", "-1\u{202f}234,5"),
    ("(0.5).toLocaleString('de', { minimumFractionDigits: 2 })", "0,50"),
    ("(1.005).toLocaleString('en-US', { maximumFractionDigits: 2 })", "1.01"),
    ("(2.5).toLocaleString('en-US', { maximumFractionDigits: 0 })", "3"),
    ("(123.456).toLocaleString('en', { maximumSignificantDigits: 2 })", "120"),
    ("(42).toLocaleString('en', { minimumIntegerDigits: 4 })", "0,042"),
    ("(1234.5).toLocaleString('en', { useGrouping: false })", "1234.5"),
    ("(5).toLocaleString('en', { signDisplay: 'always' })", "+5"),
    ("(12345678901234567890n).toLocaleString('de-DE')", "12.345.678.901.234.567.890"),
    ("(1234.5).toLocaleString('de-CH')", "1'234.5"),
    ("(1234567.5).toLocaleString('en-IN')", "12,34,567.5"),
    ("(-Infinity).toLocaleString('en')", "-∞"),
    ("NaN.toLocaleString('de')", "NaN"),
    ("new Intl.NumberFormat('es').format(1234.5)", "1234,5"),
    ("new Intl.NumberFormat('pt-BR').format(1234567.25)", "1.234.567,25"),
    ("new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York' }).format(Date.UTC(2026, 10, 24, 3, 30, 5))", "11/23/2026"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleString('en-US', { timeZone: 'America/New_York' })", "11/24/2026, 7:30:05 AM"),
    ("new Date(Date.UTC(2026, 6, 4, 12, 30, 5)).toLocaleString('en-US', { timeZone: 'America/New_York' })", "7/4/2026, 8:30:05 AM"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleString()", "11/24/2026, 12:30:05 PM"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleDateString('de-DE')", "24.11.2026"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleTimeString('de-DE', { timeZone: 'Europe/Berlin' })", "13:30:05"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleString('en-GB', { timeZone: 'Europe/London' })", "24/11/2026, 12:30:05"),
    ("new Date(Date.UTC(2026, 10, 24, 12, 30, 5)).toLocaleDateString('fr-FR', { timeZone: 'Asia/Kolkata' })", "24/11/2026"),
    ("new Intl.DateTimeFormat('en-US', { dateStyle: 'full', timeStyle: 'short', timeZone: 'Asia/Tokyo' }).format(Date.UTC(2026, 10, 24, 12, 30, 5))", "Tuesday, November 24, 2026 at 9:30 PM"),
    ("new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'medium' }).format(Date.UTC(2026, 10, 24, 12, 30, 5))", "Nov 24, 2026, 12:30:05 PM"),
    ("new Intl.DateTimeFormat('en-US', { dateStyle: 'short' }).format(Date.UTC(2026, 10, 24, 12, 30, 5))", "11/24/26"),
    ("new Intl.DateTimeFormat('de-DE', { dateStyle: 'long', timeZone: 'America/New_York' }).format(Date.UTC(2026, 0, 1, 3, 0, 0))", "31. Dezember 2025"),
    ("new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'long', day: 'numeric' }).format(Date.UTC(2026, 10, 5))", "November 5, 2026"),
    ("new Intl.DateTimeFormat('en-US', { month: '2-digit', day: '2-digit', year: 'numeric' }).format(Date.UTC(2026, 10, 5))", "11/05/2026"),
    ("new Intl.DateTimeFormat('en-US', { hour: '2-digit', minute: '2-digit', timeZone: 'America/Los_Angeles' }).format(Date.UTC(2026, 10, 5, 17, 3))", "09:03 AM"),
    ("new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit', hour12: false }).format(Date.UTC(2026, 10, 5, 17, 3))", "17:03"),
    ("new Intl.DateTimeFormat('ja-JP', { dateStyle: 'long' }).format(Date.UTC(2026, 10, 5))", "2026年11月5日"),
    ("new Intl.DateTimeFormat('en-US', { timeZone: 'america/new_york' }).resolvedOptions().timeZone", "America/New_York"),
    ("new Intl.DateTimeFormat().resolvedOptions().timeZone", "UTC"),
    ("['a10', 'a2', 'a1', 'B', 'b', 'á'].sort(new Intl.Collator('en', { numeric: true }).compare).join()", "á,a1,a2,a10,b,B"),
    ("['file10', 'file9', 'File1'].sort(new Intl.Collator('en-u-kn-true').compare).join()", "File1,file9,file10"),
    ("['z', 'ä', 'a'].sort(new Intl.Collator('de').compare).join()", "a,ä,z"),
    ("['z', 'ä', 'a'].sort(new Intl.Collator('sv').compare).join()", "a,z,ä"),
    ("'a'.localeCompare('B')", "-1"),
    ("'a'.localeCompare('á', 'en', { sensitivity: 'base' })", "0"),
    ("'a'.localeCompare('A', 'en', { sensitivity: 'accent' })", "0"),
    ("'a'.localeCompare('A', 'en', { sensitivity: 'case' })", "-1"),
    ("'a'.localeCompare('á', 'en', { sensitivity: 'case' })", "0"),
    ("'2'.localeCompare('10', 'en', { numeric: true })", "-1"),
    ("'2'.localeCompare('10')", "1"),
    ("[...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment('a👨\u{200d}👩\u{200d}👧🇫🇷é👍🏽')].map((s) => s.segment + '@' + s.index).join('|')", "a@0|👨\u{200d}👩\u{200d}👧@1|🇫🇷@9|é@13|👍🏽@14"),
    ("[...new Intl.Segmenter('en', { granularity: 'word' }).segment('Hello, world! 42 times.')].filter((s) => s.isWordLike).map((s) => s.segment).join('|')", "Hello|world|42|times"),
    ("[...new Intl.Segmenter('en', { granularity: 'sentence' }).segment('One. Two? Three!')].map((s) => s.segment).join('|')", "One. |Two? |Three!"),
    ("new Intl.Segmenter('en').segment('a👨\u{200d}👩\u{200d}👧b').containing(3).segment", "👨\u{200d}👩\u{200d}👧"),
    ("[1, 2, 5, 0].map((n) => new Intl.PluralRules('en').select(n)).join()", "one,other,other,other"),
    ("[1, 2, 3, 4, 11, 22].map((n) => new Intl.PluralRules('en', { type: 'ordinal' }).select(n)).join()", "one,two,few,other,other,two"),
    ("[1, 2, 5, 21, 1.5].map((n) => new Intl.PluralRules('ru').select(n)).join()", "one,few,many,one,other"),
    ("new Intl.PluralRules('pl').resolvedOptions().pluralCategories.slice().sort().join()", "few,many,one,other"),
    ("new Intl.ListFormat('en').format(['a', 'b', 'c'])", "a, b, and c"),
    ("new Intl.ListFormat('en', { type: 'disjunction' }).format(['a', 'b', 'c'])", "a, b, or c"),
    ("new Intl.ListFormat('de').format(['a', 'b', 'c'])", "a, b und c"),
    ("new Intl.ListFormat('es').format(['a', 'b', 'c'])", "a, b y c"),
    ("Intl.getCanonicalLocales(['EN-us', 'de-de', 'en-US']).join()", "en-US,de-DE"),
    ("new Intl.NumberFormat('fr-CA').resolvedOptions().locale", "fr-CA"),
    ("new Intl.Collator('de-u-kn-true').resolvedOptions().locale", "de-u-kn"),
    ("Intl.NumberFormat.supportedLocalesOf(['fr', 'de-AT']).join()", "fr,de-AT"),
    ("(0.256).toLocaleString('en', { style: 'percent' })", "26%"),
    ("(0.256).toLocaleString('de', { style: 'percent', maximumFractionDigits: 1 })", "25,6\u{a0}%"),
    ("(-0.5).toLocaleString('fr', { style: 'percent' })", "-50\u{a0}%"),
    ("(0.05).toLocaleString('en', { style: 'percent', signDisplay: 'always' })", "+5%"),
    ("new Intl.NumberFormat('tr', { style: 'percent' }).format(0.5)", "%50"),
    ("new Intl.RelativeTimeFormat('en').format(-1, 'day')", "1 day ago"),
    ("new Intl.RelativeTimeFormat('en', { numeric: 'auto' }).format(-1, 'day')", "yesterday"),
    ("new Intl.RelativeTimeFormat('en').format(3, 'hours')", "in 3 hours"),
    ("new Intl.RelativeTimeFormat('de').format(-2, 'month')", "vor 2 Monaten"),
    ("new Intl.RelativeTimeFormat('en', { style: 'short' }).format(5, 'minute')", "in 5 min."),
    ("new Intl.RelativeTimeFormat('fr', { numeric: 'auto' }).format(0, 'day')", "aujourd’hui"),
    ("new Intl.RelativeTimeFormat('es', { style: 'narrow' }).format(-3, 'week')", "hace 3 sem."),
    ("NaN.toLocaleString('en', { signDisplay: 'always' })", "+NaN"),
    ("Infinity.toLocaleString('en', { minimumFractionDigits: 2 })", "∞"),
    ("NaN.toLocaleString('de', { style: 'percent' })", "NaN\u{a0}%"),
    ("(-Infinity).toLocaleString('sv')", "\u{2212}∞"),
    ("Intl.getCanonicalLocales(['iw', 'cmn', 'sh', 'ru-SU', 'mo', 'de-DE-u-kn-true']).join()", "he,zh,sr-Latn,ru-RU,ro,de-DE-u-kn"),
];

/// Evaluates each expression in the sandbox; a throw becomes `threw <name>: <message>`.
fn table_script(cases: &[(&str, &str)]) -> String {
    let mut code = String::from("const r = [];\n");
    for (expr, _) in cases {
        code.push_str(&format!(
            "try {{ r.push(String({expr})); }} catch (e) {{ r.push('threw ' + e.name + ': ' + e.message); }}\n"
        ));
    }
    code.push_str("return r;");
    code
}

#[tokio::test]
async fn intl_matches_node_for_the_table_of_cases() {
    let o = run(&local_catalog(), &table_script(NODE_CASES)).await;
    assert!(o.success, "{o:?}");
    let got = o.result.as_array().unwrap();
    let wrong: Vec<String> = NODE_CASES
        .iter()
        .zip(got)
        .filter(|((_, want), got)| got.as_str() != Some(want))
        .map(|((expr, want), got)| format!("{expr}\n    node: {want:?}\n    ours: {got}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        NODE_CASES.len(),
        wrong.join("\n")
    );
}

#[tokio::test]
async fn unsupported_options_and_zones_are_refused_by_name() {
    let o = run(
        &local_catalog(),
        r#"
        const t = (f) => { try { return 'returned ' + String(f()); } catch (e) { return e.name + ': ' + e.message; } };
        return [
          t(() => new Intl.NumberFormat('en', { style: 'currency', currency: 'EUR' })),
          t(() => (5).toLocaleString('en', { style: 'unit', unit: 'meter' })),
          t(() => new Intl.NumberFormat('en', { notation: 'compact' })),
          t(() => new Intl.NumberFormat('en', { roundingMode: 'ceil' })),
          t(() => new Intl.DateTimeFormat('en', { timeZone: 'Mars/Olympus_Mons' })),
          t(() => new Intl.DateTimeFormat('en', { timeZoneName: 'short' })),
          t(() => new Intl.DateTimeFormat('en', { timeStyle: 'long' })),
          t(() => new Intl.DateTimeFormat('en', { dateStyle: 'short', month: 'long' })),
          t(() => new Intl.DateTimeFormat('en', { year: 'numeric', weekday: 'long' })),
          t(() => new Intl.Collator('en', { usage: 'search' })),
          t(() => new Intl.RelativeTimeFormat('en').format(1, 'fortnight')),
          t(() => new Intl.NumberFormat('en', { style: 'decimals' })),
          t(() => new Intl.NumberFormat('not a tag')),
          t(() => Intl.PluralRules()),
          t(() => new Intl.DateTimeFormat('en').format(NaN)),
          t(() => new Date(NaN).toLocaleString()),
        ];
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!([
            "RangeError: Intl.NumberFormat: style 'currency' is not supported in this sandbox (supported: 'decimal', 'percent')",
            "RangeError: Intl.NumberFormat: style 'unit' is not supported in this sandbox (supported: 'decimal', 'percent')",
            "RangeError: Intl.NumberFormat: notation 'compact' is not supported in this sandbox (supported: 'standard')",
            "RangeError: Intl.NumberFormat: roundingMode 'ceil' is not supported in this sandbox (supported: 'halfExpand')",
            "RangeError: Invalid time zone specified: Mars/Olympus_Mons",
            "RangeError: Intl.DateTimeFormat: the option 'timeZoneName' is not supported in this sandbox (no era, day-period or time-zone-name fields)",
            "RangeError: Intl.DateTimeFormat: timeStyle 'long' is not supported in this sandbox (supported: 'medium', 'short')",
            "TypeError: Can't set option month when dateStyle is used",
            "RangeError: Intl.DateTimeFormat: the combination of date fields weekday, year is not supported in this sandbox",
            "RangeError: Intl.Collator: usage 'search' is not supported in this sandbox (supported: 'sort')",
            "RangeError: Invalid unit argument for format() 'fortnight'",
            "RangeError: Value decimals out of range for Intl.NumberFormat options property style",
            "RangeError: Incorrect locale information provided: 'not a tag' is not a BCP 47 language tag",
            "TypeError: Constructor Intl.PluralRules requires 'new'",
            "RangeError: Invalid time value",
            "returned Invalid Date",
        ])
    );
}

#[tokio::test]
async fn unavailable_locales_fall_back_by_lookup_and_say_so() {
    let o = run(
        &local_catalog(),
        r#"
        const loc = (C, l) => new C(l).resolvedOptions().locale;
        return [
          loc(Intl.NumberFormat, 'de-LU'),
          loc(Intl.NumberFormat, ['xx-YY', 'fr-CA']),
          loc(Intl.Collator, 'tlh'),
          loc(Intl.DateTimeFormat, 'zh-Hant-TW'),
          loc(Intl.PluralRules, undefined),
          new Intl.NumberFormat('tlh').format(1234.5),
          Intl.Collator.supportedLocalesOf(['tlh', 'de-LU', 'ja']),
          new Intl.DateTimeFormat('en', { hour: 'numeric', timeZone: 'Etc/UTC' }).resolvedOptions(),
          Object.prototype.toString.call(Intl),
          typeof Intl.Segmenter.supportedLocalesOf,
        ];
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    assert_eq!(
        o.result,
        json!([
            "de",
            "fr-CA",
            "en-US",
            "zh-Hant",
            "en-US",
            "1,234.5",
            ["de-LU", "ja"],
            {"locale": "en", "calendar": "gregory", "numberingSystem": "latn", "timeZone": "UTC",
             "hourCycle": "h12", "hour12": true, "hour": "numeric"},
            "[object Intl]",
            "function",
        ])
    );
}

#[tokio::test]
async fn segments_are_iterable_and_bounded() {
    let o = run(
        &local_catalog(),
        r#"
        const seg = new Intl.Segmenter('en', { granularity: 'word' }).segment('ab cd');
        const first = [...seg][0];
        const again = [...seg].length;
        let refused = '';
        try { new Intl.Segmenter().segment('x'.repeat(5 * 1024 * 1024)); } catch (e) { refused = e.name; }
        return [first, again, seg.containing(4), seg.containing(9), refused];
        "#,
    )
    .await;
    assert!(o.success, "{o:?}");
    let v: &Value = &o.result;
    assert_eq!(
        v,
        &json!([
            {"segment": "ab", "index": 0, "input": "ab cd", "isWordLike": true},
            3,
            {"segment": "cd", "index": 3, "input": "ab cd", "isWordLike": true},
            null,
            "RangeError",
        ])
    );
}
