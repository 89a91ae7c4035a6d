// Calls every built-in the runner exposes, inside the locked-down runner. A built-in that needs
// a system call the seccomp filter forbids kills the runner (RUNNER_CRASHED); anything else
// (a TypeError for a bad receiver, a RangeError) is fine and counted.
// Optional context: `only` (a substring of check names) to run a subset while investigating.
const checks = [];
const check = (name, fn) => checks.push([name, fn]);

// --- Date: every method, local and UTC, on a fixed date and on now.
const dates = [new Date(), new Date(2024, 1, 29, 13, 45, 7, 123), new Date(0), new Date(NaN)];
for (const key of Object.getOwnPropertyNames(Date.prototype)) {
  if (key === 'constructor') continue;
  for (const [i, d] of dates.entries()) {
    check(`Date.prototype.${key}#${i}`, () => {
      const copy = new Date(d.getTime());
      const f = copy[key];
      if (typeof f !== 'function') return f;
      if (key.startsWith('set')) return f.call(copy, 5, 6, 7, 8);
      if (key === 'toJSON') return f.call(copy);
      if (key.startsWith('toLocale')) return [f.call(copy), f.call(copy, 'de-DE'), f.call(copy, 'en-US', { timeZone: 'UTC' })];
      return f.call(copy);
    });
  }
}
check('Date()', () => Date());
check('new Date(string)', () => [new Date('2024-03-10T02:30:00'), new Date('March 7, 2021 10:00'), new Date('2024-01-01T00:00:00Z')].map(String));
check('new Date(y,m,d)', () => new Date(2021, 2, 14, 2, 30).getTime());
check('Date.parse', () => [Date.parse('2024-06-01'), Date.parse('Tue Mar 01 2022 10:00:00 GMT+0100'), Date.parse('garbage')]);
check('Date.UTC', () => Date.UTC(2020, 11, 31, 23, 59, 59));
check('Date.now', () => Date.now());
check('Date[Symbol.toPrimitive]', () => [dates[1][Symbol.toPrimitive]('string'), dates[1][Symbol.toPrimitive]('number'), `${dates[0]}`, dates[0] + 1]);

// --- Randomness and time.
check('Math.random', () => { let s = 0; for (let i = 0; i < 1000; i++) s += Math.random(); return s; });
check('performance.now', () => typeof performance === 'object' ? [performance.now(), performance.timeOrigin] : null);
check('performance.*', () => typeof performance === 'object' ? Object.getOwnPropertyNames(Object.getPrototypeOf(performance)).map((k) => { try { return typeof performance[k] === 'function' ? performance[k]() : performance[k]; } catch (e) { return String(e); } }) : null);

// --- Locale-sensitive functions (Intl's compiled-in data; they must never need the OS).
check('localeCompare', () => ['a'.localeCompare('b'), 'ä'.localeCompare('z', 'de'), 'a'.localeCompare('A', 'en', { sensitivity: 'base' })]);
check('normalize', () => ['NFC', 'NFD', 'NFKC', 'NFKD'].map((f) => 'Ǆ\u0301é\u1E9B\u0323'.normalize(f)));
check('toLocaleUpperCase', () => ['istanbul'.toLocaleUpperCase('tr'), 'straße'.toLocaleUpperCase(), 'İ'.toLocaleLowerCase('tr')]);
check('toUpperCase/toLowerCase', () => ['ǅß'.toUpperCase(), 'ΣΑΣ'.toLowerCase()]);
check('Number#toLocaleString', () => [(1234567.891).toLocaleString(), (1234.5).toLocaleString('de-DE'), (0.25).toLocaleString('en', { style: 'percent' }), NaN.toLocaleString(), (-0).toLocaleString()]);
check('BigInt#toLocaleString', () => (12345678901234567890n).toLocaleString());
check('Array#toLocaleString', () => [1, 'a', new Date(0), null, 1e21, [2, 3]].toLocaleString());
check('TypedArray#toLocaleString', () => new Float64Array([1.5, 2e6]).toLocaleString());
check('Object#toLocaleString', () => ({}).toLocaleString());

