//! The config's `sandbox.telemetry` section: where OpenTelemetry spans go. Each field overrides
//! the standard environment variable it names; with neither, traces are off (see `telemetry`).

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP base URL, like `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is appended).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Headers sent with each export, like `OTEL_EXPORTER_OTLP_HEADERS` (`${VAR}` is not
    /// expanded: put secrets in the environment variable instead).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `service.name`, like `OTEL_SERVICE_NAME` (default `mcp-sandbox`).
    #[serde(default)]
    pub service_name: Option<String>,
    /// Like `OTEL_TRACES_SAMPLER`: `always_on`, `always_off`, `traceidratio`,
    /// `parentbased_always_on` (the default), `parentbased_always_off`,
    /// `parentbased_traceidratio`.
    #[serde(default)]
    pub sampler: Option<String>,
    /// The ratio of the `*traceidratio` samplers, like `OTEL_TRACES_SAMPLER_ARG` (0..=1).
    #[serde(default)]
    pub sampler_arg: Option<f64>,
    /// Spans waiting for export at most (default 2048); past it spans are dropped and counted.
    #[serde(default)]
    pub max_queue: Option<usize>,
    /// Whether traces are exported at all (default: when an endpoint is set here or in the
    /// environment). `false` turns them off whatever the environment says.
    #[serde(default)]
    pub enabled: Option<bool>,
}

impl TelemetryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(s) = &self.sampler {
            if sampler_kind(s).is_none() {
                return Err(format!(
                    "sandbox.telemetry.sampler: unknown sampler {s:?}; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"
                ));
            }
        }
        if let Some(r) = self.sampler_arg {
            if !(0.0..=1.0).contains(&r) {
                return Err("sandbox.telemetry.sampler_arg must be between 0 and 1".into());
            }
        }
        if self.max_queue == Some(0) {
            return Err("sandbox.telemetry.max_queue must be at least 1".into());
        }
        if let Some(e) = &self.endpoint {
            let ok = url::Url::parse(e)
                .ok()
                .is_some_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                return Err(format!(
                    "sandbox.telemetry.endpoint: {e:?} is not an http(s) URL"
                ));
            }
        }
        Ok(())
    }
}

/// The samplers by their `OTEL_TRACES_SAMPLER` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplerKind {
    AlwaysOn,
    AlwaysOff,
    Ratio,
    ParentAlwaysOn,
    ParentAlwaysOff,
    ParentRatio,
}

pub fn sampler_kind(name: &str) -> Option<SamplerKind> {
    Some(match name {
        "always_on" => SamplerKind::AlwaysOn,
        "always_off" => SamplerKind::AlwaysOff,
        "traceidratio" => SamplerKind::Ratio,
        "parentbased_always_on" => SamplerKind::ParentAlwaysOn,
        "parentbased_always_off" => SamplerKind::ParentAlwaysOff,
        "parentbased_traceidratio" => SamplerKind::ParentRatio,
        _ => return None,
    })
}
