//! Randomness for scripts: `Math.random()`, `crypto.getRandomValues(typedArray)` and
//! `crypto.randomUUID()`, all drawn from one ChaCha12 generator (`rand`'s `StdRng`) that is
//! seeded from the kernel (`getrandom`) once per execution.
//!
//! QuickJS seeds its own `Math.random` (xorshift64*) from the clock when the context is created
//! and offers no way to reseed it: in a zygote that happens once, before any fork, so every
//! runner forked from it would repeat one sequence. The natives here are installed once, when
//! the engine is created (in the zygote, before any fork); they read the generator through a
//! shared cell that holds nothing until [`Random::reseed`] fills it. The runner calls that
//! after it was forked (or exec'd) and before its seccomp filter, so no two runners share a
//! seed and nothing is derived from the clock. A script that somehow runs unseeded gets an
//! error, never a predictable value.
//!
//! This module owns the `crypto` global; other web-crypto members (`crypto.subtle`) are added
//! to the same object.

use rand::rngs::{StdRng, SysRng};
use rand::{Rng, SeedableRng};
use rquickjs::function::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// The most bytes one `getRandomValues` call may fill (Web Crypto's quota).
pub const MAX_RANDOM_BYTES: usize = 65_536;

/// Why the generator could not be seeded.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    #[error("cannot read a random seed from the kernel: {0}")]
    Seed(String),
}

/// Makes a generator once and drops it, so that its CPU feature detection (the `cpufeatures`
/// flags of the ChaCha backend, set by `CPUID` on first use and kept in a static) is done here:
/// called when the engine is made, in the zygote before any fork, every forked runner inherits
/// the flags instead of running `CPUID` again in [`Random::reseed`] (in a VM each `CPUID` is a
/// trap to the hypervisor: ~2 % of a pooled runner's CPU time in `perf`). No randomness is
/// drawn from it.
pub fn detect_cpu_features() {
    let _ = StdRng::seed_from_u64(0);
}

/// The generator shared by the natives; empty until seeded.
#[derive(Clone, Default)]
pub struct Random(Rc<RefCell<Option<StdRng>>>);

impl Random {
    /// A fresh seed from the kernel (`getrandom`), replacing any previous state.
    pub fn reseed(&self) -> Result<(), CryptoError> {
        let rng =
            StdRng::try_from_rng(&mut SysRng).map_err(|e| CryptoError::Seed(e.to_string()))?;
        *self.0.borrow_mut() = Some(rng);
        Ok(())
    }

    /// A generator from `seed` (a recorded or replayed execution: the host chose the seed and
    /// keeps it in the recording), replacing the kernel's.
    pub fn seed_from(&self, seed: [u8; 32]) {
        *self.0.borrow_mut() = Some(StdRng::from_seed(seed));
    }

    fn with<'js, T>(
        &self,
        ctx: &Ctx<'js>,
        f: impl FnOnce(&mut StdRng) -> T,
    ) -> rquickjs::Result<T> {
        match self.0.borrow_mut().as_mut() {
            Some(rng) => Ok(f(rng)),
            None => Err(Exception::throw_internal(
                ctx,
                "the runner has no random seed (a bug in the runner); no random value was made",
            )),
        }
    }
}

/// A float in [0, 1) with 53 random bits, as `Math.random` returns.
fn unit_float(rng: &mut StdRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A version 4 UUID in its lowercase hyphenated form.
fn uuid_v4(rng: &mut StdRng) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Replaces `Math.random` and defines the `crypto` global. Called once per engine, before
/// any fork; the natives use `random` from then on.
pub fn install<'js>(ctx: &Ctx<'js>, random: &Random) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let math: Object = globals.get("Math")?;
    let r = random.clone();
    let math_random = Function::new(ctx.clone(), move |ctx: Ctx<'js>| r.with(&ctx, unit_float))?
        .with_name("random")?;
    math.set("random", math_random)?;

    let crypto = Object::new(ctx.clone())?;
    let r = random.clone();
    let get_random_values =
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, array: Opt<Value<'js>>| {
            get_random_values(&ctx, &r, array.0)
        })?
        .with_name("getRandomValues")?;
    crypto.set("getRandomValues", get_random_values)?;
    let r = random.clone();
    let random_uuid = Function::new(ctx.clone(), move |ctx: Ctx<'js>| r.with(&ctx, uuid_v4))?
        .with_name("randomUUID")?;
    crypto.set("randomUUID", random_uuid)?;
    let define: Function = ctx.eval(
        "(c) => { Object.defineProperty(globalThis, 'crypto', \
         { value: c, writable: true, enumerable: false, configurable: true }); }",
    )?;
    define.call::<_, ()>((crypto,))
}

/// `crypto.getRandomValues(array)`: fills an integer typed array in place and returns it.
fn get_random_values<'js>(
    ctx: &Ctx<'js>,
    random: &Random,
    array: Option<Value<'js>>,
) -> rquickjs::Result<Value<'js>> {
    let not_integer = || {
        Exception::throw_type(
            ctx,
            "crypto.getRandomValues: the argument must be an integer typed array (Int8Array, \
             Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, \
             BigInt64Array or BigUint64Array)",
        )
    };
    let Some(obj) = array.as_ref().and_then(|a| a.as_object()) else {
        return Err(not_integer());
    };
    let Some(bytes) = integer_array_bytes(obj) else {
        return Err(not_integer());
    };
    let Some(bytes) = bytes else {
        // A detached buffer has no bytes to fill.
        return Ok(obj.clone().into_value());
    };
    if bytes.len() > MAX_RANDOM_BYTES {
        let e = Exception::from_message(
            ctx.clone(),
            &format!(
                "crypto.getRandomValues: the array has {} bytes; at most {MAX_RANDOM_BYTES} can \
                 be filled per call (call it again for more)",
                bytes.len()
            ),
        )?;
        e.set("name", "QuotaExceededError")?;
        return Err(ctx.throw(e.into_value()));
    }
    random.with(ctx, |rng| {
        // SAFETY: `bytes` is the live backing store of the array, valid until JavaScript runs
        // again; no JavaScript runs while it is filled here.
        let slice = unsafe { &mut *bytes.as_ptr() };
        rng.fill_bytes(slice);
    })?;
    Ok(obj.clone().into_value())
}

/// The bytes an integer typed array views: `None` when `obj` is not one (a float array, a
/// plain object), `Some(None)` when its buffer is detached.
#[allow(clippy::option_option)]
fn integer_array_bytes(obj: &Object<'_>) -> Option<Option<std::ptr::NonNull<[u8]>>> {
    use rquickjs::U8Clamped;
    macro_rules! try_kind {
        ($($t:ty),*) => {$(
            if let Some(t) = obj.as_typed_array::<$t>() {
                // `as_raw` is the viewed bytes, whatever the element type.
                return Some(t.as_raw());
            }
        )*};
    }
    try_kind!(u8, i8, U8Clamped, i16, u16, i32, u32, i64, u64);
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_version_and_variant() {
        let mut rng = StdRng::seed_from_u64(7);
        let u = uuid_v4(&mut rng);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
        assert_eq!(u.matches('-').count(), 4);
    }

    #[test]
    fn unit_float_is_in_range() {
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let f = unit_float(&mut rng);
            assert!((0.0..1.0).contains(&f));
        }
    }
}