// --- RegExp, including unicode property escapes and sets.
check('RegExp unicode properties', () => [
  /\p{L}+/u.exec('héllo wörld')[0], /\p{Script=Greek}/u.test('α'), /\p{Emoji_Presentation}/u.test('😀'),
  /\P{Lu}/u.test('a'), /[\p{N}--[0-9]]/v.test('٣'), /\p{RGI_Emoji}/v.test('👍🏽'),
  /(?<year>\d{4})-(?<m>\d\d)/d.exec('on 2024-05 ok').indices.groups.year,
  'aBc'.replace(/b/gi, (m) => m.toLowerCase()), [...'a1b2'.matchAll(/\d/g)].length,
  /(?i:a)b/.test('Ab'), new RegExp('\\u{1F600}', 'u').test('😀'), /./s.test('\n'), /\bfoo\b/y.sticky,
  RegExp.escape ? RegExp.escape('a.b') : null, 'x'.split(/(?:)/u), /[^]/.source,
]);

// --- Typed arrays, buffers, Atomics.
const taTypes = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
if (typeof Float16Array === 'function') taTypes.push(Float16Array);
for (const T of taTypes) {
  check(`${T.name} methods`, () => {
    const big = T === BigInt64Array || T === BigUint64Array;
    const v = (n) => (big ? BigInt(n) : n);
    const a = T.from([v(3), v(1), v(2)]);
    return [a.sort().join(), a.toSorted((x, y) => (x < y ? 1 : -1)).join(), a.subarray(1).length, a.slice(0, 2).join(),
      a.map((x) => x).join(), a.filter(() => true).length, a.reduce((x, y) => x + y), a.indexOf(v(2)), a.includes(v(1)),
      a.with(0, v(9)).join(), a.toReversed().join(), a.at(-1), [...a.entries()].length, a.fill(v(7)).join(), a.copyWithin(0, 1).join(),
      a.set([v(1)], 2), a.findLast(() => true), a.toLocaleString(), a.buffer.byteLength, new T(new ArrayBuffer(16)).length];
  });
}
check('ArrayBuffer', () => { const b = new ArrayBuffer(8, { maxByteLength: 64 }); b.resize(32); const c = b.transfer ? b.transfer(48) : b; return [c.byteLength, b.detached, c.slice(1, 3).byteLength, ArrayBuffer.isView(new DataView(c))]; });
check('SharedArrayBuffer', () => { const s = new SharedArrayBuffer(8, { maxByteLength: 16 }); if (s.grow) s.grow(16); return [s.byteLength, s.slice(0, 4).byteLength]; });
check('DataView', () => { const d = new DataView(new ArrayBuffer(32)); d.setFloat64(0, Math.PI); d.setBigInt64(8, -5n); d.setInt16(16, -2, true); if (d.setFloat16) d.setFloat16(20, 1.5); return [d.getFloat64(0), d.getBigInt64(8), d.getUint16(16, true), d.getFloat16 ? d.getFloat16(20) : 0]; });
check('Atomics', () => {
  const ia = new Int32Array(new SharedArrayBuffer(16));
  const r = [Atomics.add(ia, 0, 5), Atomics.sub(ia, 0, 1), Atomics.and(ia, 0, 7), Atomics.or(ia, 0, 8), Atomics.xor(ia, 0, 1),
    Atomics.exchange(ia, 1, 3), Atomics.compareExchange(ia, 1, 3, 4), Atomics.load(ia, 1), Atomics.store(ia, 2, 9),
    Atomics.isLockFree(4), Atomics.notify(ia, 0, 1)];
  if (Atomics.pause) Atomics.pause();
  return r;
});
check('Atomics.wait not-equal', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(8)), 0, 1, 10));
check('Atomics.wait timeout', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(8)), 0, 0, 5));
check('Atomics.waitAsync', () => (Atomics.waitAsync ? Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(8)), 0, 1).value : null));

// --- Memory management built-ins.
check('WeakRef', () => { const o = {}; const w = new WeakRef(o); return w.deref() === o; });
check('FinalizationRegistry', () => { const f = new FinalizationRegistry(() => {}); let o = {}; f.register(o, 1, o); const r = f.unregister(o); o = null; for (let i = 0; i < 2000; i++) f.register({}, i); return r; });
check('WeakMap/WeakSet', () => { const k = {}; const m = new WeakMap([[k, 1]]); const s = new WeakSet([k]); return [m.get(k), s.has(k), m.has({})]; });
check('gc pressure', () => { let keep = []; for (let i = 0; i < 50000; i++) keep.push({ i, s: 'x' + i }); keep = null; return 1; });

