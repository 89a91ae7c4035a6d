//! The natives behind `TextEncoder` and `TextDecoder` (WHATWG Encoding, via `encoding_rs`).
//!
//! The classes are JavaScript (`web.js`); they keep a stream's undecoded tail bytes themselves
//! and pass them back with the next chunk, so no decoder state lives on the Rust side.

use super::convert::js_text;
use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};
use rquickjs::{Ctx, Exception, Object, TypedArray, Value};

/// The bytes of a `Uint8Array` (the JS side passes every `BufferSource` as one).
pub fn bytes_of<'js>(ctx: &Ctx<'js>, v: &Value<'js>) -> rquickjs::Result<Vec<u8>> {
    let arr = TypedArray::<u8>::from_value(v.clone())
        .map_err(|_| Exception::throw_type(ctx, "expected a Uint8Array"))?;
    // SAFETY: the slice is copied before any JavaScript runs again.
    let bytes = unsafe { arr.as_bytes() }.map(<[u8]>::to_vec);
    Ok(bytes.unwrap_or_default())
}

/// `TextEncoder.prototype.encode`: the string as UTF-8 (lone surrogates become U+FFFD, as the
/// standard's USVString conversion says).
pub fn encode<'js>(
    ctx: Ctx<'js>,
    s: rquickjs::String<'js>,
) -> rquickjs::Result<TypedArray<'js, u8>> {
    TypedArray::new(ctx, js_text(&s).into_bytes())
}

/// The encoding's name as `TextDecoder.prototype.encoding` gives it (`"utf-8"`,
/// `"windows-1252"`, …), or `undefined` for a label the standard does not know or that maps to
/// the `replacement` encoding (both a `RangeError` in the constructor).
pub fn canonical(label: String) -> Option<String> {
    let enc = Encoding::for_label(label.trim().as_bytes())?;
    if enc == encoding_rs::REPLACEMENT {
        return None;
    }
    Some(enc.name().to_ascii_lowercase())
}

/// Decodes `bytes` (the previous call's tail, then the new chunk) in `label`'s encoding without
/// BOM handling (the JS side strips a leading U+FEFF). With `stream`, an incomplete sequence at
/// the end is not decoded: its length is returned so the caller keeps those bytes for the next
/// call. Returns `[text, kept]`; throws `TypeError` on malformed input when `fatal`.
pub fn decode<'js>(
    ctx: Ctx<'js>,
    label: String,
    bytes: Value<'js>,
    fatal: bool,
    stream: bool,
) -> rquickjs::Result<Object<'js>> {
    let Some(enc) = Encoding::for_label(label.as_bytes()) else {
        return Err(Exception::throw_range(
            &ctx,
            &format!("unknown encoding '{label}'"),
        ));
    };
    let bytes = bytes_of(&ctx, &bytes)?;
    let kept = if stream {
        incomplete_tail(enc, &bytes)
    } else {
        Some(0)
    };
    let kept = match kept {
        Some(k) => k,
        None => {
            return Err(Exception::throw_type(
                &ctx,
                &format!(
                    "TextDecoder: streaming is supported for UTF-8, UTF-16 and single-byte \
                     encodings, not {}; decode the whole input in one call",
                    enc.name()
                ),
            ))
        }
    };
    let body = &bytes[..bytes.len() - kept];
    let text = if fatal {
        match enc.decode_without_bom_handling_and_without_replacement(body) {
            Some(t) => t,
            None => {
                return Err(Exception::throw_type(
                    &ctx,
                    &format!(
                        "The encoded data was not valid for encoding {}",
                        enc.name().to_ascii_lowercase()
                    ),
                ))
            }
        }
    } else {
        enc.decode_without_bom_handling(body).0
    };
    let out = rquickjs::Array::new(ctx.clone())?;
    out.set(0, text.as_ref())?;
    out.set(1, kept as u32)?;
    Ok(out.into_object())
}

/// How many bytes at the end of `bytes` may be the start of a character the next chunk
/// completes. Keeping too many is harmless (they are decoded with the next chunk, which gives
/// the same text as decoding the whole input); keeping too few would split a character.
/// `None`: the encoding has state this cannot see (the legacy CJK encodings).
fn incomplete_tail(enc: &'static Encoding, bytes: &[u8]) -> Option<usize> {
    if enc == UTF_8 {
        return Some(utf8_tail(bytes));
    }
    if enc == UTF_16LE || enc == UTF_16BE {
        let odd = bytes.len() % 2;
        let even = &bytes[..bytes.len() - odd];
        let last = even.len().checked_sub(2).map(|i| {
            if enc == UTF_16LE {
                u16::from_le_bytes([even[i], even[i + 1]])
            } else {
                u16::from_be_bytes([even[i], even[i + 1]])
            }
        });
        let lead = last.is_some_and(|u| (0xD800..0xDC00).contains(&u));
        return Some(odd + if lead { 2 } else { 0 });
    }
    if enc.is_single_byte() {
        return Some(0);
    }
    None
}

/// The length of an unfinished UTF-8 sequence at the end of `bytes` (0 when it ends whole).
fn utf8_tail(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for its lead
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if back < need { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_tails() {
        assert_eq!(utf8_tail(b"abc"), 0);
        assert_eq!(utf8_tail(&[0x61, 0xE2, 0x82]), 2);
        assert_eq!(utf8_tail(&[0xE2, 0x82, 0xAC]), 0);
        assert_eq!(utf8_tail(&[0xF0, 0x9F, 0x98]), 3);
        assert_eq!(utf8_tail(&[0xF0]), 1);
        assert_eq!(utf8_tail(&[0x80, 0x80, 0x80]), 0);
    }

    #[test]
    fn utf16_tails() {
        assert_eq!(incomplete_tail(UTF_16LE, &[0x61, 0x00, 0x3D]), Some(1));
        assert_eq!(incomplete_tail(UTF_16LE, &[0x3D, 0xD8]), Some(2));
        assert_eq!(incomplete_tail(UTF_16BE, &[0xD8, 0x3D, 0xDE]), Some(3));
        assert_eq!(incomplete_tail(encoding_rs::SHIFT_JIS, b"a"), None);
    }
}
