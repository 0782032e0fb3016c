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
    ExporterBuildError, MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
    WithTonicConfig,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::usage::UsageError;

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
    let spans = http_config(
        SpanExporter::builder().with_http(),
        protocol,
        &client,
        endpoint,
        "traces",
    );
    let metrics = http_config(
        MetricExporter::builder().with_http(),
        protocol,
        &client,
        endpoint,
        "metrics",
    );
    Ok((
        spans.build().map_err(|error| failed(&error))?,
        metrics.build().map_err(|error| failed(&error))?,
    ))
}

/// One signal's HTTP exporter builder set up: the protocol, the client, and `BASE/v1/PATH`
/// when `--otlp` gave a base (else the standard variables decide).
fn http_config<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    protocol: Protocol,
    client: &reqwest::blocking::Client,
    base: Option<&str>,
    path: &str,
) -> B {
    let builder = builder
        .with_protocol(protocol)
        .with_http_client(client.clone());
    match base {
        Some(base) => builder.with_endpoint(format!("{}/v1/{path}", base.trim_end_matches('/'))),
        None => builder,
    }
}

/// One signal's gRPC exporter builder set up: its endpoint (`--otlp`'s URL, else the signal's
/// variable, else the general one; none leaves the exporter's default), with TLS and the
/// system's roots when that is `https://`.
fn grpc_config<B: WithExportConfig + WithTonicConfig>(
    builder: B,
    endpoint: Option<&str>,
    signal_variable: &str,
) -> B {
    let from_env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let url = endpoint
        .map(str::to_owned)
        .or_else(|| from_env(signal_variable))
        .or_else(|| from_env("OTEL_EXPORTER_OTLP_ENDPOINT"));
    match url {
        Some(url) if url.starts_with("https://") => builder
            .with_tls_config(ClientTlsConfig::new().with_native_roots())
            .with_endpoint(url),
        Some(url) => builder.with_endpoint(url),
        None => builder,
    }
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
    let (spans, metrics) = {
        let _entered = runtime.enter();
        let spans = grpc_config(
            SpanExporter::builder().with_tonic(),
            endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        );
        let metrics = grpc_config(
            MetricExporter::builder().with_tonic(),
            endpoint,
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        );
        (
            spans.build().map_err(|error| failed(&error))?,
            metrics.build().map_err(|error| failed(&error))?,
        )
    };
    Ok((spans, metrics, runtime))
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
