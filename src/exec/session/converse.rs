//! Step 3: the conversation with a ready runner: `execute`, then its frames until the result.

use super::*;

/// What to do with a frame before decoding it.
enum Screened {
    Decode,
    /// An `rpc_call` whose frame alone is over its server's argument limit: refused without
    /// building its arguments.
    OversizedCall {
        id: u64,
        server: String,
        tool: String,
    },
}

/// Frames up to this size are decoded at once; larger ones are screened first.
const SCREEN_ABOVE: usize = 64 * 1024;

/// The fields of a frame that decide whether to decode the rest; everything else is skipped
/// without being built.
#[derive(serde::Deserialize)]
struct FrameHead {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    success: Option<bool>,
}

/// Room for everything in an `rpc_call` frame but its arguments.
const CALL_FRAME_OVERHEAD: u64 = 1024;

impl Run {
    pub(super) async fn converse(
        &mut self,
        catalog: &Catalog,
        req: &ExecRequest,
        frames: &mut FramedRead<tokio::net::unix::OwnedReadHalf, LengthDelimitedCodec>,
        tx: &mut Outbox,
        child: &mut crate::exec::runner_process::RunnerProcess,
        max_frame: usize,
    ) -> Result<(), ExecError> {
        // 2. execute
        let exec = HostMessage::Execute {
            code: req.code.clone(),
            tools: catalog.tool_refs(),
            unavailable: catalog.unavailable_servers(),
            context: req.context.clone(),
            limits: self.limits.runner_limits(),
            language: req.language,
            determinism: self.recorder.as_ref().map(|r| {
                r.set_tools(
                    catalog
                        .tool_refs()
                        .iter()
                        .map(|t| format!("{}:{}", t.server, t.name))
                        .collect(),
                );
                r.determinism()
            }),
        };
        let mut buf = Vec::new();
        encode_frame(&exec, max_frame, &mut buf).map_err(|e| {
            ExecError::new(
                ErrorCode::LimitExceeded,
                format!("the script and its context do not fit in one frame: {e}"),
            )
        })?;
        tx.send(buf);

        // 3. calls, logs and the result
        let mut running: FuturesUnordered<CallFuture> = FuturesUnordered::new();
        // One timer for the whole conversation (not one registered and dropped per frame).
        let wall_clock = tokio::time::sleep_until(self.deadline);
        tokio::pin!(wall_clock);
        // The runner's timers: armed by its latest `sleep` frame (each replaces the one before),
        // never later than the wall clock, which ends the execution first.
        let wake = tokio::time::sleep_until(self.deadline);
        tokio::pin!(wake);
        let mut wake_armed = false;
        loop {
            tokio::select! {
                biased;
                _ = &mut wall_clock => {
                    // Nothing the host was doing for the script (no call, no timer): the script
                    // was computing the whole time, not waiting on a promise.
                    if running.is_empty() && self.queue.is_empty() && !wake_armed {
                        return Err(self.busy_timeout_error());
                    }
                    return Err(self.timeout_error(""));
                }
                _ = &mut wake, if wake_armed => {
                    wake_armed = false;
                    let mut buf = Vec::new();
                    encode_frame(&HostMessage::Wake, max_frame, &mut buf)
                        .map_err(|e| protocol(e.to_string()))?;
                    tx.send(buf);
                }
                Some((id, result)) = running.next(), if !running.is_empty() => {
                    self.finish_call(id, result, tx, max_frame);
                    if tx.queued_bytes() > budget::OUTBOX_BYTES {
                        return Err(ExecError::new(
                            ErrorCode::LimitExceeded,
                            format!(
                                "{} bytes of tool results wait for the script to read them; the limit is {} bytes of unread results, so the runner was killed. Await large calls a few at a time",
                                tx.queued_bytes(),
                                budget::OUTBOX_BYTES
                            ),
                        ));
                    }
                    while running.len() < self.limits.max_concurrent_calls as usize {
                        let Some(q) = self.queue.pop_front() else { break };
                        running.push(self.start_call(catalog, q));
                    }
                }
                // Back-pressure: no new frames while the open calls hold their argument budget.
                frame = frames.next(), if self.args_in_flight < budget::ARGS_IN_FLIGHT_BYTES => {
                    let payload = match frame {
                        None => {
                            return Err(crashed(child, "while running the script").await);
                        }
                        Some(Err(e)) => {
                            return Err(frame_error(child, e, "while running the script").await)
                        }
                        Some(Ok(p)) => p,
                    };
                    // A large frame is screened before it is decoded: decoded JSON can take many
                    // times its size (`[0,0,…]`), so what is over a budget is never built.
                    let mut oversized = None;
                    let msg = match self.screen(catalog, &payload)? {
                        Screened::Decode => super::decode::decode_runner_frame(&payload)
                            .map_err(|e| protocol(e.to_string()))?,
                        Screened::OversizedCall { id, server, tool } => {
                            oversized = Some(payload.len() as u64);
                            RunnerMessage::RpcCall { id, server, tool, args: Value::Null }
                        }
                    };
                    match msg {
                        RunnerMessage::Log { level, message } => self.log(level.as_str(), message),
                        RunnerMessage::Sleep { ms } => {
                            let at = tokio::time::Instant::now()
                                .checked_add(Duration::from_millis(ms))
                                .map_or(self.deadline, |at| at.min(self.deadline));
                            wake.as_mut().reset(at);
                            wake_armed = true;
                        }
                        RunnerMessage::RpcCall { id, server, tool, args } => {
                            // Before the names are copied anywhere (traces, suggestions).
                            budget::check_name("server", &server)
                                .and_then(|()| budget::check_name("tool", &tool))
                                .map_err(|e| protocol(format!("rpc_call {id} with {e}")))?;
                            if !self.seen_ids.insert(id) {
                                return Err(protocol(format!("call id {id} was used twice")));
                            }
                            self.calls += 1;
                            if self.calls > self.limits.max_calls {
                                return Err(protocol(format!(
                                    "the runner made more than {} calls; it should have refused them",
                                    self.limits.max_calls
                                )));
                            }
                            if let Some(rec) = &self.recorder {
                                rec.on_call(id, &server, &tool, &args, self.placeholders.as_deref())?;
                            }
                            let q = Queued {
                                id,
                                server,
                                tool,
                                args,
                                oversized,
                                ask: None,
                            };
                            if let Some(fut) = self.admit(catalog, q, tx, max_frame) {
                                running.push(fut);
                            }
                        }
                        RunnerMessage::Clock { values, dropped } => match &self.recorder {
                            Some(rec) => rec.on_clock(values, dropped).map_err(protocol)?,
                            None => {
                                return Err(protocol(
                                    "a clock frame in an execution that is neither recorded nor replayed".into(),
                                ))
                            }
                        },
                        RunnerMessage::ExecutionComplete { success, result, error } => {
                            if payload.len() as u64 > self.limits.result_bytes {
                                self.check_result_size(result.as_ref())?;
                            }
                            self.complete(catalog, success, result, error)?;
                            self.warn_unawaited();
                            // The execution is over: nothing the runner sends or does from
                            // here on changes the outcome (the caller kills and reaps it in the
                            // background). Calls the script did not wait for are abandoned
                            // (their MCP requests are cancelled as their futures drop).
                            running.clear();
                            self.queue.clear();
                            self.receipts(&ExecError::new(
                                ErrorCode::ToolError,
                                "abandoned: the script finished before this call returned",
                            ));
                            return Ok(());
                        }
                        RunnerMessage::Ready { .. } => {
                            return Err(protocol("a second ready frame".into()));
                        }
                    }
                }
                // Last: answers wait until nothing else is ready, so those ready together go out
                // in one write (one wake-up of the runner).
                _ = tx.flush(), if tx.pending() => {}
            }
        }
    }

