
  // ---- Intl.ListFormat ------------------------------------------------------------------------
  const LF = 'Intl.ListFormat';
  function ListFormat() {
    requireNew(new.target, 'ListFormat');
    const [locales, options] = arguments;
    const o = toOptions(options);
    const r = resolve(locales, o, LF);
    const type = getOption(o, 'type', 'string', ['conjunction', 'disjunction', 'unit'], 'conjunction', LF);
    const style = getOption(o, 'style', 'string', ['long', 'short', 'narrow'], 'long', LF);
    slots.set(this, { kind: 'ListFormat', locale: r.locale, type, style });
  }
  function stringList(list) {
    if (list === undefined) return [];
    const out = [];
    for (const item of list) {
      if (typeof item !== 'string') throw new TypeError(`Iterable yielded ${typeof item === 'symbol' ? 'a symbol' : String(item)} which is not a string`);
      out.push(item);
    }
    return out;
  }
  constructor(ListFormat, 0);
  methods(ListFormat, {
    format(list) {
      const s = state(this, 'ListFormat', 'format');
      return n.list(s.locale, s.type, s.style, stringList(list));
    },
    resolvedOptions() {
      const s = state(this, 'ListFormat', 'resolvedOptions');
      return { locale: s.locale, type: s.type, style: s.style };
    },
  });
  tag(ListFormat, LF);

  // ---- Intl.Segmenter -------------------------------------------------------------------------
  const SG = 'Intl.Segmenter';
  // Boundaries are computed for the whole input at once: bound it (a larger text is cut by the
  // script, a chunk at a time).
  const MAX_SEGMENTED = 4 * 1024 * 1024;
  function Segmenter() {
    requireNew(new.target, 'Segmenter');
    const [locales, options] = arguments;
    const o = toOptions(options);
    const r = resolve(locales, o, SG);
    const granularity = getOption(o, 'granularity', 'string', ['grapheme', 'word', 'sentence'], 'grapheme', SG);
    slots.set(this, { kind: 'Segmenter', locale: r.locale, granularity });
  }
  constructor(Segmenter, 0);
  const segmentsProto = {};
  function segmentAt(seg, k) {
    const start = k === 0 ? 0 : seg.ends[2 * k - 2];
    const end = seg.ends[2 * k];
    const out = { segment: seg.input.slice(start, end), index: start, input: seg.input };
    if (seg.granularity === 'word') out.isWordLike = seg.ends[2 * k + 1] === 1;
    return out;
  }
  hide(segmentsProto, 'containing', { containing(index) {
    const seg = state(this, 'Segments', 'containing');
    const i = Math.trunc(Number(index)) || 0;
    if (i < 0 || i >= seg.input.length) return undefined;
    for (let k = 0; 2 * k < seg.ends.length; k++) if (seg.ends[2 * k] > i) return segmentAt(seg, k);
    return undefined;
  } }.containing);
  const iterProto = Object.create(Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())));
  hide(iterProto, 'next', { next() {
    const it = state(this, 'SegmentIterator', 'next');
    if (2 * it.k >= it.seg.ends.length) return { value: undefined, done: true };
    return { value: segmentAt(it.seg, it.k++), done: false };
  } }.next);
  Object.defineProperty(iterProto, Symbol.toStringTag, { value: 'Segmenter String Iterator', configurable: true });
  hide(segmentsProto, Symbol.iterator, { [Symbol.iterator]() {
    const seg = state(this, 'Segments', '[Symbol.iterator]');
    const it = Object.create(iterProto);
    slots.set(it, { kind: 'SegmentIterator', seg, k: 0 });
    return it;
  } }[Symbol.iterator]);
  methods(Segmenter, {
    segment(string) {
      const s = state(this, 'Segmenter', 'segment');
      const input = str(string);
      if (input.length > MAX_SEGMENTED) {
        throw new RangeError(`${SG}: the text is ${input.length} UTF-16 code units; at most ${MAX_SEGMENTED} are segmented at once (segment it in parts)`);
      }
      const out = Object.create(segmentsProto);
      slots.set(out, { kind: 'Segments', input, granularity: s.granularity, ends: n.segment(s.granularity, input) });
      return out;
    },
    resolvedOptions() {
      const s = state(this, 'Segmenter', 'resolvedOptions');
      return { locale: s.locale, granularity: s.granularity };
    },
  });
  tag(Segmenter, SG);

  // ---- Intl.RelativeTimeFormat ----------------------------------------------------------------
  const RT = 'Intl.RelativeTimeFormat';
  const UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];
  function RelativeTimeFormat() {
    requireNew(new.target, 'RelativeTimeFormat');
    const [locales, options] = arguments;
    const o = toOptions(options);
    const r = resolve(locales, o, RT);
    const nu = getOption(o, 'numberingSystem', 'string', undefined, undefined, RT);
    if (nu !== undefined && nu !== 'latn') refuseValue(RT, 'numberingSystem', nu, ['latn']);
    const style = getOption(o, 'style', 'string', ['long', 'short', 'narrow'], 'long', RT);
    const numeric = getOption(o, 'numeric', 'string', ['always', 'auto'], 'always', RT);
    slots.set(this, { kind: 'RelativeTimeFormat', locale: r.locale, style, numeric });
  }
  constructor(RelativeTimeFormat, 0);
  methods(RelativeTimeFormat, {
    format(value, unit) {
      const s = state(this, 'RelativeTimeFormat', 'format');
      const v = Number(value);
      const u = str(unit);
      const singular = u.endsWith('s') ? u.slice(0, -1) : u;
      if (!UNITS.includes(singular)) throw new RangeError(`Invalid unit argument for format() '${u}'`);
      if (!Number.isFinite(v)) throw new RangeError('Invalid number value');
      return n.relative(s.locale, s.style, s.numeric, singular, v);
    },
    resolvedOptions() {
      const s = state(this, 'RelativeTimeFormat', 'resolvedOptions');
      return { locale: s.locale, style: s.style, numeric: s.numeric, numberingSystem: 'latn' };
    },
  });
  tag(RelativeTimeFormat, RT);

  // ---- the Intl object, and the locale methods of the built-ins -------------------------------
  const Intl = {};
  hide(Intl, 'getCanonicalLocales', { getCanonicalLocales(locales) { return localeList(locales); } }.getCanonicalLocales);
  for (const C of [Collator, DateTimeFormat, ListFormat, NumberFormat, PluralRules, RelativeTimeFormat, Segmenter]) hide(Intl, C.name, C);
  Object.defineProperty(Intl, Symbol.toStringTag, { value: 'Intl', configurable: true });
  hide(G, 'Intl', Intl);

  // Method definitions: no `prototype`, the standard `name`; `length` as ECMA-402 gives it.
  const patch = (proto, table, length) => {
    for (const name of Object.keys(table)) {
      Object.defineProperty(table[name], 'length', { value: length });
      hide(proto, name, table[name]);
    }
  };
  const numberValue = Number.prototype.valueOf;
  const bigintValue = BigInt.prototype.valueOf;
  const formatWith = (x, locales, options) => formatNumber(slots.get(new NumberFormat(locales, options)), x);
  patch(Number.prototype, {
    toLocaleString(locales, options) { return formatWith(numberValue.call(this), locales, options); },
  }, 0);
  patch(BigInt.prototype, {
    toLocaleString(locales, options) { return formatWith(bigintValue.call(this), locales, options); },
  }, 0);
  const timeValue = Date.prototype.getTime;
  const dateWith = (date, locales, options, required, defaults) => {
    const t = timeValue.call(date);
    if (Number.isNaN(t)) return 'Invalid Date';
    const self = Object.create(DateTimeFormat.prototype);
    return formatDate(slots.get(makeDateTimeFormat(self, locales, options, required, defaults)), t);
  };
  patch(Date.prototype, {
    toLocaleString(locales, options) { return dateWith(this, locales, options, 'any', 'all'); },
    toLocaleDateString(locales, options) { return dateWith(this, locales, options, 'date', 'date'); },
    toLocaleTimeString(locales, options) { return dateWith(this, locales, options, 'time', 'time'); },
  }, 0);
  patch(String.prototype, {
    localeCompare(that, locales, options) {
      if (this === undefined || this === null) throw new TypeError('String.prototype.localeCompare called on null or undefined');
      return compareWith(slots.get(new Collator(locales, options)), str(this), str(that));
    },
  }, 1);
})
