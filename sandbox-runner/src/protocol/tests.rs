use super::*;

#[test]
fn frames_round_trip_with_big_endian_prefix() {
    let msg = RunnerMessage::RpcCall {
        id: 7,
        server: "fs".into(),
        tool: "read".into(),
        args: serde_json::json!({"path": "/x"}),
    };
    let mut buf = Vec::new();
    encode_frame(&msg, DEFAULT_MAX_FRAME, &mut buf).unwrap();
    let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
    assert_eq!(len, buf.len() - 4);
    let back: RunnerMessage = decode_payload(&buf[4..]).unwrap();
    assert_eq!(back, msg);
    let text = std::str::from_utf8(&buf[4..]).unwrap();
    assert!(text.starts_with(r#"{"type":"rpc_call""#), "{text}");
}

#[test]
fn oversized_frames_are_refused_on_both_sides() {
    let msg = RunnerMessage::Log {
        level: LogLevel::Info,
        message: "x".repeat(100),
    };
    let mut buf = Vec::new();
    assert!(matches!(
        encode_frame(&msg, 10, &mut buf),
        Err(FrameError::TooLarge { max: 10, .. })
    ));
    let mut wire: &[u8] = &[0xff, 0xff, 0xff, 0xff, b'{'];
    assert!(matches!(
        blocking::read_frame(&mut wire, 1024, &mut buf),
        Err(FrameError::TooLarge {
            len: 0xffff_ffff,
            ..
        })
    ));
}

#[test]
fn unknown_types_and_fields_are_rejected() {
    assert!(decode_payload::<RunnerMessage>(br#"{"type":"shell","cmd":"id"}"#).is_err());
    assert!(decode_payload::<RunnerMessage>(
        br#"{"type":"log","level":"info","message":"m","extra":1}"#
    )
    .is_err());
    let deep = "[".repeat(100_000);
    assert!(decode_payload::<RunnerMessage>(deep.as_bytes()).is_err());
}

#[test]
fn lone_surrogates_become_replacement_characters() {
    let fix = |s: &str| replace_lone_surrogates(s.to_string());
    assert_eq!(fix(r#"["a\ud800b"]"#), r#"["a\ufffdb"]"#);
    assert_eq!(fix(r#"{"\udc00":"\uD83D"}"#), r#"{"\ufffd":"\ufffd"}"#);
    // Pairs stay, an escaped backslash before "ud800" is not an escape.
    assert_eq!(fix(r#"["\ud83d\ude00"]"#), r#"["\ud83d\ude00"]"#);
    assert_eq!(fix(r#"["\\ud800"]"#), r#"["\\ud800"]"#);
    assert_eq!(
        fix(r#"["\ud800\ud800\udc00"]"#),
        r#"["\ufffd\ud800\udc00"]"#
    );
    assert_eq!(fix(r#"["x\ud800"]"#), r#"["x\ufffd"]"#);
    let v: Value = serde_json::from_str(&fix(r#"["\ud800", "é\udfff"]"#)).unwrap();
    assert_eq!(v, serde_json::json!(["\u{fffd}", "é\u{fffd}"]));
}

#[test]
fn frames_up_to_the_maximum_depth_decode_on_a_small_stack() {
    let deep = |n: usize| {
        let value = format!("{}1{}", "[".repeat(n), "]".repeat(n));
        format!(r#"{{"type":"execution_complete","success":true,"result":{value}}}"#)
    };
    assert_eq!(json_depth(br#"{"a":"[[[{","b":[1,[2]]}"#), 3);
    assert_eq!(json_depth(br#""\"[""#), 0);
    let ok = deep(MAX_VALUE_DEPTH);
    // Measured in a debug build: decoding a frame of the maximum depth needs 1-2 MiB of stack
    // (more than a tokio worker can spare), re-encoding and dropping it 256-512 KiB.
    let m = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let m: RunnerMessage = decode_payload(ok.as_bytes()).unwrap();
            let mut buf = Vec::new();
            encode_frame(&m, DEFAULT_MAX_FRAME, &mut buf).unwrap();
            drop(m);
            buf.len()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(m > 2 * MAX_VALUE_DEPTH);
    // The host's path: deep frames on their own thread, from a small stack.
    let frame = deep(MAX_VALUE_DEPTH);
    // What the host then does with the value on its own (worker) stack: re-encode it for
    // the other side and drop it. 512 KiB is a quarter of a tokio worker's stack.
    let small = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            let m = decode_from_runner(frame.as_bytes()).unwrap();
            let mut buf = Vec::new();
            encode_frame(&m, DEFAULT_MAX_FRAME, &mut buf).unwrap();
            drop(m);
            buf.len() > 2 * MAX_VALUE_DEPTH
        })
        .unwrap();
    assert!(small.join().unwrap());
    let err = decode_from_runner(deep(MAX_VALUE_DEPTH + 1).as_bytes());
    assert!(
        matches!(err, Err(FrameError::TooDeep { depth, max }) if depth == MAX_FRAME_DEPTH + 1 && max == MAX_FRAME_DEPTH),
        "{err:?}"
    );
    let mut buf = Vec::new();
    let args = format!(
        "{{\"a\":{}1{}}}",
        "[".repeat(MAX_VALUE_DEPTH),
        "]".repeat(MAX_VALUE_DEPTH)
    );
    assert!(matches!(
        raw::encode_rpc_call(1, "s", "t", &args, DEFAULT_MAX_FRAME, &mut buf),
        Err(FrameError::TooDeep {
            depth: 1001,
            max: MAX_VALUE_DEPTH
        })
    ));
}

#[test]
fn errors_are_bounded_with_a_marker() {
    let mut e = WireError::new("RUNTIME_ERROR", format!("Error: {}", "é".repeat(40_000)));
    e.stack = Some("at f\n".repeat(100_000));
    e.tool = Some("t".repeat(5000));
    e.alternatives = Some(vec!["x".into(); 50]);
    let b = e.clone().bounded();
    assert!(
        b.message.len() <= MAX_ERROR_MESSAGE_BYTES + 64,
        "{}",
        b.message.len()
    );
    assert!(b
        .message
        .ends_with(&format!("… [truncated: {} bytes in all]", e.message.len())));
    assert!(b.message.starts_with("Error: éé"));
    assert!(b.stack.as_ref().unwrap().len() <= MAX_ERROR_STACK_BYTES + 64);
    assert!(b.tool.as_ref().unwrap().len() <= MAX_ERROR_NAME_BYTES + 64);
    assert_eq!(
        b.alternatives.as_ref().unwrap().len(),
        MAX_ERROR_ALTERNATIVES
    );
    let small = WireError::new("X", "short");
    assert_eq!(small.clone().bounded(), small);
}

#[test]
fn raw_encoders_match_the_typed_messages() {
    let mut buf = Vec::new();
    raw::encode_rpc_call(9, "my \"srv\"", "t-1", r#"{"a":[1,2]}"#, 1 << 20, &mut buf).unwrap();
    let m: RunnerMessage = decode_payload(&buf[4..]).unwrap();
    assert_eq!(
        m,
        RunnerMessage::RpcCall {
            id: 9,
            server: "my \"srv\"".into(),
            tool: "t-1".into(),
            args: serde_json::json!({"a": [1, 2]})
        }
    );
    raw::encode_complete_ok("[1,null]", 1 << 20, &mut buf).unwrap();
    let m: RunnerMessage = decode_payload(&buf[4..]).unwrap();
    assert_eq!(
        m,
        RunnerMessage::ExecutionComplete {
            success: true,
            result: Some(serde_json::json!([1, null])),
            error: None
        }
    );
    assert!(raw::encode_complete_ok(&"1".repeat(100), 10, &mut buf).is_err());
    let host = HostMessage::RpcResult {
        id: 4,
        success: false,
        result: None,
        error: Some(WireError::new("TOOL_ERROR", "boom")),
    };
    encode_frame(&host, 1 << 20, &mut buf).unwrap();
    let r = raw::decode_rpc_result(&buf[4..]).unwrap();
    assert_eq!((r.id, r.success), (4, false));
    assert_eq!(r.error.unwrap().code, "TOOL_ERROR");
    assert!(raw::decode_rpc_result(br#"{"type":"execute","id":1,"success":true}"#).is_err());
    let v = serde_json::json!({"k": "v", "n": [1.5]});
    raw::encode_rpc_result_ok(12, &v, 1 << 20, &mut buf).unwrap();
    let m: HostMessage = decode_payload(&buf[4..]).unwrap();
    assert_eq!(
        m,
        HostMessage::RpcResult {
            id: 12,
            success: true,
            result: Some(v),
            error: None
        }
    );
}

#[test]
fn wake_and_sleep_frames() {
    let mut buf = Vec::new();
    encode_frame(&HostMessage::Wake, 1 << 10, &mut buf).unwrap();
    assert_eq!(&buf[4..], raw::WAKE);
    let m: RunnerMessage = decode_payload(br#"{"type":"sleep","ms":200}"#).unwrap();
    assert_eq!(m, RunnerMessage::Sleep { ms: 200 });
    assert!(decode_payload::<RunnerMessage>(br#"{"type":"sleep","ms":-1}"#).is_err());
}

/// A reader that hands out at most `chunk` bytes per `read`, counting the calls.
struct Trickle<'a> {
    data: &'a [u8],
    chunk: usize,
    reads: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.reads += 1;
        let n = self.data.len().min(self.chunk).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn frames(payloads: &[&[u8]]) -> Vec<u8> {
    let mut all = Vec::new();
    for p in payloads {
        all.extend_from_slice(&(p.len() as u32).to_be_bytes());
        all.extend_from_slice(p);
    }
    all
}

#[test]
fn frames_written_together_are_read_with_one_read() {
    let data = frames(&[b"one", b"two", b"three"]);
    let mut r = Trickle {
        data: &data,
        chunk: usize::MAX,
        reads: 0,
    };
    let mut fr = blocking::FrameReader::default();
    assert_eq!(fr.next(&mut r, 100).unwrap(), b"one");
    assert_eq!(fr.next(&mut r, 100).unwrap(), b"two");
    assert_eq!(fr.next(&mut r, 100).unwrap(), b"three");
    assert_eq!(r.reads, 1);
    assert!(matches!(fr.next(&mut r, 100), Err(FrameError::Closed)));
}

#[test]
fn frames_split_across_reads_and_bounds_hold() {
    let big = vec![7u8; 200_000];
    let data = frames(&[b"a", &big, b"z"]);
    let mut r = Trickle {
        data: &data,
        chunk: 3,
        reads: 0,
    };
    let mut fr = blocking::FrameReader::default();
    assert_eq!(fr.next(&mut r, 300_000).unwrap(), b"a");
    assert_eq!(fr.next(&mut r, 300_000).unwrap(), &big[..]);
    assert_eq!(fr.next(&mut r, 300_000).unwrap(), b"z");
    // Over the limit: refused from the prefix alone.
    let data = frames(&[&big]);
    let mut r = Trickle {
        data: &data,
        chunk: usize::MAX,
        reads: 0,
    };
    assert!(matches!(
        blocking::FrameReader::default().next(&mut r, 1000),
        Err(FrameError::TooLarge {
            len: 200_000,
            max: 1000
        })
    ));
    // EOF inside a frame is an error, not a clean close.
    let data = frames(&[b"hello"]);
    let mut r = Trickle {
        data: &data[..6],
        chunk: usize::MAX,
        reads: 0,
    };
    assert!(matches!(
        blocking::FrameReader::default().next(&mut r, 100),
        Err(FrameError::Io(_))
    ));
}
