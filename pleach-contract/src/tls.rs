//! The TLS client configuration every HTTPS client of pleach shares (the model clients of
//! pleach-core's agent, the network tools of pleach-tools). **Not API.**

use std::sync::OnceLock;

use rustls::ClientConfig;
use rustls::ConfigBuilder;
use rustls::client::WantsClientCert;
use rustls_platform_verifier::BuilderVerifierExt;

/// rustls with ring and the operating system's trust store, built once per process and shared by
/// every HTTPS client pleach makes. A config rather than a process-wide default provider: a
/// library should not pick one for the whole program. `Err` says why TLS could not be set up.
pub fn client_config() -> Result<ClientConfig, String> {
    static CONFIG: OnceLock<Result<ClientConfig, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .and_then(BuilderVerifierExt::with_platform_verifier)
                .map(ConfigBuilder::<ClientConfig, WantsClientCert>::with_no_client_auth)
                .map_err(|err| err.to_string())
        })
        .clone()
}
