//! A real OTLP/HTTP trace receiver for the telemetry tests: `POST /v1/traces` on 127.0.0.1:0,
//! each body decoded as an `ExportTraceServiceRequest` with the opentelemetry-proto types.

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value::Value as Any, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One received span with its resource's attributes.
#[derive(Debug, Clone)]
pub struct Received {
    pub resource: BTreeMap<String, String>,
    pub span: Span,
}

pub struct Collector {
    pub endpoint: String,
    received: Arc<Mutex<Vec<Received>>>,
    /// The `content-type` of each request.
    pub content_types: Arc<Mutex<Vec<String>>>,
}

/// An attribute value as text (ints, doubles and bools in their usual form).
pub fn text(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.as_ref().and_then(|a| a.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

pub fn attrs(kv: &[KeyValue]) -> BTreeMap<String, String> {
    kv.iter().map(|a| (a.key.clone(), text(&a.value))).collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Collector {
    pub async fn start() -> Collector {
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let content_types: Arc<Mutex<Vec<String>>> = Arc::default();
        let (sink, types) = (received.clone(), content_types.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let (sink, types) = (sink.clone(), types.clone());
                    async move {
                        let ct = headers
                            .get("content-type")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_string();
                        types.lock().unwrap().push(ct);
                        let req = ExportTraceServiceRequest::decode(body.as_ref())
                            .expect("an ExportTraceServiceRequest");
                        let mut sink = sink.lock().unwrap();
                        for rs in req.resource_spans {
                            let resource =
                                attrs(&rs.resource.map(|r| r.attributes).unwrap_or_default());
                            for ss in rs.scope_spans {
                                for span in ss.spans {
                                    sink.push(Received {
                                        resource: resource.clone(),
                                        span,
                                    });
                                }
                            }
                        }
                        (
                            [("content-type", "application/x-protobuf")],
                            ExportTraceServiceResponse::default().encode_to_vec(),
                        )
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector {
            endpoint: format!("http://{addr}"),
            received,
            content_types,
        }
    }

    /// The spans received once there are `n` (waits up to `within`; fewer on time-out).
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let end = Instant::now() + within;
        loop {
            let got = self.received.lock().unwrap().clone();
            if got.len() >= n || Instant::now() >= end {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
