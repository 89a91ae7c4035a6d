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

  const console = create(null);
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    console[level] = (...args) => { log(level, ...args); };
  }
  Object.defineProperty(globalThis, 'mcp', fixed(mcp));
  Object.defineProperty(globalThis, 'console', fixed(Object.freeze(console)));
})
