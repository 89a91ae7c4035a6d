//! `Intl` (ECMA-402) for the runner, on ICU4X with its CLDR data compiled into the binary and
//! jiff's bundled IANA time-zone database: nothing is read from files or the environment, so
//! it works under the lockdown (no new system call).
//!
//! The constructors, option parsing and `resolvedOptions` are JavaScript (`intl.js`); the
//! natives here do the locale-sensitive work. Formatters are built on first use from static
//! data and kept in a small per-process cache ([`cache`]), so a `sort` with a `Collator` does
//! not rebuild one per comparison.

mod cache;
mod collate;
mod datetime;
mod locale;
mod number;
mod relative;
mod segment;

use rquickjs::{Ctx, Function, Object};

/// One function body in three files (each under the size limit), joined at compile time.
const INTL_JS: &str = concat!(
    include_str!("intl.js"),
    include_str!("intl_date.js"),
    include_str!("intl_text.js")
);

/// Defines `Intl` and points `toLocaleString` & co. and `localeCompare` at it. Called once per
/// engine, before any fork.
pub fn install(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    datetime::preload();
    let n = Object::new(ctx.clone())?;
    n.set("canonical", Function::new(ctx.clone(), locale::canonical)?)?;
    n.set("resolve", Function::new(ctx.clone(), locale::resolve)?)?;
    n.set("supported", Function::new(ctx.clone(), locale::supported)?)?;
    n.set("number", Function::new(ctx.clone(), number::format)?)?;
    n.set("plural", Function::new(ctx.clone(), number::plural)?)?;
    n.set(
        "pluralCategories",
        Function::new(ctx.clone(), number::plural_categories)?,
    )?;
    n.set("list", Function::new(ctx.clone(), number::list)?)?;
    n.set("compare", Function::new(ctx.clone(), collate::compare)?)?;
    n.set("date", Function::new(ctx.clone(), datetime::format)?)?;
    n.set("timeZone", Function::new(ctx.clone(), datetime::zone_name)?)?;
    n.set("relative", Function::new(ctx.clone(), relative::format)?)?;
    n.set("segment", Function::new(ctx.clone(), segment::boundaries)?)?;
    let setup: Function = ctx.eval(INTL_JS)?;
    setup.call((n,))
}
