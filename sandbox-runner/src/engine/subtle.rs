//! `crypto.subtle.digest` (SHA-1, SHA-256, SHA-384, SHA-512), the one part of Web Crypto's
//! `SubtleCrypto` the sandbox offers: keys would have to come from somewhere, and signing or
//! encrypting with them belongs to a tool. `web.js` attaches `subtle` to the `crypto` global
//! (creating it when the randomness module has not), normalizes the algorithm name and wraps
//! the result in a promise, as the standard's method is asynchronous.

use super::text::bytes_of;
use rquickjs::{ArrayBuffer, Ctx, Exception, Value};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

/// The digest of the bytes of a `Uint8Array`, as an `ArrayBuffer`. `algorithm` is the
/// standard's name (`SHA-256`, …), already upper-cased by the caller.
pub fn digest<'js>(
    ctx: Ctx<'js>,
    algorithm: String,
    data: Value<'js>,
) -> rquickjs::Result<ArrayBuffer<'js>> {
    let bytes = bytes_of(&ctx, &data)?;
    let out: Vec<u8> = match algorithm.as_str() {
        "SHA-1" => Sha1::digest(&bytes).to_vec(),
        "SHA-256" => Sha256::digest(&bytes).to_vec(),
        "SHA-384" => Sha384::digest(&bytes).to_vec(),
        "SHA-512" => Sha512::digest(&bytes).to_vec(),
        other => {
            return Err(Exception::throw_message(
                &ctx,
                &format!(
                    "NotSupportedError: digest algorithm '{other}' is not supported; use SHA-1, \
                     SHA-256, SHA-384 or SHA-512"
                ),
            ))
        }
    };
    ArrayBuffer::new(ctx, out)
}
