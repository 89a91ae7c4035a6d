// The web-platform globals of the sandbox (see web.rs). Evaluated once when the engine is
// created, with the natives `n` (never reachable as globals); returns the per-execution binder of
// the timers. Classes keep their state in WeakMaps, so scripts see only the standard members.
(function (n) {
  'use strict';
  const G = globalThis;
  const def = (name, value) =>
    Object.defineProperty(G, name, { value, writable: true, enumerable: false, configurable: true });
  const tag = (C, name) =>
    Object.defineProperty(C.prototype, Symbol.toStringTag, { value: name, configurable: true });
  const need = (args, n, what) => {
    if (args.length < n) throw new TypeError(`${what}: ${n} argument${n > 1 ? 's' : ''} required`);
  };
  const state = (map, self, what) => {
    const s = map.get(self);
    if (s === undefined) throw new TypeError(`Illegal invocation: not a ${what}`);
    return s;
  };

  // ---- DOMException ----------------------------------------------------------------------
  const CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
    URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };
  class DOMException extends Error {
    constructor(message = '', options = 'Error') {
      super(String(message));
      const name = typeof options === 'object' && options !== null ? options.name ?? 'Error' : options;
      Object.defineProperty(this, 'name', { value: String(name), writable: true, configurable: true });
      if (typeof options === 'object' && options !== null && 'cause' in options) {
        Object.defineProperty(this, 'cause', { value: options.cause, writable: true, configurable: true });
      }
    }
    get code() { return CODES[this.name] ?? 0; }
  }
  for (const [name, code] of Object.entries(CODES)) {
    const constant = name.replace(/([a-z])([A-Z])/g, '$1_$2').replace(/^URL/, 'URL_').toUpperCase().replace(/_ERROR$/, '_ERR');
    Object.defineProperty(DOMException, constant, { value: code, enumerable: true });
  }
  def('DOMException', DOMException);

  // ---- Event, EventTarget ----------------------------------------------------------------
  const EV = new WeakMap();
  const clock = () => (typeof G.performance === 'object' && G.performance ? G.performance.now() : Date.now());
  class Event {
    constructor(type, init = undefined) {
      need(arguments, 1, "Failed to construct 'Event'");
      const o = init ?? {};
      EV.set(this, {
        type: String(type), bubbles: !!o.bubbles, cancelable: !!o.cancelable, composed: !!o.composed,
        canceled: false, stop: false, stopNow: false, passive: false, target: null, current: null,
        phase: 0, dispatching: false, timeStamp: clock(),
      });
    }
    get type() { return state(EV, this, 'Event').type; }
    get bubbles() { return state(EV, this, 'Event').bubbles; }
    get cancelable() { return state(EV, this, 'Event').cancelable; }
    get composed() { return state(EV, this, 'Event').composed; }
    get defaultPrevented() { return state(EV, this, 'Event').canceled; }
    get target() { return state(EV, this, 'Event').target; }
    get srcElement() { return state(EV, this, 'Event').target; }
    get currentTarget() { return state(EV, this, 'Event').current; }
    get eventPhase() { return state(EV, this, 'Event').phase; }
    get timeStamp() { return state(EV, this, 'Event').timeStamp; }
    get isTrusted() { return false; }
    get returnValue() { return !state(EV, this, 'Event').canceled; }
    set returnValue(v) { if (!v) this.preventDefault(); }
    get cancelBubble() { return state(EV, this, 'Event').stop; }
    set cancelBubble(v) { if (v) state(EV, this, 'Event').stop = true; }
    composedPath() { const s = state(EV, this, 'Event'); return s.current ? [s.current] : []; }
    stopPropagation() { state(EV, this, 'Event').stop = true; }
    stopImmediatePropagation() { const s = state(EV, this, 'Event'); s.stop = s.stopNow = true; }
    preventDefault() { const s = state(EV, this, 'Event'); if (s.cancelable && !s.passive) s.canceled = true; }
  }
  for (const [k, v] of [['NONE', 0], ['CAPTURING_PHASE', 1], ['AT_TARGET', 2], ['BUBBLING_PHASE', 3]]) {
    Object.defineProperty(Event, k, { value: v, enumerable: true });
    Object.defineProperty(Event.prototype, k, { value: v, enumerable: true });
  }
  tag(Event, 'Event');

  class CustomEvent extends Event {
    #detail;
    constructor(type, init = undefined) {
      need(arguments, 1, "Failed to construct 'CustomEvent'");
      super(type, init);
      this.#detail = init?.detail ?? null;
    }
    get detail() { return this.#detail; }
  }
  tag(CustomEvent, 'CustomEvent');

  // An exception thrown by a listener does not stop the dispatch (as in browsers); it is
  // reported on the console so it is never silent.
  const report = (err) => {
    try { G.console.error('Uncaught (in event listener)', err); } catch { /* no console */ }
  };
  const LISTENERS = new WeakMap();
  const listeners = (target) => {
    let m = LISTENERS.get(target);
    if (m === undefined) LISTENERS.set(target, (m = new Map()));
    return m;
  };
  const flags = (options) =>
    typeof options === 'boolean' || options == null ? { capture: !!options } : options;
  class EventTarget {
    constructor() { LISTENERS.set(this, new Map()); }
    addEventListener(type, callback, options = undefined) {
      need(arguments, 2, "Failed to execute 'addEventListener' on 'EventTarget'");
      if (callback == null) return;
      const o = flags(options);
      const signal = o.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeError("addEventListener: 'signal' must be an AbortSignal");
      }
      if (signal?.aborted) return;
      const name = String(type);
      const m = listeners(this);
      let list = m.get(name);
      if (list === undefined) m.set(name, (list = []));
      const capture = !!o.capture;
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      list.push({ callback, capture, once: !!o.once, passive: !!o.passive, removed: false });
      signal?.addEventListener('abort', () => this.removeEventListener(name, callback, { capture }));
    }
    removeEventListener(type, callback, options = undefined) {
      need(arguments, 2, "Failed to execute 'removeEventListener' on 'EventTarget'");
      const list = listeners(this).get(String(type));
      if (list === undefined) return;
      const capture = !!flags(options).capture;
      const i = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (i >= 0) { list[i].removed = true; list.splice(i, 1); }
    }
    dispatchEvent(event) {
      need(arguments, 1, "Failed to execute 'dispatchEvent' on 'EventTarget'");
      const s = EV.get(event);
      if (s === undefined) throw new TypeError("dispatchEvent: the argument is not an Event");
      if (s.dispatching) throw new DOMException('The event is already being dispatched.', 'InvalidStateError');
      s.dispatching = true;
      s.target = s.current = this;
      s.phase = 2;
      const list = listeners(this).get(s.type);
      for (const l of list ? list.slice() : []) {
        if (l.removed) continue;
        if (l.once) this.removeEventListener(s.type, l.callback, { capture: l.capture });
        s.passive = l.passive;
        try {
          if (typeof l.callback === 'function') l.callback.call(this, event);
          else if (typeof l.callback.handleEvent === 'function') l.callback.handleEvent(event);
        } catch (err) {
          report(err);
        }
        s.passive = false;
        if (s.stopNow) break;
      }
      s.current = null;
      s.phase = 0;
      s.dispatching = false;
      return !s.canceled;
    }
  }
  tag(EventTarget, 'EventTarget');
  def('Event', Event);
  def('CustomEvent', CustomEvent);
  def('EventTarget', EventTarget);

  // ---- Timers (bound per execution) -----------------------------------------------------
  let addTimer = null;
  let clearTimer = null;
  const noTimers = () => { throw new Error('timers are not available before the script starts'); };
  def('setTimeout', function setTimeout(callback, delay = 0, ...args) {
    return (addTimer ?? noTimers)(false, callback, delay, ...args);
  });
  def('setInterval', function setInterval(callback, delay = 0, ...args) {
    return (addTimer ?? noTimers)(true, callback, delay, ...args);
  });
  def('clearTimeout', function clearTimeout(id) { if (clearTimer) clearTimer(id); });
  def('clearInterval', function clearInterval(id) { if (clearTimer) clearTimer(id); });
  if (typeof G.queueMicrotask !== 'function') {
    def('queueMicrotask', function queueMicrotask(callback) {
      if (typeof callback !== 'function') throw new TypeError('queueMicrotask needs a function');
      Promise.resolve().then(() => callback());
    });
  }

  // ---- AbortController, AbortSignal -------------------------------------------------------
  const SIG = new WeakMap();
  const KEY = Symbol('AbortSignal');
  const abortSignal = (signal, reason) => {
    const s = SIG.get(signal);
    if (s.aborted) return;
    s.aborted = true;
    s.reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    const dependents = s.dependents;
    s.dependents = [];
    signal.dispatchEvent(new Event('abort'));
    for (const d of dependents) abortSignal(d, s.reason);
  };
  class AbortSignal extends EventTarget {
    constructor(key = undefined) {
      if (key !== KEY) throw new TypeError('Illegal constructor');
      super();
      SIG.set(this, { aborted: false, reason: undefined, onabort: null, dependents: [] });
    }
    get aborted() { return state(SIG, this, 'AbortSignal').aborted; }
    get reason() { return state(SIG, this, 'AbortSignal').reason; }
    throwIfAborted() { const s = state(SIG, this, 'AbortSignal'); if (s.aborted) throw s.reason; }
    get onabort() { return state(SIG, this, 'AbortSignal').onabort; }
    set onabort(handler) {
      const s = state(SIG, this, 'AbortSignal');
      if (s.onabort === null && s.handler === undefined) {
        s.handler = (event) => { if (typeof s.onabort === 'function') s.onabort.call(this, event); };
        this.addEventListener('abort', s.handler);
      }
      s.onabort = typeof handler === 'function' ? handler : null;
    }
    static abort(reason = undefined) {
      const signal = new AbortSignal(KEY);
      abortSignal(signal, reason);
      return signal;
    }
    static timeout(ms) {
      need(arguments, 1, "Failed to execute 'timeout' on 'AbortSignal'");
      const delay = Number(ms);
      if (!Number.isFinite(delay) || delay < 0) throw new TypeError('AbortSignal.timeout: the delay must be a non-negative number');
      const signal = new AbortSignal(KEY);
      (addTimer ?? noTimers)(false, () => abortSignal(signal, new DOMException('The operation was aborted due to timeout', 'TimeoutError')), delay);
      return signal;
    }
    static any(signals) {
      const signal = new AbortSignal(KEY);
      const list = [...signals];
      for (const s of list) {
        if (!(s instanceof AbortSignal)) throw new TypeError('AbortSignal.any needs AbortSignals');
        if (s.aborted) { abortSignal(signal, s.reason); return signal; }
      }
      for (const s of list) SIG.get(s).dependents.push(signal);
      return signal;
    }
  }
  tag(AbortSignal, 'AbortSignal');
  const CTL = new WeakMap();
  class AbortController {
    constructor() { CTL.set(this, new AbortSignal(KEY)); }
    get signal() { return state(CTL, this, 'AbortController'); }
    abort(reason = undefined) { abortSignal(state(CTL, this, 'AbortController'), reason); }
  }
  tag(AbortController, 'AbortController');
  def('AbortSignal', AbortSignal);
  def('AbortController', AbortController);

  // ---- TextEncoder, TextDecoder ----------------------------------------------------------
  const bytesOf = (input, what) => {
    if (input === undefined) return new Uint8Array(0);
    if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && input instanceof SharedArrayBuffer)) {
      return new Uint8Array(input);
    }
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeError(`${what}: the input must be an ArrayBuffer, a TypedArray or a DataView`);
  };
  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') { return n.encode(String(input)); }
    encodeInto(source, destination) {
      need(arguments, 2, "Failed to execute 'encodeInto' on 'TextEncoder'");
      if (!(destination instanceof Uint8Array)) throw new TypeError('encodeInto: the destination must be a Uint8Array');
      const src = String(source);
      let read = 0;
      let written = 0;
      const max = destination.length;
      while (read < src.length) {
        let cp = src.codePointAt(read);
        const units = cp > 0xffff ? 2 : 1;
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
        const len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (written + len > max) break;
        if (len === 1) destination[written] = cp;
        else if (len === 2) {
          destination[written] = 0xc0 | (cp >> 6);
          destination[written + 1] = 0x80 | (cp & 0x3f);
        } else if (len === 3) {
          destination[written] = 0xe0 | (cp >> 12);
          destination[written + 1] = 0x80 | ((cp >> 6) & 0x3f);
          destination[written + 2] = 0x80 | (cp & 0x3f);
        } else {
          destination[written] = 0xf0 | (cp >> 18);
          destination[written + 1] = 0x80 | ((cp >> 12) & 0x3f);
          destination[written + 2] = 0x80 | ((cp >> 6) & 0x3f);
          destination[written + 3] = 0x80 | (cp & 0x3f);
        }
        read += units;
        written += len;
      }
      return { read, written };
    }
  }
  tag(TextEncoder, 'TextEncoder');
  const DEC = new WeakMap();
  const BOM_ENCODINGS = ['utf-8', 'utf-16le', 'utf-16be'];
  class TextDecoder {
    constructor(label = 'utf-8', options = undefined) {
      const encoding = n.encoding(String(label));
      if (encoding === undefined) throw new RangeError(`The "${String(label)}" encoding is not supported`);
      const o = options ?? {};
      DEC.set(this, { encoding, fatal: !!o.fatal, ignoreBOM: !!o.ignoreBOM, tail: null, started: false });
    }
    get encoding() { return state(DEC, this, 'TextDecoder').encoding; }
    get fatal() { return state(DEC, this, 'TextDecoder').fatal; }
    get ignoreBOM() { return state(DEC, this, 'TextDecoder').ignoreBOM; }
    decode(input = undefined, options = undefined) {
      const s = state(DEC, this, 'TextDecoder');
      const stream = !!options?.stream;
      let bytes = bytesOf(input, 'TextDecoder.decode');
      if (s.tail !== null) {
        const joined = new Uint8Array(s.tail.length + bytes.length);
        joined.set(s.tail);
        joined.set(bytes, s.tail.length);
        bytes = joined;
        s.tail = null;
      } else {
        bytes = bytes.slice();
      }
      let text;
      let kept;
      try {
        [text, kept] = n.decode(s.encoding, bytes, s.fatal, stream);
      } catch (e) {
        s.started = false;
        throw e;
      }
      if (kept > 0) s.tail = bytes.slice(bytes.length - kept);
      if (!s.started && text.length > 0) {
        s.started = true;
        if (!s.ignoreBOM && text.charCodeAt(0) === 0xfeff && BOM_ENCODINGS.includes(s.encoding)) text = text.slice(1);
      }
      if (!stream) s.started = false;
      return text;
    }
  }
  tag(TextDecoder, 'TextDecoder');
  def('TextEncoder', TextEncoder);
  def('TextDecoder', TextDecoder);

  // ---- URL, URLSearchParams --------------------------------------------------------------
  const FIELDS = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
  const URLS = new WeakMap();
  const PARAMS = new WeakMap();
  const pairsOf = (query) => {
    const flat = n.searchParse(query);
    const list = [];
    for (let i = 0; i < flat.length; i += 2) list.push([flat[i], flat[i + 1]]);
    return list;
  };
  const serialize = (list) => n.searchSerialize(list.flat());
  // A change to a URL's query re-reads its searchParams; a change to the params rewrites the query.
  const reparse = (u) => {
    if (u.params) {
      const list = PARAMS.get(u.params).list;
      list.splice(0, list.length, ...pairsOf(u.c[9].slice(1)));
    }
  };
  const paramsChanged = (p) => {
    const s = PARAMS.get(p);
    if (!s.url) return;
    const u = URLS.get(s.url);
    const q = serialize(s.list);
    u.c = n.urlSet(u.c[0], 'search', q === '' ? '' : '?' + q);
    if (q === '') u.c[9] = '';
  };
  class URL {
    constructor(url, base = undefined) {
      need(arguments, 1, "Failed to construct 'URL'");
      const c = base === undefined ? n.urlParse(String(url)) : n.urlParse(String(url), String(base));
      if (c === undefined || c === null) {
        const e = new TypeError(`Invalid URL: ${String(url)}${base === undefined ? '' : ` (base ${String(base)})`}`);
        e.input = String(url);
        throw e;
      }
      URLS.set(this, { c, params: null });
    }
    static canParse(url, base = undefined) {
      need(arguments, 1, "Failed to execute 'canParse' on 'URL'");
      const c = base === undefined ? n.urlParse(String(url)) : n.urlParse(String(url), String(base));
      return c !== undefined && c !== null;
    }
    static parse(url, base = undefined) {
      need(arguments, 1, "Failed to execute 'parse' on 'URL'");
      try { return new URL(url, base); } catch { return null; }
    }
    get searchParams() {
      const u = state(URLS, this, 'URL');
      if (u.params === null) {
        u.params = new URLSearchParams(u.c[9]);
        PARAMS.get(u.params).url = this;
      }
      return u.params;
    }
    toString() { return state(URLS, this, 'URL').c[0]; }
    toJSON() { return state(URLS, this, 'URL').c[0]; }
  }
  FIELDS.forEach((name, i) => {
    const get = function () { return state(URLS, this, 'URL').c[i]; };
    const set = name === 'origin' ? undefined : function (value) {
      const u = state(URLS, this, 'URL');
      const c = n.urlSet(u.c[0], name, String(value));
      if (c === undefined || c === null) throw new TypeError(`Invalid URL: ${String(value)}`);
      u.c = c;
      if (name === 'href' || name === 'search') reparse(u);
    };
    Object.defineProperty(URL.prototype, name, { get, set, enumerable: true, configurable: true });
  });
  tag(URL, 'URL');

  class URLSearchParams {
    constructor(init = '') {
      const list = [];
      PARAMS.set(this, { list, url: null });
      if ((typeof init === 'object' && init !== null) || typeof init === 'function') {
        if (typeof init[Symbol.iterator] === 'function') {
          for (const pair of init) {
            const p = [...pair];
            if (p.length !== 2) throw new TypeError('URLSearchParams: each pair must have exactly a name and a value');
            list.push([String(p[0]), String(p[1])]);
          }
        } else {
          for (const k of Object.keys(init)) list.push([k, String(init[k])]);
        }
      } else {
        const s = String(init);
        list.push(...pairsOf(s.startsWith('?') ? s.slice(1) : s));
      }
    }
    get size() { return state(PARAMS, this, 'URLSearchParams').list.length; }
    append(name, value) {
      need(arguments, 2, "Failed to execute 'append' on 'URLSearchParams'");
      state(PARAMS, this, 'URLSearchParams').list.push([String(name), String(value)]);
      paramsChanged(this);
    }
    delete(name, value = undefined) {
      need(arguments, 1, "Failed to execute 'delete' on 'URLSearchParams'");
      const s = state(PARAMS, this, 'URLSearchParams');
      const k = String(name);
      const v = value === undefined ? undefined : String(value);
      const kept = s.list.filter(([a, b]) => !(a === k && (v === undefined || b === v)));
      s.list.splice(0, s.list.length, ...kept);
      paramsChanged(this);
    }
    get(name) {
      need(arguments, 1, "Failed to execute 'get' on 'URLSearchParams'");
      const k = String(name);
      const hit = state(PARAMS, this, 'URLSearchParams').list.find(([a]) => a === k);
      return hit ? hit[1] : null;
    }
    getAll(name) {
      need(arguments, 1, "Failed to execute 'getAll' on 'URLSearchParams'");
      const k = String(name);
      return state(PARAMS, this, 'URLSearchParams').list.filter(([a]) => a === k).map(([, b]) => b);
    }
    has(name, value = undefined) {
      need(arguments, 1, "Failed to execute 'has' on 'URLSearchParams'");
      const k = String(name);
      const v = value === undefined ? undefined : String(value);
      return state(PARAMS, this, 'URLSearchParams').list.some(([a, b]) => a === k && (v === undefined || b === v));
    }
    set(name, value) {
      need(arguments, 2, "Failed to execute 'set' on 'URLSearchParams'");
      const s = state(PARAMS, this, 'URLSearchParams');
      const k = String(name);
      const v = String(value);
      const i = s.list.findIndex(([a]) => a === k);
      if (i < 0) s.list.push([k, v]);
      else {
        s.list[i][1] = v;
        const kept = s.list.filter(([a], j) => j <= i || a !== k);
        s.list.splice(0, s.list.length, ...kept);
      }
      paramsChanged(this);
    }
    sort() {
      const s = state(PARAMS, this, 'URLSearchParams');
      s.list.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      paramsChanged(this);
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== 'function') throw new TypeError('URLSearchParams.forEach needs a function');
      const list = state(PARAMS, this, 'URLSearchParams').list;
      for (let i = 0; i < list.length; i++) callback.call(thisArg, list[i][1], list[i][0], this);
    }
    *entries() {
      const list = state(PARAMS, this, 'URLSearchParams').list;
      for (let i = 0; i < list.length; i++) yield [list[i][0], list[i][1]];
    }
    *keys() { for (const [k] of this.entries()) yield k; }
    *values() { for (const [, v] of this.entries()) yield v; }
    toString() { return serialize(state(PARAMS, this, 'URLSearchParams').list); }
  }
  URLSearchParams.prototype[Symbol.iterator] = URLSearchParams.prototype.entries;
  tag(URLSearchParams, 'URLSearchParams');
  def('URL', URL);
  def('URLSearchParams', URLSearchParams);

  // ---- structuredClone -------------------------------------------------------------------
  const cloneError = (what) => new DOMException(`${what} could not be cloned.`, 'DataCloneError');
  const ERRORS = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  const typedArray = Object.getPrototypeOf(Uint8Array);
  const toText = Object.prototype.toString;
  function structuredClone(value, options = undefined) {
    need(arguments, 1, "Failed to execute 'structuredClone'");
    const seen = new Map();
    for (const buffer of options?.transfer ?? []) {
      if (!(buffer instanceof ArrayBuffer)) throw cloneError('A value in transfer that is not an ArrayBuffer');
      if (seen.has(buffer)) throw cloneError('An ArrayBuffer listed twice in transfer');
      seen.set(buffer, null);
    }
    for (const buffer of seen.keys()) {
      seen.set(buffer, typeof buffer.transfer === 'function' ? buffer.transfer() : buffer.slice(0));
    }
    const clone = (v) => {
      if (typeof v === 'function') throw cloneError(String(v).slice(0, 60));
      if (typeof v === 'symbol') throw cloneError(String(v));
      if (v === null || typeof v !== 'object') return v;
      if (seen.has(v)) return seen.get(v);
      let out;
      const keep = (o) => { seen.set(v, o); return o; };
      const kind = toText.call(v);
      if (v instanceof Date) return keep(new Date(v.getTime()));
      if (v instanceof RegExp) return keep(new RegExp(v.source, v.flags));
      if (v instanceof ArrayBuffer) return keep(v.slice(0));
      if (v instanceof typedArray) {
        const buffer = clone(v.buffer);
        return keep(new v.constructor(buffer, v.byteOffset, v.length));
      }
      if (v instanceof DataView) return keep(new DataView(clone(v.buffer), v.byteOffset, v.byteLength));
      if (v instanceof Map) {
        out = keep(new Map());
        for (const [k, x] of v) out.set(clone(k), clone(x));
        return out;
      }
      if (v instanceof Set) {
        out = keep(new Set());
        for (const x of v) out.add(clone(x));
        return out;
      }
      if (kind === '[object Boolean]' || kind === '[object Number]' || kind === '[object String]' || kind === '[object BigInt]') {
        return keep(Object(v.valueOf()));
      }
      if (v instanceof Error) {
        const C = Object.hasOwn(ERRORS, v.name) ? ERRORS[v.name] : Error;
        out = keep(new C(v.message));
        if (typeof v.stack === 'string') Object.defineProperty(out, 'stack', { value: v.stack, writable: true, configurable: true });
        if ('cause' in v) Object.defineProperty(out, 'cause', { value: clone(v.cause), writable: true, configurable: true });
        return out;
      }
      if (v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet ||
          (typeof WeakRef === 'function' && v instanceof WeakRef) || v instanceof EventTarget ||
          v instanceof Event || kind === '[object Generator]') {
        throw cloneError(kind.slice(8, -1) + ' object');
      }
      if (Array.isArray(v)) {
        out = keep(new Array(v.length));
      } else {
        out = keep({});
      }
      for (const k of Object.keys(v)) out[k] = clone(v[k]);
      return out;
    };
    return clone(value);
  }
  def('structuredClone', structuredClone);

  // ---- atob, btoa, self, navigator, reportError ---------------------------------------
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const badChar = (what) => new DOMException(`${what}: the string contains an invalid character`, 'InvalidCharacterError');
  if (typeof G.btoa !== 'function') {
    def('btoa', function btoa(data) {
      need(arguments, 1, "Failed to execute 'btoa'");
      const s = String(data);
      let out = '';
      for (let i = 0; i < s.length; i += 3) {
        const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
        if (a > 255 || b > 255 || c > 255) throw badChar('btoa');
        const n3 = (a << 16) | ((b || 0) << 8) | (c || 0);
        out += B64[n3 >> 18] + B64[(n3 >> 12) & 63] +
          (i + 1 < s.length ? B64[(n3 >> 6) & 63] : '=') + (i + 2 < s.length ? B64[n3 & 63] : '=');
      }
      return out;
    });
  }
  if (typeof G.atob !== 'function') {
    def('atob', function atob(data) {
      need(arguments, 1, "Failed to execute 'atob'");
      let s = String(data).replace(/[\t\n\f\r ]/g, '');
      if (s.length % 4 === 0) s = s.replace(/==?$/, '');
      if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw badChar('atob');
      let out = '';
      let bits = 0, acc = 0;
      for (const ch of s) {
        acc = (acc << 6) | B64.indexOf(ch);
        bits += 6;
        if (bits >= 8) { bits -= 8; out += String.fromCharCode((acc >> bits) & 255); }
      }
      return out;
    });
  }
  if (!('self' in G)) {
    Object.defineProperty(G, 'self', { get() { return G; }, set(v) { Object.defineProperty(G, 'self', { value: v, writable: true, configurable: true }); }, configurable: true });
  }
  if (typeof G.navigator !== 'object') def('navigator', Object.freeze({ userAgent: 'mcp-sandbox' }));
  def('reportError', function reportError(error) {
    need(arguments, 1, "Failed to execute 'reportError'");
    try { G.console.error('Uncaught', error); } catch { /* no console */ }
  });

  // ---- fetch: absent on purpose ----------------------------------------------------------
  def('fetch', function fetch() {
    return Promise.reject(new TypeError(
      'fetch is not available: the sandbox has no network. Reach the outside world through a tool, ' +
      'mcp.<server>.<tool>(args); list them with Object.keys(mcp) and Object.keys(mcp.<server>)'));
  });

  // ---- crypto.subtle.digest --------------------------------------------------------------
  const DIGESTS = ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512'];
  const subtle = {
    digest(algorithm, data) {
      return new Promise((resolve) => {
        const name = typeof algorithm === 'string' ? algorithm : algorithm?.name;
        const wanted = String(name).toUpperCase();
        if (!DIGESTS.includes(wanted)) {
          throw new DOMException(`Unrecognized algorithm name '${String(name)}'; digest supports ${DIGESTS.join(', ')}`, 'NotSupportedError');
        }
        resolve(n.digest(wanted, bytesOf(data, 'crypto.subtle.digest').slice()));
      });
    },
  };
  Object.defineProperty(subtle, Symbol.toStringTag, { value: 'SubtleCrypto', configurable: true });
  // `crypto` itself (getRandomValues, randomUUID) belongs to the randomness module: `subtle`
  // joins whatever `crypto` exists, or makes one.
  const attachSubtle = () => {
    const c = G.crypto;
    if (c !== null && typeof c === 'object') {
      if (!('subtle' in c)) {
        try { Object.defineProperty(c, 'subtle', { value: subtle, enumerable: true, configurable: true }); } catch { /* frozen */ }
      }
    } else {
      def('crypto', { subtle });
    }
  };
  attachSubtle();

  // Per execution: this execution's timer natives.
  return function bind(add, clear) {
    addTimer = add;
    clearTimer = clear;
    attachSubtle();
  };
})