    pub(super) fn log(&mut self, level: &str, message: String) {
        if self.logs_truncated {
            return;
        }
        let cost = message.len() as u64 + LOG_LINE_OVERHEAD;
        if self.log_bytes + cost > self.limits.log_bytes.saturating_add(4096) {
            self.logs_truncated = true;
            self.logs.push(LogLine {
                level: "warn".into(),
                message: "[mcp-sandbox: log limit reached; later log lines were dropped]".into(),
            });
            return;
        }
        self.log_bytes += cost;
        let line = LogLine {
            level: level.to_string(),
            message,
        };
        if let Some(live) = &self.live {
            // What a client may see before the end is redacted like the outcome.
            match &self.placeholders {
                Some(p) => live.log(&LogLine {
                    level: line.level.clone(),
                    message: p.redact_text(&line.message),
                }),
                None => live.log(&line),
            }
        }
        self.logs.push(line);
    }

    /// Looks at a large frame's head (type, id, names) without building the rest.
    fn screen(&self, catalog: &Catalog, payload: &[u8]) -> Result<Screened, ExecError> {
        if payload.len() <= SCREEN_ABOVE {
            return Ok(Screened::Decode);
        }
        let head: FrameHead = decode_payload(payload).map_err(|e| protocol(e.to_string()))?;
        let len = payload.len() as u64;
        match head.kind.as_str() {
            "rpc_call" => {
                let (Some(id), Some(server), Some(tool)) = (head.id, head.server, head.tool) else {
                    return Ok(Screened::Decode); // the full decode names what is missing
                };
                budget::check_name("server", &server)
                    .and_then(|()| budget::check_name("tool", &tool))
                    .map_err(|e| protocol(format!("rpc_call {id} with {e}")))?;
                let max_args = catalog
                    .max_arg_bytes(&server)
                    .unwrap_or(self.limits.max_arg_bytes);
                if len > max_args.saturating_add(CALL_FRAME_OVERHEAD) {
                    return Ok(Screened::OversizedCall { id, server, tool });
                }
                Ok(Screened::Decode)
            }
            "execution_complete" if head.success == Some(true) => {
                if len > self.limits.result_bytes.saturating_add(CALL_FRAME_OVERHEAD) {
                    return Err(ExecError::new(
                        ErrorCode::LimitExceeded,
                        format!(
                            "the result is about {len} bytes; the result limit is {} bytes (checked by the host; the runner was killed). Return less data",
                            self.limits.result_bytes
                        ),
                    ));
                }
                Ok(Screened::Decode)
            }
            _ => Ok(Screened::Decode),
        }
    }

    /// The host's own check of the result size (the runner is not trusted to have made it).
    fn check_result_size(&self, result: Option<&Value>) -> Result<(), ExecError> {
        let n = result.map(budget::json_len).unwrap_or(0);
        if n > self.limits.result_bytes {
            return Err(ExecError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the result is {n} bytes; the result limit is {} bytes (checked by the host; the runner was killed). Return less data",
                    self.limits.result_bytes
                ),
            ));
        }
        Ok(())
    }
}
