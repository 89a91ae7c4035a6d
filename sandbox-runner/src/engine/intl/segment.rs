//! `Intl.Segmenter` natives: Unicode text segmentation (UAX #29) by ICU4X's rule-based
//! segmenters, with boundaries converted to UTF-16 indices (what JavaScript strings count).
//!
//! Word segmentation uses the rules for scripts that separate words: Chinese, Japanese, Thai,
//! Lao, Khmer and Burmese text is not split with dictionaries (docs/scripting.md "Intl" says so); grapheme
//! and sentence segmentation are complete.

use crate::engine::convert::js_text;
use icu_segmenter::options::{SentenceBreakInvariantOptions, WordBreakInvariantOptions};
use icu_segmenter::{GraphemeClusterSegmenter, SentenceSegmenter, WordSegmenter};
use rquickjs::{Ctx, Exception};

/// The boundaries of `text` for `granularity` as pairs `[index, wordLike]` (UTF-16 index of the
/// end of each segment; `wordLike` is 1 for a word-like segment of `word` granularity, else 0).
pub fn boundaries<'js>(
    ctx: Ctx<'js>,
    granularity: String,
    text: rquickjs::String<'js>,
) -> rquickjs::Result<Vec<u32>> {
    let s = js_text(&text);
    let ends: Vec<(usize, bool)> = match granularity.as_str() {
        "grapheme" => GraphemeClusterSegmenter::new()
            .segment_str(&s)
            .map(|i| (i, false))
            .collect(),
        "sentence" => SentenceSegmenter::new(SentenceBreakInvariantOptions::default())
            .segment_str(&s)
            .map(|i| (i, false))
            .collect(),
        "word" => WordSegmenter::new_for_non_complex_scripts(WordBreakInvariantOptions::default())
            .segment_str(&s)
            .iter_with_word_type()
            .map(|(i, t)| (i, t.is_word_like()))
            .collect(),
        other => {
            return Err(Exception::throw_range(
                &ctx,
                &format!("unknown granularity '{other}'"),
            ))
        }
    };
    let mut out = Vec::with_capacity(ends.len() * 2);
    // Walk the string once, counting UTF-16 units up to each byte boundary.
    let mut units = 0u32;
    let mut chars = s.char_indices().peekable();
    for (end, word_like) in ends.into_iter().filter(|(i, _)| *i > 0) {
        while let Some((at, c)) = chars.peek().copied() {
            if at >= end {
                break;
            }
            units += c.len_utf16() as u32;
            chars.next();
        }
        out.push(units);
        out.push(u32::from(word_like));
    }
    Ok(out)
}
