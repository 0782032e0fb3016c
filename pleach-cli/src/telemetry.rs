//! `--otlp [URL]`: the command's spans and tool-call metrics (`docs/observability.md`) exported
//! over OTLP, flushed before the process exits.
//!
//! The protocol comes from `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default),
//! `http/json` or `grpc`. The endpoint is `URL`, else what the standard variables say
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`), else the collector's default (`http://localhost:4318`
//! over HTTP, `http://localhost:4317` over gRPC). Over HTTP, `URL` is the collector's base, as
//! `OTEL_EXPORTER_OTLP_ENDPOINT` gives it (`/v1/traces` and `/v1/metrics` are added); over gRPC
//! it is used as it is. Headers come from `OTEL_EXPORTER_OTLP_HEADERS`. The HTTP client is
//! pleach's own set-up (rustls, no proxy from the environment); gRPC runs tonic's client (rustls,
//! the system's root certificates for `https://`) on a small runtime of its own.

use std::sync::OnceLock;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{
    ExporterBuildError, MetricExporter, Protocol, SpanExporter, WithExportConfig as _,
    WithHttpConfig as _, WithTonicConfig as _,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::UsageError;

/// The exporting pipeline of one command.
pub(crate) struct Exporting {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    /// gRPC's connections run on a runtime of their own, kept until the last export is sent (the
    /// command's runtime may be single-threaded and is not driven once the command returns).
    grpc: Option<tokio::runtime::Runtime>,
}

/// The meter the runtime records its tool-call metrics on, once `--otlp` set it up.
static METER: OnceLock<Meter> = OnceLock::new();

/// The meter for the runtime, when `--otlp` is on.
pub(crate) fn meter() -> Option<Meter> {
    METER.get().cloned()
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL`, `http/protobuf` when unset.
fn protocol() -> Result<Protocol, UsageError> {
    match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref() {
        Err(_) | Ok("" | "http/protobuf") => Ok(Protocol::HttpBinary),
        Ok("http/json") => Ok(Protocol::HttpJson),
        Ok("grpc") => Ok(Protocol::Grpc),
        Ok(other) => Err(UsageError(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not an OTLP protocol (http/protobuf, \
             http/json, grpc)"
        ))),
    }
}

/// An exporter that could not be built, as the user reads it.
fn failed(error: &ExporterBuildError) -> UsageError {
    UsageError(format!("cannot export over OTLP: {error}"))
}

/// The span and metric exporters over HTTP, `protocol` being one of the HTTP encodings.
fn http_exporters(
    endpoint: Option<&str>,
    protocol: Protocol,
) -> Result<(SpanExporter, MetricExporter), UsageError> {
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
    let mut spans = SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_http_client(client.clone());
    if let Some(url) = signal("traces") {
        spans = spans.with_endpoint(url);
    }
    let mut metrics = MetricExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_http_client(client);
    if let Some(url) = signal("metrics") {
        metrics = metrics.with_endpoint(url);
    }
    Ok((
        spans.build().map_err(|error| failed(&error))?,
        metrics.build().map_err(|error| failed(&error))?,
    ))
}

/// Where one signal goes over gRPC: `endpoint`, else the signal's variable, else the general
/// one; `None` leaves the exporter's default.
fn grpc_endpoint(endpoint: Option<&str>, signal_variable: &str) -> Option<String> {
    let from_env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    endpoint
        .map(str::to_owned)
        .or_else(|| from_env(signal_variable))
        .or_else(|| from_env("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

/// TLS with the system's roots when the endpoint is `https://`.
fn grpc_tls(endpoint: Option<&str>) -> Option<ClientTlsConfig> {
    endpoint
        .filter(|url| url.starts_with("https://"))
        .map(|_| ClientTlsConfig::new().with_native_roots())
}

/// The span and metric exporters over gRPC, their connections on a runtime of their own.
fn grpc_exporters(
    endpoint: Option<&str>,
) -> Result<(SpanExporter, MetricExporter, tokio::runtime::Runtime), UsageError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("pleach-otlp")
        .enable_all()
        .build()
        .map_err(|error| UsageError(format!("cannot start OTLP's runtime: {error}")))?;
    // tonic's channel spawns its connection task when it is made: inside this runtime.
    let entered = runtime.enter();
    let traces_url = grpc_endpoint(endpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let mut spans = SpanExporter::builder().with_tonic();
    if let Some(tls) = grpc_tls(traces_url.as_deref()) {
        spans = spans.with_tls_config(tls);
    }
    if let Some(url) = traces_url {
        spans = spans.with_endpoint(url);
    }
    let metrics_url = grpc_endpoint(endpoint, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    let mut metrics = MetricExporter::builder().with_tonic();
    if let Some(tls) = grpc_tls(metrics_url.as_deref()) {
        metrics = metrics.with_tls_config(tls);
    }
    if let Some(url) = metrics_url {
        metrics = metrics.with_endpoint(url);
    }
    let exporters = (
        spans.build().map_err(|error| failed(&error))?,
        metrics.build().map_err(|error| failed(&error))?,
    );
    drop(entered);
    Ok((exporters.0, exporters.1, runtime))
}

impl Exporting {
    /// Sets up the exporter (it connects when the first spans are sent).
    pub(crate) fn start(endpoint: Option<&str>) -> Result<Exporting, UsageError> {
        let (exporter, metric_exporter, grpc) = match protocol()? {
            Protocol::Grpc => {
                let (spans, metrics, runtime) = grpc_exporters(endpoint)?;
                (spans, metrics, Some(runtime))
            }
            http => {
                let (spans, metrics) = http_exporters(endpoint, http)?;
                (spans, metrics, None)
            }
        };
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
        Ok(Exporting {
            traces,
            metrics,
            grpc,
        })
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
        if let Some(runtime) = self.grpc {
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        }
    }
}
