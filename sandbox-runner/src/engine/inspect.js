// Compiled once when the engine is created (before lockdown, and in a zygote before any fork).
// Evaluates to a function that returns the intrinsics-bound `inspect(value)`: how `console.*`
// shows a value that is not a string, in the style of Node's util.inspect (`Map(1) { 1 => 2 }`,
// `Set(2) { 'a', 'b' }`, `[ 1, 2 ]`, `{ a: 1 }`, `2024-01-01T00:00:00.000Z`, `[Circular *1]`).
// Bounded: nesting deeper than 2 levels is shown as `[Object]` / `[Array]`, at most 100 items
// per container, at most 2,000 entries in all; a getter or proxy that throws shows as `[Thrown]`.
// The factory is called once, when the engine is created, so the intrinsics it keeps are the
// original ones whatever a script later does to the globals.
(function () {
  'use strict';
  const toStr = Function.prototype.call.bind(Object.prototype.toString);
  const getProto = Object.getPrototypeOf;
  const ownKeys = Object.keys;
  const isArray = Array.isArray;
  const mapEntries = Function.prototype.call.bind(Map.prototype.entries);
  const mapSize = Function.prototype.call.bind(Object.getOwnPropertyDescriptor(Map.prototype, 'size').get);
  const setValues = Function.prototype.call.bind(Set.prototype.values);
  const setSize = Function.prototype.call.bind(Object.getOwnPropertyDescriptor(Set.prototype, 'size').get);
  const dateTime = Function.prototype.call.bind(Date.prototype.getTime);
  const dateIso = Function.prototype.call.bind(Date.prototype.toISOString);
  const reToString = Function.prototype.call.bind(RegExp.prototype.toString);
  const fnToString = Function.prototype.call.bind(Function.prototype.toString);
  const symToString = Function.prototype.call.bind(Symbol.prototype.toString);
  const TypedArrayProto = getProto(Uint8Array.prototype);
  const taLength = Function.prototype.call.bind(Object.getOwnPropertyDescriptor(TypedArrayProto, 'length').get);
  const taTag = Function.prototype.call.bind(Object.getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag).get);
  const abLength = Function.prototype.call.bind(Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get);
  const jsonQuote = JSON.stringify;
  const StringC = String;
  const isObjectIs = Object.is;
  const ident = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const reTest = Function.prototype.call.bind(RegExp.prototype.test);
  const MAX_DEPTH = 2;
  const MAX_ITEMS = 100;
  const MAX_ENTRIES = 2000;
  const BREAK = 72;

  const quote = (s) => {
    const j = jsonQuote(s).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'");
    return "'" + j + "'";
  };
  const key = (k) => (reTest(ident, k) ? k : quote(k));

  return function inspect(value) {
    const seen = [];
    const circular = new Map();
    let budget = MAX_ENTRIES;

    const wrap = (open, parts, close, indent) => {
      if (parts.length === 0) return open.trimEnd() + close.trimStart();
      const flat = open + parts.join(', ') + close;
      if (flat.length <= BREAK && !flat.includes('\n')) return flat;
      const pad = '  '.repeat(indent + 1);
      return open.trimEnd() + '\n' + pad + parts.join(',\n' + pad) + '\n' + '  '.repeat(indent) + close.trimStart();
    };

    const fmt = (v, depth, top) => {
      switch (typeof v) {
        case 'string': return top ? v : quote(v);
        case 'number': return isObjectIs(v, -0) ? '-0' : StringC(v);
        case 'bigint': return StringC(v) + 'n';
        case 'boolean': return StringC(v);
        case 'undefined': return 'undefined';
        case 'symbol': return symToString(v);
        case 'function': {
          let src = '';
          try { src = fnToString(v); } catch (_) { /* a revoked proxy */ }
          const name = v.name ? StringC(v.name) : '';
          if (src.startsWith('class')) return '[class ' + (name || '(anonymous)') + ']';
          return '[Function: ' + (name || '(anonymous)') + ']';
        }
      }
      if (v === null) return 'null';
      const tag = toStr(v);
      if (tag === '[object Error]' || v instanceof Error) {
        const name = v.name ? StringC(v.name) : 'Error';
        const text = v.message !== undefined ? name + ': ' + StringC(v.message) : name;
        return top ? text : '[' + text + ']';
      }
      if (tag === '[object Date]') {
        const t = dateTime(v);
        return t === t ? dateIso(v) : 'Invalid Date';
      }
      if (tag === '[object RegExp]') return reToString(v);
      const at = seen.indexOf(v);
      if (at >= 0) {
        if (!circular.has(v)) circular.set(v, circular.size + 1);
        return '[Circular *' + circular.get(v) + ']';
      }
      if (tag === '[object Promise]') return 'Promise { <unknown> }';
      if (tag === '[object ArrayBuffer]') return 'ArrayBuffer { byteLength: ' + abLength(v) + ' }';
      let typed;
      try { typed = taTag(v); } catch (_) { typed = undefined; }
      const isMap = tag === '[object Map]';
      const isSet = tag === '[object Set]';
      const arr = isArray(v);
      if (depth > MAX_DEPTH) {
        if (arr) return '[Array]';
        if (isMap) return '[Map]';
        if (isSet) return '[Set]';
        if (typed) return '[' + typed + ']';
        return '[Object]';
      }
      seen.push(v);
      const parts = [];
      const more = (n) => { if (n > 0) parts.push('... ' + n + ' more item' + (n === 1 ? '' : 's')); };
      let out;
      if (isMap) {
        let i = 0;
        const size = mapSize(v);
        for (const [k, val] of mapEntries(v)) {
          if (i >= MAX_ITEMS || budget <= 0) break;
          budget--; i++;
          parts.push(fmt(k, depth + 1, false) + ' => ' + fmt(val, depth + 1, false));
        }
        more(size - i);
        out = wrap('Map(' + size + ') { ', parts, ' }', depth);
      } else if (isSet) {
        let i = 0;
        const size = setSize(v);
        for (const val of setValues(v)) {
          if (i >= MAX_ITEMS || budget <= 0) break;
          budget--; i++;
          parts.push(fmt(val, depth + 1, false));
        }
        more(size - i);
        out = wrap('Set(' + size + ') { ', parts, ' }', depth);
      } else if (typed) {
        const len = taLength(v);
        const n = len < MAX_ITEMS ? len : MAX_ITEMS;
        for (let i = 0; i < n && budget > 0; i++, budget--) parts.push(fmt(v[i], depth + 1, false));
        more(len - parts.length);
        out = wrap(typed + '(' + len + ') [ ', parts, ' ]', depth);
      } else if (arr) {
        const len = v.length;
        let holes = 0;
        for (let i = 0; i < len && parts.length < MAX_ITEMS && budget > 0; i++) {
          if (!(i in v)) { holes++; continue; }
          if (holes) { parts.push('<' + holes + ' empty item' + (holes === 1 ? '' : 's') + '>'); holes = 0; }
          budget--;
          parts.push(fmt(v[i], depth + 1, false));
        }
        if (holes) parts.push('<' + holes + ' empty item' + (holes === 1 ? '' : 's') + '>');
        const shown = parts.length;
        if (len > MAX_ITEMS && shown >= MAX_ITEMS) more(len - MAX_ITEMS);
        out = wrap('[ ', parts, ' ]', depth);
      } else {
        const keys = ownKeys(v);
        let i = 0;
        for (; i < keys.length && i < MAX_ITEMS * 10 && budget > 0; i++, budget--) {
          let shown;
          try { shown = fmt(v[keys[i]], depth + 1, false); } catch (_) { shown = '[Thrown]'; }
          parts.push(key(keys[i]) + ': ' + shown);
        }
        if (keys.length > i) parts.push('... ' + (keys.length - i) + ' more propert' + (keys.length - i === 1 ? 'y' : 'ies'));
        const proto = getProto(v);
        let prefix = '';
        if (proto === null) prefix = '[Object: null prototype] ';
        else {
          let ctor;
          try { ctor = proto.constructor; } catch (_) { ctor = undefined; }
          const name = typeof ctor === 'function' && ctor.name ? StringC(ctor.name) : '';
          if (name && name !== 'Object') prefix = name + ' ';
        }
        out = wrap(prefix + '{ ', parts, ' }', depth);
      }
      seen.pop();
      if (circular.has(v)) out = '<ref *' + circular.get(v) + '> ' + out;
      return out;
    };
    return fmt(value, 0, true);
  };
})