// --- JSON, structuredClone, encodings, other globals.
check('JSON', () => [JSON.stringify({ a: [1, { b: 2 }], d: new Date(0), u: undefined }, null, 2), JSON.parse('{"x":[1,2,{"y":"\\u00e9"}]}', (k, v) => v), JSON.rawJSON ? JSON.rawJSON('1') : null, JSON.isRawJSON ? JSON.isRawJSON({}) : null]);
check('structuredClone', () => (typeof structuredClone === 'function' ? structuredClone({ a: [1, new Date(0)] }) : 'absent'));
check('Intl', () => (typeof Intl === 'object' ? [new Intl.DateTimeFormat().format(new Date(0)), new Intl.NumberFormat('de').format(1234.5)] : 'absent'));
check('btoa/atob', () => [btoa('hello'), atob('aGVsbG8=')]);
check('URI', () => [encodeURI('a b/ü'), decodeURI('a%20b'), encodeURIComponent('?&='), decodeURIComponent('%F0%9F%98%80'), escape('ä'), unescape('%E4')]);
check('parse numbers', () => [parseInt('ff', 16), parseFloat('3.14e2'), (255).toString(36), (1e21).toFixed(2), (123.456).toPrecision(4), (0.000001234).toExponential(2), Number('0x1f'), isNaN('x'), isFinite('1')]);
check('BigInt', () => [(2n ** 200n).toString(36), BigInt.asIntN(8, 255n), BigInt.asUintN(8, -1n), BigInt('0x1ff'), (-7n) / 2n, 10n % 3n]);
check('Math', () => Object.getOwnPropertyNames(Math).map((k) => (typeof Math[k] === 'function' ? Math[k](0.5, 2, 3) : Math[k])));
check('String methods', () => ['abc'.padStart(6, '-'), ' x '.trim(), 'a-b'.split('-'), 'abc'.at(-1), 'x'.repeat(3), 'abc'.codePointAt(1), String.fromCodePoint(0x1F600), String.raw`a\n${1}`, 'ab'.isWellFormed(), '\uD800'.toWellFormed(), 'aXbX'.replaceAll('X', '_'), 'abc'.substr(1), 'a'.anchor('x'), 'Abc'.localeCompare('abc')]);
check('Array methods', () => { const a = [3, 1, 2]; return [a.toSorted(), a.toSpliced(0, 1), a.with(0, 9), a.flatMap((x) => [x, x]), [[1, [2]]].flat(Infinity), Array.from({ length: 3 }, (_, i) => i), Array.of(1, 2), a.findLastIndex((x) => x > 1), a.group ? 1 : 0, Object.groupBy(a, (x) => x % 2), Map.groupBy(a, (x) => x % 2).size, a.copyWithin(0, 1), a.entries().toArray ? a.values().toArray() : []]; });
check('Iterator helpers', () => (typeof Iterator === 'function' ? [Iterator.from([1, 2, 3]).map((x) => x * 2).filter((x) => x > 2).take(5).drop(0).toArray(), [1, 2].values().reduce((a, b) => a + b), Iterator.concat ? Iterator.concat([1], [2]).toArray() : null] : null));
check('Map/Set', () => { const s = new Set([1, 2]); const t = new Set([2, 3]); return [new Map([[1, 2]]).get(1), s.union ? [...s.union(t)] : null, s.intersection ? [...s.intersection(t)] : null, s.isSubsetOf ? s.isSubsetOf(t) : null]; });
check('Symbol', () => [Symbol('x').description, Symbol.for('k') === Symbol.for('k'), Symbol.keyFor(Symbol.for('k')), Symbol.iterator.toString()]);
check('Reflect/Proxy', () => { const p = new Proxy({}, { get: (_, k) => k }); return [p.foo, Reflect.ownKeys({ a: 1, [Symbol('s')]: 2 }).length, Reflect.has({ x: 1 }, 'x'), Reflect.apply(Math.max, null, [1, 3])]; });
check('Error types', () => [new Error('e', { cause: 1 }).cause, new AggregateError([new TypeError('t')], 'agg').errors.length, String(new RangeError('r')), new Error('x').stack, typeof SuppressedError === 'function' ? new SuppressedError(1, 2, 'm').message : null, typeof DOMException === 'function' ? [new DOMException('d', 'AbortError').name, new DOMException('d', 'AbortError').code] : null, Error.captureStackTrace ? (Error.captureStackTrace({}), 1) : 0, Error.isError ? Error.isError(new Error()) : null]);
check('DisposableStack', () => { if (typeof DisposableStack !== 'function') return null; const d = new DisposableStack(); let n = 0; d.defer(() => n++); d.dispose(); const a = new AsyncDisposableStack(); a.defer(() => n++); return [n, typeof a.disposeAsync]; });
check('eval/Function', () => [eval('1 + 2'), new Function('a', 'return a * 2')(4), (0, eval)('typeof globalThis')]);
check('generators/async', () => { function* g() { yield 1; yield 2; } return [...g()]; });
check('queueMicrotask', () => { let hit = 0; queueMicrotask(() => hit++); return typeof hit; });
check('Object statics', () => [Object.entries({ a: 1 }), Object.fromEntries([['b', 2]]), Object.getOwnPropertyDescriptors({ c: 3 }), Object.hasOwn({ d: 1 }, 'd'), Object.isFrozen(Object.freeze({})), Object.is(-0, 0), typeof structuredClone]);
check('Function#toString', () => [Math.max.toString(), (function f(a) { return a; }).toString(), class A {}.toString()]);
check('Number statics', () => [Number.EPSILON, Number.MAX_SAFE_INTEGER, Number.isInteger(5), Number.isSafeInteger(2 ** 53), Number.parseFloat('1.5')]);
check('string conversion of every global', () => Object.getOwnPropertyNames(globalThis).map((k) => { try { return String(globalThis[k]).length; } catch (e) { return -1; } }));

