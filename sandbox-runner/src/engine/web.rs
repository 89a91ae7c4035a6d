//! The web-platform globals (WinterTC's Minimum Common API, the part that makes sense without
//! network or files): classes in `web.js`, natives in `text`, `weburl` and `subtle`, timers in
//! `timers`.
//!
//! `web.js` is evaluated once, when the engine is created (in a zygote: before any fork, so every
//! runner starts with the classes in its copy-on-write heap and an execution pays nothing for
//! them). It returns a function the runner calls per execution with the timer natives, which
//! hold that execution's callbacks.

use super::timers::Timers;
use super::{subtle, text, weburl};
use rquickjs::function::{Opt, Rest};
use rquickjs::{Ctx, Function, Object, Value};
use std::rc::Rc;

/// One function body in three files (each under the size limit), joined at compile time.
const WEB_JS: &str = concat!(
    include_str!("web.js"),
    include_str!("web_url.js"),
    include_str!("web_tail.js")
);

/// Defines the web globals and returns the per-execution binder of the timers.
pub fn install<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let natives = Object::new(ctx.clone())?;
    natives.set("encode", Function::new(ctx.clone(), text::encode)?)?;
    natives.set("decode", Function::new(ctx.clone(), text::decode)?)?;
    natives.set("encoding", Function::new(ctx.clone(), text::canonical)?)?;
    natives.set("urlParse", Function::new(ctx.clone(), weburl::parse)?)?;
    natives.set("urlSet", Function::new(ctx.clone(), weburl::set)?)?;
    natives.set(
        "searchParse",
        Function::new(ctx.clone(), weburl::search_parse)?,
    )?;
    natives.set(
        "searchSerialize",
        Function::new(ctx.clone(), weburl::search_serialize)?,
    )?;
    natives.set("digest", Function::new(ctx.clone(), subtle::digest)?)?;
    let setup: Function = ctx.eval(WEB_JS)?;
    setup.call((natives,))
}

/// Gives this execution's `setTimeout` & co. to the web globals.
pub fn bind_timers<'js>(
    ctx: &Ctx<'js>,
    timers: &Rc<Timers<'js>>,
    bind: Function<'js>,
) -> rquickjs::Result<()> {
    let t = timers.clone();
    let add = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              repeat: bool,
              callback: Value<'js>,
              delay: Opt<Value<'js>>,
              args: Rest<Value<'js>>| { t.add(&ctx, callback, delay, args, repeat) },
    )?;
    let t = timers.clone();
    let clear = Function::new(ctx.clone(), move |ctx: Ctx<'js>, id: Opt<Value<'js>>| {
        t.clear(&ctx, id)
    })?;
    bind.call((add, clear))
}
