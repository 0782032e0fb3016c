//! What every HTTP client of pleach's starts from: the model clients of the agent loop and the MCP
//! crate's (JWT key sets, remote servers over HTTP). **Not API.**

/// What every HTTP client of pleach's starts from: no proxy from the environment, no redirects
/// (a redirect would carry a credential elsewhere), no retries (the caller reports a failure and
/// the host decides), no `Referer`, pleach's user agent, and TLS by rustls with ring. `Err` says
/// why TLS is not available.
pub fn client_builder() -> Result<reqwest::ClientBuilder, String> {
    let tls = pleach_contract::tls::client_config()
        .map_err(|detail| format!("https is not available: {detail}"))?;
    Ok(reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .referer(false)
        .user_agent(concat!("pleach/", env!("CARGO_PKG_VERSION")))
        .tls_backend_preconfigured(tls))
}
