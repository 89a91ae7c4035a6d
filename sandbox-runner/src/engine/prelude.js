// Compiled once when the engine is created (before lockdown, and in a zygote before any fork);
// called once per execution, before the user's code, with the runner's natives passed as
// arguments: they are never reachable as globals. Builds `mcp` and `console`.
(function (call, log, toolsByServer) {
  'use strict';
  const ProxyC = Proxy;
  const create = Object.create;
  const keys = Object.keys;
  const hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
  const fixed = (value) => ({ value, writable: false, enumerable: false, configurable: false });
  const readOnly = {
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
    setPrototypeOf() { return false; },
    getPrototypeOf() { return null; },
    preventExtensions() { return false; },
  };
  const descriptor = (value) => ({ value, writable: false, enumerable: true, configurable: true });

  // Any property of a server is a function; unknown or reserved names reject with
  // TOOL_NOT_FOUND from the native side. `then` is never a tool, so `await mcp.x` is harmless.
  const makeServer = (server) => {
    const tools = hasOwn(toolsByServer, server) ? toolsByServer[server] : [];
    const fn = (tool) => (args) => call(server, tool, args);
    return new ProxyC(create(null), {
      ...readOnly,
      get(_, tool) {
        if (typeof tool !== 'string' || tool === 'then') return undefined;
        return fn(tool);
      },
      has(_, tool) { return typeof tool === 'string' && tools.includes(tool); },
      ownKeys() { return tools.slice(); },
      getOwnPropertyDescriptor(_, tool) {
        return typeof tool === 'string' && tools.includes(tool) ? descriptor(fn(tool)) : undefined;
      },
    });
  };
  const serverNames = keys(toolsByServer);
  const serverCache = create(null);
  const server = (name) => {
    if (!hasOwn(serverCache, name)) serverCache[name] = makeServer(name);
    return serverCache[name];
  };
  const mcp = new ProxyC(create(null), {
    ...readOnly,
    get(_, name) {
      if (typeof name !== 'string' || name === 'then') return undefined;
      return server(name);
    },
    has(_, name) { return typeof name === 'string' && serverNames.includes(name); },
    ownKeys() { return serverNames.slice(); },
    getOwnPropertyDescriptor(_, name) {
      return typeof name === 'string' && serverNames.includes(name) ? descriptor(server(name)) : undefined;
    },
  });

  // console.table's box, as Node draws it (values left-aligned).
  const cell = (v) => {
    if (typeof v === 'string') return `'${v}'`;
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'function') return '[Function]';
    if (v !== null && typeof v === 'object') {
      try { return JSON.stringify(v) ?? String(v); } catch { return '[object]'; }
    }
    return String(v);
  };
  const table = (data, columns) => {
    const rows = data instanceof Map ? [...data.entries()].map(([k, v], i) => [i, { Key: k, Values: v }])
      : data instanceof Set ? [...data].map((v, i) => [i, { Values: v }])
      : keys(data).map((k) => [k, data[k]]);
    const head = ['(index)'];
    const want = Array.isArray(columns) ? columns.map(String) : null;
    let values = false;
    for (const [, row] of rows) {
      if (row !== null && typeof row === 'object') {
        for (const k of keys(row)) if (!head.includes(k) && (!want || want.includes(k))) head.push(k);
      } else values = true;
    }
    if (want) for (const k of want) if (!head.includes(k)) head.push(k);
    if (values) head.push('Values');
    const body = rows.map(([index, row]) => head.map((h, i) => {
      if (i === 0) return String(index);
      if (h === 'Values' && (row === null || typeof row !== 'object')) return cell(row);
      return row !== null && typeof row === 'object' && hasOwn(row, h) ? cell(row[h]) : '';
    }));
    const width = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)) + 2);
    const line = (l, m, r) => l + width.map((w) => '─'.repeat(w)).join(m) + r;
    const row = (cells) => '│' + cells.map((c, i) => ' ' + c.padEnd(width[i] - 1)).join('│') + '│';
    return [line('┌', '┬', '┐'), row(head), line('├', '┼', '┤'), ...body.map(row), line('└', '┴', '┘')].join('\n');
  };

  const console = create(null);
  // console.group indents what follows by two spaces per level.
  let depth = 0;
  const emit = (level, args) => {
    if (depth > 0) args.unshift(' '.repeat(2 * depth - 1));
    log(level, ...args);
  };
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    console[level] = (...args) => { emit(level, args); };
  }
  console.trace = (...args) => {
    const stack = String(new Error().stack ?? '').split('\n').slice(1).join('\n');
    emit('debug', ['Trace' + (args.length ? ':' : ''), ...args, '\n' + stack]);
  };
  console.dir = (value) => { emit('log', [value]); };
  console.dirxml = console.log;
  console.assert = (condition, ...args) => {
    if (condition) return;
    if (typeof args[0] === 'string') args[0] = 'Assertion failed: ' + args[0];
    else args.unshift(args.length ? 'Assertion failed:' : 'Assertion failed');
    emit('error', args);
  };
  console.group = (...args) => { if (args.length) emit('log', args); depth++; };
  console.groupCollapsed = console.group;
  console.groupEnd = () => { if (depth > 0) depth--; };
  const counts = new Map();
  console.count = (label = 'default') => {
    const key = String(label);
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    emit('info', [`${key}: ${n}`]);
  };
  console.countReset = (label = 'default') => { counts.delete(String(label)); };
  const timers = new Map();
  const clock = () => (typeof performance === 'object' && performance ? performance.now() : Date.now());
  const elapsed = (key) => `${key}: ${(clock() - timers.get(key)).toFixed(3)}ms`;
  console.time = (label = 'default') => {
    const key = String(label);
    if (timers.has(key)) emit('warn', [`Timer '${key}' already exists`]);
    else timers.set(key, clock());
  };
  console.timeLog = (label = 'default', ...args) => {
    const key = String(label);
    if (!timers.has(key)) emit('warn', [`Timer '${key}' does not exist`]);
    else emit('info', [elapsed(key), ...args]);
  };
  console.timeEnd = (label = 'default') => {
    const key = String(label);
    if (!timers.has(key)) return emit('warn', [`Timer '${key}' does not exist`]);
    emit('info', [elapsed(key)]);
    timers.delete(key);
  };
  console.table = (data, columns) => {
    if (data === null || typeof data !== 'object') return emit('log', [data]);
    emit('log', [table(data, columns)]);
  };
  // Session state, kept by the host per client session (`$state` is no server's name):
  // store(key, value) → undefined, load(key) → the value or undefined, keys() → string[],
  // remove(key) → whether it was there.
  const state = (op, args) => call('$state', op, args);
  const stateFns = {
    store: (key, value) => state('store', { key, value }).then(() => undefined),
    load: (key) => state('load', { key }).then((r) => (r && r.found ? r.value : undefined)),
    keys: () => state('keys', {}),
    remove: (key) => state('remove', { key }),
  };
  for (const name of keys(stateFns)) {
    Object.defineProperty(globalThis, name, { value: stateFns[name], writable: true, enumerable: false, configurable: true });
  }
  Object.defineProperty(globalThis, 'mcp', fixed(mcp));
  Object.defineProperty(globalThis, 'console', fixed(Object.freeze(console)));
})
