# Sentence and word statistics of a short text.
text = """The quick brown fox jumps over the lazy dog. The dog sleeps.
A fox is quick! Is the dog lazy? Yes."""
import re
sentences = [s.strip() for s in re.split(r"[.!?]", text) if s.strip()]
words = re.findall(r"[a-z]+", text.lower())
freq = {}
for w in words:
    freq[w] = freq.get(w, 0) + 1
top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
longest = max(sentences, key=len)
{"sentences": len(sentences), "words": len(words), "top": top, "longest": longest}
