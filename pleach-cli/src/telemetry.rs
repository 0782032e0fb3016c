//! `--otlp [URL]`: the command's spans and tool-call metrics (`docs/observability.md`) exported
//! over OTLP, flushed before the process exits.
//!
//! The endpoint is `URL` (the collector's base, as `OTEL_EXPORTER_OTLP_ENDPOINT` gives it:
//! `/v1/traces` and `/v1/metrics` are added), else what the standard variables say
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`), else `http://localhost:4318`. The protocol comes from
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `http/json`), headers from
//! `OTEL_EXPORTER_OTLP_HEADERS`. The HTTP client is pleach's own set-up (rustls, no proxy from the
//! environment).

use std::sync::OnceLock;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::UsageError;

/// The exporting pipeline of one command.
pub(crate) struct Exporting {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// The meter the runtime records its tool-call metrics on, once `--otlp` set it up.
static METER: OnceLock<Meter> = OnceLock::new();

/// The meter for the runtime, when `--otlp` is on.
pub(crate) fn meter() -> Option<Meter> {
    METER.get().cloned()
}

impl Exporting {
    /// Sets up the exporter (it connects when the first spans are sent).
    pub(crate) fn start(endpoint: Option<&str>) -> Result<Exporting, UsageError> {
        let protocol = match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref() {
            Err(_) | Ok("" | "http/protobuf") => Protocol::HttpBinary,
            Ok("http/json") => Protocol::HttpJson,
            Ok("grpc") => {
                return Err(UsageError(
                    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not in this build: use http/protobuf \
                     (the default) or http/json"
                        .to_owned(),
                ));
            }
            Ok(other) => {
                return Err(UsageError(format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not an OTLP protocol (http/protobuf, \
                     http/json)"
                )));
            }
        };
        let tls = pleach_contract::tls::client_config()
            .map_err(|detail| UsageError(format!("https is not available: {detail}")))?;
        let client = reqwest::blocking::Client::builder()
            .no_proxy()
            .tls_backend_preconfigured(tls)
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|error| UsageError(format!("no HTTP client for OTLP: {error}")))?;
        let signal =
            |path: &str| endpoint.map(|base| format!("{}/v1/{path}", base.trim_end_matches('/')));
        let failed = |error: opentelemetry_otlp::ExporterBuildError| {
            UsageError(format!("cannot export over OTLP: {error}"))
        };
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_http_client(client.clone());
        if let Some(url) = signal("traces") {
            exporter = exporter.with_endpoint(url);
        }
        let exporter = exporter.build().map_err(failed)?;
        let mut metric_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_http_client(client);
        if let Some(url) = signal("metrics") {
            metric_exporter = metric_exporter.with_endpoint(url);
        }
        let metric_exporter = metric_exporter.build().map_err(failed)?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("pleach")
            .build();
        let traces = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.clone())
            .build();
        let metrics = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metric_exporter).build())
            .with_resource(resource)
            .build();
        let _ = METER.set(metrics.meter("pleach"));
        Ok(Exporting { traces, metrics })
    }

    /// The `tracing` layer that turns pleach's spans into OpenTelemetry spans.
    pub(crate) fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.traces.tracer("pleach"))
    }

    /// Sends what is left and stops: before the process exits.
    pub(crate) fn shutdown(self) {
        if let Err(error) = self.traces.shutdown() {
            eprintln!("warning: the last spans could not be exported over OTLP: {error}");
        }
        if let Err(error) = self.metrics.shutdown() {
            eprintln!("warning: the last metrics could not be exported over OTLP: {error}");
        }
    }
}
