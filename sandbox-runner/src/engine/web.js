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

