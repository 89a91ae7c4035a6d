// Run inside a network namespace whose only way out is the egress bridge (tests/egress_proxy.rs).
// argv: CA file, the allowed HTTPS URL. Prints one JSON line per attempt.
import fs from "node:fs";
import http from "node:http";
import tls from "node:tls";

const [ca, url] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
const u = new URL(url);

// fetch as it is: Node >= 24 (22.21+) sends it through HTTPS_PROXY with NODE_USE_ENV_PROXY=1;
// older Node ignores the variables and, with no network but loopback, cannot resolve the name.
try {
  const r = await fetch(url);
  out({ what: "fetch", ok: true, value: [r.status, await r.text()] });
} catch (e) {
  out({ what: "fetch", ok: false, error: String(e.cause?.code ?? e.cause ?? e) });
}

// Through the proxy explicitly (what an agent such as undici's EnvHttpProxyAgent does): CONNECT.
const body = await new Promise((resolve, reject) => {
  const proxy = new URL(process.env.HTTPS_PROXY);
  const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: u.host });
  req.on("connect", (res, socket) => {
    if (res.statusCode !== 200) return reject(new Error(`proxy answered ${res.statusCode}`));
    const t = tls.connect({ socket, servername: u.hostname, ca: fs.readFileSync(ca) }, () => {
      t.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`);
    });
    let data = "";
    t.on("data", (d) => (data += d));
    t.on("end", () => resolve(data));
    t.on("error", reject);
  });
  req.on("error", reject);
  req.end();
}).then((v) => ({ ok: true, value: v }), (e) => ({ ok: false, error: String(e) }));
out({ what: "connect", ...body, version: process.version });
