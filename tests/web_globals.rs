//! The web-platform globals other than timers and URL, each in a locked-down runner with its
//! edge cases: TextEncoder/TextDecoder, structuredClone, AbortController/AbortSignal,
//! Event/EventTarget, console's extra methods, crypto.subtle.digest and the absent fetch.

use crate::common;
use common::*;
use mcp_sandbox::Limits;
use serde_json::json;

async fn ok(code: &str) -> serde_json::Value {
    let o = run_with(&local_catalog(), code, Limits::default()).await;
    assert!(o.success, "{code}\n{o:?}");
    o.result
}

#[tokio::test]
async fn text_decoder_bom_fatal_streaming_and_labels() {
    let r = ok(r#"
        const d = new TextDecoder();
        const bom = d.decode(new Uint8Array([0xEF, 0xBB, 0xBF, 0x68, 0x69]));
        const kept = new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([0xEF, 0xBB, 0xBF, 0x68]));
        let fatal;
        try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xFF])); }
        catch (e) { fatal = [e.name, e.message]; }
        const lossy = new TextDecoder().decode(new Uint8Array([0x61, 0xFF, 0x62]));
        // '€' (E2 82 AC) and '😀' (F0 9F 98 80) split across chunks.
        const s = new TextDecoder();
        const parts = [s.decode(new Uint8Array([0x61, 0xE2]), { stream: true }),
                       s.decode(new Uint8Array([0x82, 0xAC, 0xF0, 0x9F]), { stream: true }),
                       s.decode(new Uint8Array([0x98, 0x80]), { stream: true }),
                       s.decode()];
        const bomSplit = new TextDecoder();
        const b = bomSplit.decode(new Uint8Array([0xEF, 0xBB]), { stream: true }) +
                  bomSplit.decode(new Uint8Array([0xBF, 0x7A]));
        const unfinished = new TextDecoder().decode(new Uint8Array([0x61, 0xE2, 0x82]));
        const le = new TextDecoder('utf-16le');
        const utf16 = le.decode(new Uint8Array([0xFF, 0xFE, 0x3D]), { stream: true }) +
                      le.decode(new Uint8Array([0xD8, 0x00, 0xDE, 0x41, 0x00]));
        const latin = new TextDecoder('latin1');
        const labels = [latin.encoding, new TextDecoder('UTF8').encoding, le.encoding,
                        latin.decode(new Uint8Array([0xE9, 0x80]))];
        let unknown;
        try { new TextDecoder('no-such-encoding'); } catch (e) { unknown = e.name; }
        const enc = new TextEncoder();
        const bytes = [...enc.encode('a€😀\uD800')];
        const into = new Uint8Array(5);
        const r = enc.encodeInto('a€😀', into);
        return [bom, kept.length, fatal, lossy, parts, b, unfinished, utf16, labels, unknown,
                bytes, [r.read, r.written, [...into]], enc.encoding,
                new TextDecoder().decode(new Uint8Array([0x68, 0x69]).buffer)];
    "#)
    .await;
    assert_eq!(
        r,
        json!([
            "hi",
            2,
            [
                "TypeError",
                "The encoded data was not valid for encoding utf-8"
            ],
            "a\u{fffd}b",
            ["a", "€", "😀", ""],
            "z",
            "a\u{fffd}",
            "😀A",
            ["windows-1252", "utf-8", "utf-16le", "é€"],
            "RangeError",
            [0x61, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xEF, 0xBF, 0xBD],
            [2, 4, [0x61, 0xE2, 0x82, 0xAC, 0]],
            "utf-8",
            "hi"
        ])
    );
}

