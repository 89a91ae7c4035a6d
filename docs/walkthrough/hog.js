// Keeps every chunk: the heap limit (--memory-mb) ends it.
const kept = [];
while (true) kept.push(new Array(100000).fill(kept.length));
