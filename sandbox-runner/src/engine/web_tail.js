  // (web.rs joins web.js, web_url.js and web_tail.js into one function body.)
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