#[tokio::test]
async fn structured_clone_round_trips_and_refuses_functions() {
    let r = ok(r#"
        const inner = { n: 1 };
        const src = {
          map: new Map([[1, 'one'], ['k', inner]]),
          set: new Set([1, inner]),
          date: new Date(86400000),
          re: /a+b/gi,
          bytes: new Uint8Array([1, 2, 3]),
          floats: new Float64Array([1.5]),
          big: 10n,
          arr: [1, , 3],
          err: new RangeError('bad'),
        };
        src.self = src;
        src.map.set('cycle', src);
        const c = structuredClone(src);
        const view = new Uint8Array([9, 8, 7, 6]).subarray(1, 3);
        const v = structuredClone(view);
        const checks = [
          c !== src, c.self === c, c.map.get('cycle') === c, c.map.get('k') === [...c.set][1],
          c.map.get('k') !== inner, c.map.get(1), c.set.has(1), c.date instanceof Date,
          c.date.getTime(), c.re instanceof RegExp, c.re.source, c.re.flags,
          c.bytes instanceof Uint8Array, [...c.bytes], c.bytes.buffer !== src.bytes.buffer,
          c.floats[0], c.big === 10n, 1 in c.arr, c.arr.length, c.err instanceof RangeError,
          c.err.message, [...v], v.byteOffset, v.buffer.byteLength,
        ];
        const refused = [];
        for (const bad of [() => 1, { f() {} }, Symbol('s'), new Promise(() => {}), new WeakMap()]) {
          try { structuredClone(bad); refused.push('cloned'); }
          catch (e) { refused.push([e.name, e instanceof DOMException, e.code]); }
        }
        const buf = new ArrayBuffer(4);
        const moved = structuredClone(buf, { transfer: [buf] });
        return [checks, refused, moved.byteLength, buf.byteLength];
    "#)
    .await;
    assert_eq!(
        r,
        json!([
            [
                true,
                true,
                true,
                true,
                true,
                "one",
                true,
                true,
                86400000,
                true,
                "a+b",
                "gi",
                true,
                [1, 2, 3],
                true,
                1.5,
                true,
                false,
                3,
                true,
                "bad",
                [8, 7],
                1,
                4
            ],
            [
                ["DataCloneError", true, 25],
                ["DataCloneError", true, 25],
                ["DataCloneError", true, 25],
                ["DataCloneError", true, 25],
                ["DataCloneError", true, 25]
            ],
            4,
            0
        ])
    );
}

#[tokio::test]
async fn abort_controller_and_events() {
    let r = ok(r#"
        const seen = [];
        const ac = new AbortController();
        ac.signal.addEventListener('abort', (e) => seen.push(['listener', e.type, e.target === ac.signal]));
        ac.signal.onabort = () => seen.push('onabort');
        const before = [ac.signal.aborted, ac.signal.reason];
        ac.signal.throwIfAborted();
        ac.abort();
        ac.abort('again');
        let thrown;
        try { ac.signal.throwIfAborted(); } catch (e) { thrown = [e.name, e.message]; }
        const custom = AbortSignal.abort('why');
        const any = AbortSignal.any([new AbortController().signal, custom]);
        let illegal;
        try { new AbortSignal(); } catch (e) { illegal = e.name; }

        const t = new EventTarget();
        const order = [];
        const once = () => order.push('once');
        t.addEventListener('ping', once, { once: true });
        t.addEventListener('ping', (e) => { order.push('a'); e.stopImmediatePropagation(); });
        t.addEventListener('ping', () => order.push('never'));
        t.addEventListener('ping', { handleEvent: () => order.push('obj') });
        const r1 = t.dispatchEvent(new Event('ping'));
        const r2 = t.dispatchEvent(new Event('ping'));
        const cancel = new EventTarget();
        cancel.addEventListener('x', (e) => e.preventDefault());
        const notCancelable = cancel.dispatchEvent(new Event('x'));
        const cancelable = cancel.dispatchEvent(new Event('x', { cancelable: true }));
        const ctl = new AbortController();
        const removed = new EventTarget();
        removed.addEventListener('y', () => order.push('removed by signal'), { signal: ctl.signal });
        ctl.abort();
        removed.dispatchEvent(new Event('y'));
        const ce = new CustomEvent('c', { detail: { a: 1 } });
        return [before, seen, ac.signal.reason.name, thrown, custom.reason, any.aborted, any.reason,
                illegal, order, r1, r2, notCancelable, cancelable, ce.detail,
                Object.prototype.toString.call(ac.signal), new DOMException('m', 'AbortError').code];
    "#)
    .await;
    assert_eq!(
        r,
        json!([
            [false, null],
            [["listener", "abort", true], "onabort"],
            "AbortError",
            ["AbortError", "This operation was aborted"],
            "why",
            true,
            "why",
            "TypeError",
            ["once", "a", "a"],
            true,
            true,
            true,
            false,
            {"a": 1},
            "[object AbortSignal]",
            20
        ])
    );
}

#[tokio::test]
async fn console_extras_log_what_node_logs() {
    let o = run_with(
        &local_catalog(),
        r#"
        console.group('outer');
        console.log('inside');
        console.group();
        console.info('deeper');
        console.groupEnd();
        console.groupEnd();
        console.groupEnd();
        console.count(); console.count(); console.count('x'); console.countReset(); console.count();
        console.assert(true, 'never');
        console.assert(false, 'broken', 1);
        console.assert(false);
        console.dir({ a: 1 });
        console.time('t'); console.timeEnd('t'); console.timeEnd('missing');
        console.table([{ a: 1, b: 'x' }, { a: 2 }]);
        "#,
        Limits::default(),
    )
    .await;
    assert!(o.success, "{o:?}");
    let lines: Vec<(String, String)> = o
        .logs
        .iter()
        .map(|l| (l.level.clone(), l.message.clone()))
        .collect();
    let l = |level: &str, m: &str| (level.to_string(), m.to_string());
    assert_eq!(
        lines[0..10].to_vec(),
        vec![
            l("log", "outer"),
            l("log", "  inside"),
            l("info", "    deeper"),
            l("info", "default: 1"),
            l("info", "default: 2"),
            l("info", "x: 1"),
            l("info", "default: 1"),
            l("error", "Assertion failed: broken 1"),
            l("error", "Assertion failed"),
            l("log", "{ a: 1 }"),
        ]
    );
    assert_eq!(lines[10].0, "info");
    assert!(
        lines[10].1.starts_with("t: ") && lines[10].1.ends_with("ms"),
        "{lines:?}"
    );
    assert_eq!(lines[11], l("warn", "Timer 'missing' does not exist"));
    assert_eq!(
        lines[12].1,
        [
            "┌─────────┬───┬─────┐",
            "│ (index) │ a │ b   │",
            "├─────────┼───┼─────┤",
            "│ 0       │ 1 │ 'x' │",
            "│ 1       │ 2 │     │",
            "└─────────┴───┴─────┘",
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn subtle_digest_and_fetch_pointing_to_tools() {
    let r = ok(r#"
        const hex = (b) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');
        const data = new TextEncoder().encode('abc');
        const out = [];
        for (const alg of ['SHA-1', 'sha-256', { name: 'SHA-384' }, 'SHA-512']) {
          const d = await crypto.subtle.digest(alg, data);
          out.push([d instanceof ArrayBuffer, hex(d).slice(0, 16), d.byteLength]);
        }
        let md5;
        try { await crypto.subtle.digest('MD5', data); } catch (e) { md5 = e.name; }
        let f;
        try { await fetch('https://example.com'); } catch (e) { f = [e.name, e.message]; }
        return [out, md5, f];
    "#)
    .await;
    assert_eq!(
        r,
        json!([
            [[true, "a9993e364706816a", 20], [true, "ba7816bf8f01cfea", 32],
             [true, "cb00753f45a35e8b", 48], [true, "ddaf35a193617aba", 64]],
            "NotSupportedError",
            ["TypeError", "fetch is not available: the sandbox has no network. Reach the outside world through a tool, mcp.<server>.<tool>(args); list them with Object.keys(mcp) and Object.keys(mcp.<server>)"]
        ])
    );
}
