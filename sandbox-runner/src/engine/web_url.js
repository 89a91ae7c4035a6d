  // (web.rs joins web.js, web_url.js and web_tail.js into one function body.)
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

