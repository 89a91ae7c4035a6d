// `Intl` (ECMA-402) for the sandbox, on the ICU4X natives `n` of intl/*.rs (never reachable as
// globals). Evaluated once when the engine is created; three files make one function body
// (intl.js, intl_date.js, intl_text.js). State lives in a WeakMap, so scripts see only the
// standard members. An option this runtime cannot honour throws a RangeError that names it:
// a wrong answer without an error is worse than an error.
(function (n) {
  'use strict';
  const G = globalThis;
  const slots = new WeakMap();
  const hide = (o, name, value) =>
    Object.defineProperty(o, name, { value, writable: true, enumerable: false, configurable: true });
  const methods = (C, table) => { for (const k of Object.keys(table)) hide(C.prototype, k, table[k]); };
  // Accessors from an object literal (`{ get format() {…} }`): named `get format`, and like
  // every built-in that is not a constructor, without a `prototype`.
  const getters = (C, table) => {
    for (const [k, d] of Object.entries(Object.getOwnPropertyDescriptors(table))) {
      Object.defineProperty(C.prototype, k, { get: d.get, enumerable: false, configurable: true });
    }
  };
  const tag = (C, name) =>
    Object.defineProperty(C.prototype, Symbol.toStringTag, { value: name, configurable: true });
  const state = (self, kind, what) => {
    const s = self !== null && typeof self === 'object' ? slots.get(self) : undefined;
    if (s === undefined || s.kind !== kind) {
      throw new TypeError(`Method Intl.${kind}.prototype.${what} called on incompatible receiver`);
    }
    return s;
  };
  const str = (v) => {
    if (typeof v === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
    return String(v);
  };
  const toLength = (v) => {
    const x = Math.trunc(Number(v));
    return x > 0 ? Math.min(x, 2 ** 53 - 1) : 0;
  };

  // ---- locales and options (ECMA-402 §9.2) ----------------------------------------------------
  function localeList(locales) {
    if (locales === undefined) return [];
    if (locales === null) throw new TypeError('Cannot convert null to a list of locales');
    const single = typeof locales === 'string';
    const list = single ? [locales] : Object(locales);
    const len = single ? 1 : toLength(list.length);
    const seen = [];
    for (let k = 0; k < len; k++) {
      if (!(k in list)) continue;
      const v = list[k];
      if (typeof v !== 'string' && (typeof v !== 'object' || v === null)) {
        throw new TypeError(`Locale list elements must be strings, got ${typeof v}`);
      }
      const t = n.canonical(str(v));
      if (!seen.includes(t)) seen.push(t);
    }
    return seen;
  }
  function toOptions(options) {
    if (options === undefined) return Object.create(null);
    if (options === null) throw new TypeError('Cannot convert null to an options object');
    return Object(options);
  }
  function getOption(o, prop, type, values, fallback, ctor) {
    let v = o[prop];
    if (v === undefined) return fallback;
    v = type === 'boolean' ? Boolean(v) : str(v);
    if (values !== undefined && !values.includes(v)) {
      throw new RangeError(`Value ${v} out of range for ${ctor} options property ${prop}`);
    }
    return v;
  }
  function getNumber(o, prop, min, max, fallback) {
    let v = o[prop];
    if (v === undefined) return fallback;
    v = Number(v);
    if (Number.isNaN(v) || v < min || v > max) throw new RangeError(`${prop} value is out of range.`);
    return Math.floor(v);
  }
  // Options this runtime does not implement: refused by name, never ignored.
  function refuse(o, ctor, names, why = '') {
    for (const name of names) {
      if (o[name] !== undefined) {
        throw new RangeError(`${ctor}: the option '${name}' is not supported in this sandbox${why}`);
      }
    }
  }
  function refuseValue(ctor, name, value, supported) {
    throw new RangeError(`${ctor}: ${name} '${value}' is not supported in this sandbox (supported: ${supported.map((s) => `'${s}'`).join(', ')})`);
  }
  // ResolveLocale: `{locale, ext}`, ext being the `-u-` keywords of the matched request.
  function resolve(locales, o, ctor) {
    const requested = localeList(locales);
    getOption(o, 'localeMatcher', 'string', ['lookup', 'best fit'], 'best fit', ctor);
    return n.resolve(requested);
  }
  // The tag given to the natives, and the one `resolvedOptions().locale` shows.
  const withKeywords = (locale, kw) => (kw.length ? `${locale}-u-${kw.join('-')}` : locale);
  const { supportedLocalesOf } = {
    supportedLocalesOf(locales) {
      return supported(locales, arguments[1]);
    },
  };
  function supported(locales, options) {
    const o = toOptions(options);
    getOption(o, 'localeMatcher', 'string', ['lookup', 'best fit'], 'best fit', 'supportedLocalesOf');
    return n.supported(localeList(locales));
  }
  function constructor(C, length) {
    Object.defineProperty(C, 'length', { value: length, configurable: true });
    Object.defineProperty(C, 'prototype', { writable: false });
    hide(C, 'supportedLocalesOf', supportedLocalesOf);
  }
  const requireNew = (target, name) => {
    if (target === undefined) throw new TypeError(`Constructor Intl.${name} requires 'new'`);
  };

  // ---- digit options (SetNumberFormatDigitOptions) --------------------------------------------
  function digitOptions(o, ctor, defMaxFrac) {
    refuse(o, ctor, ['roundingIncrement', 'roundingPriority'], ' (rounding is by fraction or significant digits)');
    const mode = getOption(o, 'roundingMode', 'string', undefined, 'halfExpand', ctor);
    if (mode !== 'halfExpand') refuseValue(ctor, 'roundingMode', mode, ['halfExpand']);
    const tz = getOption(o, 'trailingZeroDisplay', 'string', ['auto', 'stripIfInteger'], 'auto', ctor);
    if (tz !== 'auto') refuseValue(ctor, 'trailingZeroDisplay', tz, ['auto']);
    const minInt = getNumber(o, 'minimumIntegerDigits', 1, 21, 1);
    if (o.minimumSignificantDigits !== undefined || o.maximumSignificantDigits !== undefined) {
      const minSig = getNumber(o, 'minimumSignificantDigits', 1, 21, 1);
      const maxSig = getNumber(o, 'maximumSignificantDigits', minSig, 21, 21);
      return { minInt, minSig, maxSig };
    }
    let minFrac = getNumber(o, 'minimumFractionDigits', 0, 100, undefined);
    let maxFrac = getNumber(o, 'maximumFractionDigits', 0, 100, undefined);
    if (minFrac === undefined && maxFrac === undefined) {
      minFrac = 0;
      maxFrac = defMaxFrac;
    } else if (minFrac === undefined) {
      minFrac = Math.min(0, maxFrac);
    } else if (maxFrac === undefined) {
      maxFrac = Math.max(defMaxFrac, minFrac);
    } else if (minFrac > maxFrac) {
      throw new RangeError('maximumFractionDigits value is out of range.');
    }
    return { minInt, minFrac, maxFrac };
  }
  function digitResolved(d, out) {
    out.minimumIntegerDigits = d.minInt;
    if (d.minSig !== undefined) {
      out.minimumSignificantDigits = d.minSig;
      out.maximumSignificantDigits = d.maxSig;
    } else {
      out.minimumFractionDigits = d.minFrac;
      out.maximumFractionDigits = d.maxFrac;
    }
    return out;
  }

  // ---- Intl.NumberFormat ----------------------------------------------------------------------
  const NF = 'Intl.NumberFormat';
  function NumberFormat() {
    const self = new.target === undefined ? Object.create(NumberFormat.prototype) : this;
    const [locales, options] = arguments;
    const o = toOptions(options);
    const r = resolve(locales, o, NF);
    const nu = getOption(o, 'numberingSystem', 'string', undefined, undefined, NF);
    if (nu !== undefined && nu !== 'latn') refuseValue(NF, 'numberingSystem', nu, ['latn']);
    const style = getOption(o, 'style', 'string', ['decimal', 'percent', 'currency', 'unit'], 'decimal', NF);
    if (style !== 'decimal' && style !== 'percent') refuseValue(NF, 'style', style, ['decimal', 'percent']);
    refuse(o, NF, ['currency', 'currencyDisplay', 'currencySign', 'unit', 'unitDisplay']);
    const notation = getOption(o, 'notation', 'string', ['standard', 'scientific', 'engineering', 'compact'], 'standard', NF);
    if (notation !== 'standard') refuseValue(NF, 'notation', notation, ['standard']);
    refuse(o, NF, ['compactDisplay']);
    const digits = digitOptions(o, NF, style === 'percent' ? 0 : 3);
    let grouping = o.useGrouping;
    if (grouping === undefined) grouping = 'auto';
    else if (grouping === true) grouping = 'always';
    else if (!grouping) grouping = false;
    else {
      grouping = str(grouping);
      if (grouping === 'true' || grouping === 'false') grouping = 'auto';
      if (!['min2', 'auto', 'always'].includes(grouping)) {
        throw new RangeError(`Value ${grouping} out of range for ${NF} options property useGrouping`);
      }
    }
    const sign = getOption(o, 'signDisplay', 'string', ['auto', 'never', 'always', 'exceptZero', 'negative'], 'auto', NF);
    const native = { ...digits, grouping: String(grouping), sign, percent: style === 'percent' };
    slots.set(self, { kind: 'NumberFormat', locale: r.locale, style, digits, grouping, sign, native, bound: undefined });
    return self;
  }
  function formatNumber(s, x) {
    const v = typeof x === 'bigint' ? x : Number(x);
    if (typeof v === 'bigint') return n.number(s.locale, v.toString(), s.native);
    if (Number.isFinite(v)) return n.number(s.locale, v, s.native);
    // NaN and ±∞ take the locale's sign and percent pattern: those of ±1, digits replaced.
    const digits = s.style === 'percent' ? '100' : '1';
    const plain = { ...s.native, minInt: 1, minFrac: 0, maxFrac: 0, minSig: undefined, maxSig: undefined };
    if (Number.isNaN(v)) {
      return n.number(s.locale, 1, { ...plain, sign: s.sign === 'always' ? 'always' : 'never' }).replace(digits, 'NaN');
    }
    return n.number(s.locale, v < 0 ? -1 : 1, plain).replace(digits, '∞');
  }
  constructor(NumberFormat, 0);
  getters(NumberFormat, {
    get format() {
      const s = state(this, 'NumberFormat', 'format');
      if (s.bound === undefined) {
        s.bound = (x) => formatNumber(s, x);
        Object.defineProperty(s.bound, 'name', { value: '' });
      }
      return s.bound;
    },
  });
  methods(NumberFormat, {
    resolvedOptions() {
      const s = state(this, 'NumberFormat', 'resolvedOptions');
      const out = { locale: s.locale, numberingSystem: 'latn', style: s.style };
      digitResolved(s.digits, out);
      Object.assign(out, {
        useGrouping: s.grouping, notation: 'standard', signDisplay: s.sign, roundingIncrement: 1,
        roundingMode: 'halfExpand', roundingPriority: 'auto', trailingZeroDisplay: 'auto',
      });
      return out;
    },
  });
  tag(NumberFormat, NF);

  // ---- Intl.PluralRules -----------------------------------------------------------------------
  const PR = 'Intl.PluralRules';
  function PluralRules() {
    requireNew(new.target, 'PluralRules');
    const [locales, options] = arguments;
    const o = toOptions(options);
    const r = resolve(locales, o, PR);
    const type = getOption(o, 'type', 'string', ['cardinal', 'ordinal'], 'cardinal', PR);
    refuse(o, PR, ['notation']);
    const digits = digitOptions(o, PR, 3);
    slots.set(this, { kind: 'PluralRules', locale: r.locale, type, digits });
  }
  constructor(PluralRules, 0);
  methods(PluralRules, {
    select(x) {
      const s = state(this, 'PluralRules', 'select');
      const v = Number(x);
      if (!Number.isFinite(v)) return 'other';
      return n.plural(s.locale, s.type === 'ordinal', v, s.digits);
    },
    resolvedOptions() {
      const s = state(this, 'PluralRules', 'resolvedOptions');
      const out = digitResolved(s.digits, { locale: s.locale, type: s.type });
      out.pluralCategories = n.pluralCategories(s.locale, s.type === 'ordinal');
      return Object.assign(out, { roundingIncrement: 1, roundingMode: 'halfExpand', roundingPriority: 'auto', trailingZeroDisplay: 'auto' });
    },
  });
  tag(PluralRules, PR);

  // ---- Intl.Collator --------------------------------------------------------------------------
  const CO = 'Intl.Collator';
  function Collator() {
    const self = new.target === undefined ? Object.create(Collator.prototype) : this;
    const [locales, options] = arguments;
    const o = toOptions(options);
    const usage = getOption(o, 'usage', 'string', ['sort', 'search'], 'sort', CO);
    if (usage !== 'sort') refuseValue(CO, 'usage', usage, ['sort']);
    const r = resolve(locales, o, CO);
    getOption(o, 'collation', 'string', undefined, undefined, CO); // unsupported types resolve to 'default'
    let numeric = getOption(o, 'numeric', 'boolean', undefined, undefined, CO);
    let caseFirst = getOption(o, 'caseFirst', 'string', ['upper', 'lower', 'false'], undefined, CO);
    const shown = [];
    if (r.ext.kf !== undefined && ['upper', 'lower', 'false'].includes(r.ext.kf) && (caseFirst === undefined || caseFirst === r.ext.kf)) {
      caseFirst = r.ext.kf;
      shown.push(`kf-${caseFirst}`);
    }
    if (r.ext.kn !== undefined && ['true', 'false'].includes(r.ext.kn) && (numeric === undefined || numeric === (r.ext.kn === 'true'))) {
      numeric = r.ext.kn === 'true';
      shown.push(numeric ? 'kn' : 'kn-false');
    }
    numeric = numeric === true;
    caseFirst = caseFirst ?? 'false';
    const sensitivity = getOption(o, 'sensitivity', 'string', ['base', 'accent', 'case', 'variant'], 'variant', CO);
    const ignorePunctuation = getOption(o, 'ignorePunctuation', 'boolean', undefined, false, CO);
    const native = withKeywords(r.locale, [`kf-${caseFirst}`, `kn-${numeric}`]);
    slots.set(self, {
      kind: 'Collator', locale: withKeywords(r.locale, shown), native, numeric, caseFirst,
      sensitivity, ignorePunctuation, bound: undefined,
    });
    return self;
  }
  const compareWith = (s, x, y) => n.compare(s.native, s.sensitivity, s.ignorePunctuation, str(x), str(y));
  constructor(Collator, 0);
  getters(Collator, {
    get compare() {
      const s = state(this, 'Collator', 'compare');
      if (s.bound === undefined) {
        s.bound = (x, y) => compareWith(s, x, y);
        Object.defineProperty(s.bound, 'name', { value: '' });
      }
      return s.bound;
    },
  });
  methods(Collator, {
    resolvedOptions() {
      const s = state(this, 'Collator', 'resolvedOptions');
      return {
        locale: s.locale, usage: 'sort', sensitivity: s.sensitivity, ignorePunctuation: s.ignorePunctuation,
        collation: 'default', numeric: s.numeric, caseFirst: s.caseFirst,
      };
    },
  });
  tag(Collator, CO);