// --- Generic: every own function of every global and of its prototype, with small arguments.
const skip = new Set(['Atomics.wait', 'Atomics.pause', 'eval', 'Function', 'mcp', 'console', 'globalThis']);
const argSets = [[], [1, 2], ['a', 'b'], [{}, []]];
// The globals, and the members of `Intl` (its constructors and their prototypes) likewise.
const owners = Object.getOwnPropertyNames(globalThis).filter((g) => !skip.has(g)).map((g) => [g, globalThis[g]]);
if (typeof Intl === 'object') for (const k of Object.getOwnPropertyNames(Intl)) owners.push([`Intl.${k}`, Intl[k]]);
for (const [g, owner] of owners) {
  if (owner === null || (typeof owner !== 'object' && typeof owner !== 'function')) continue;
  const targets = [[g, owner]];
  if (typeof owner === 'function' && owner.prototype) targets.push([`${g}.prototype`, owner.prototype]);
  for (const [label, obj] of targets) {
    for (const key of Reflect.ownKeys(obj)) {
      const name = `${label}.${String(key)}`;
      if (skip.has(name) || key === 'constructor' || key === 'caller' || key === 'arguments' || key === 'callee') continue;
      let f;
      try { f = obj[key]; } catch (e) { continue; }
      if (typeof f !== 'function') continue;
      check(`generic ${name}`, () => {
        const receivers = [obj, undefined];
        if (label.endsWith('.prototype') && typeof owner === 'function') {
          try { receivers.push(new owner()); } catch (e) { /* not constructible without arguments */ }
          try { receivers.push(new owner(1)); } catch (e) { /* ignore */ }
        }
        for (const r of receivers) for (const args of argSets) { try { f.apply(r, args); } catch (e) { /* TypeError etc. are fine */ } }
        return 1;
      });
    }
  }
}

const only = typeof globalThis.only === 'string' ? globalThis.only : '';
let ran = 0, threw = 0;
const failures = [];
for (const [name, fn] of checks) {
  if (only && !name.includes(only)) continue;
  ran++;
  try {
    const r = fn();
    if (r && typeof r.then === 'function') await r;
  } catch (e) {
    threw++;
    if (failures.length < 50) failures.push(`${name}: ${e && e.message}`);
  }
}
// Settled microtasks and finalizers get a turn too.
await null;
return { ran, threw, failures, tz: new Date(0).getTimezoneOffset(), hours: new Date(2024, 0, 1, 12).getHours(), date: new Date(0).toString() };
