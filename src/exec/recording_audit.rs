//! What the sandbox keeps of an audited execution for `mcp-sandbox replay` (`--audit-record
//! full`): the recorder it gives the session, and the recording it puts in the record's detail
//! (so the hash chain covers it and `audit export` carries it).

use crate::exec::audit::{AuditCode, AuditRecordMode, Auditor};
use crate::exec::outcome::Outcome;
use crate::exec::recording::Recorder;
use crate::exec::session::ExecRequest;
use crate::store::audit::{AuditDetail, AuditRecord};
use std::sync::Arc;

/// What an audited execution keeps for replay: nothing, or its recorder and what it ran.
pub enum ToRecord {
    Off,
    On {
        recorder: Arc<Recorder>,
        code: String,
        language: sandbox_runner::protocol::Language,
        context: serde_json::Map<String, serde_json::Value>,
    },
}

impl ToRecord {
    /// With `--audit-record full` (and no recorder given by the caller), a recorder for `req`.
    pub fn for_request(auditor: &Auditor, req: &mut ExecRequest) -> ToRecord {
        let options = auditor.options();
        if options.record != AuditRecordMode::Full || req.record.is_some() {
            return ToRecord::Off;
        }
        let recorder = Arc::new(Recorder::record());
        req.record = Some(recorder.clone());
        ToRecord::On {
            recorder,
            // `--audit-code hash`: no copy of the code anywhere (a replay needs `--code`).
            code: match options.code {
                AuditCode::Full => req.code.clone(),
                AuditCode::Hash => String::new(),
            },
            language: req.language,
            context: req.context.clone(),
        }
    }

    /// Puts the recording of `outcome` in the detail `header` carries to the record.
    pub fn keep(&self, header: &mut AuditRecord, outcome: &Outcome) {
        if let ToRecord::On {
            recorder,
            code,
            language,
            context,
        } = self
        {
            let recording = recorder.finish(code, *language, context, outcome);
            header.detail = Some(AuditDetail {
                recording: Some(recording),
                ..Default::default()
            });
        }
    }
}
