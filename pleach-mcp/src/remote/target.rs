//! Where an MCP server is: a command line whose process speaks MCP on stdin and stdout, or a
//! Streamable HTTP URL with its credentials.

use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;

use rmcp::transport::TokioChildProcess;

/// How to reach a server.
#[derive(Clone)]
pub(super) enum Target {
    Stdio(StdioCommand),
    #[cfg(feature = "http")]
    Http(HttpTarget),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Stdio(command) => write!(f, "`{}`", command.line()),
            #[cfg(feature = "http")]
            Target::Http(http) => f.write_str(&http.url),
        }
    }
}

/// Where requests to a server travel, as OpenTelemetry's network attributes name it.
#[derive(Clone, Debug, Default)]
pub(super) struct Network {
    /// `pipe` for a child process's stdin and stdout, `tcp` for HTTP.
    pub(super) transport: &'static str,
    /// `http` over Streamable HTTP.
    pub(super) protocol: Option<&'static str>,
    /// The server's host, over HTTP.
    pub(super) address: Option<String>,
    /// The server's port (the scheme's own when the URL has none), over HTTP.
    pub(super) port: Option<u16>,
}

impl Target {
    /// The network attributes of requests to this target.
    pub(super) fn network(&self) -> Network {
        match self {
            Target::Stdio(_) => Network {
                transport: "pipe",
                ..Network::default()
            },
            #[cfg(feature = "http")]
            Target::Http(http) => {
                let url = reqwest::Url::parse(&http.url).ok();
                Network {
                    transport: "tcp",
                    protocol: Some("http"),
                    address: url
                        .as_ref()
                        .and_then(|url| url.host_str().map(str::to_owned)),
                    port: url.as_ref().and_then(reqwest::Url::port_or_known_default),
                }
            }
        }
    }
}

/// A server started as a child process.
#[derive(Clone, Debug)]
pub(super) struct StdioCommand {
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
    pub(super) dir: Option<PathBuf>,
}

impl StdioCommand {
    /// The command line, for messages.
    pub(super) fn line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Starts the process: stdin and stdout are the transport, stderr is pleach's own (the
    /// server's log lines reach the operator).
    pub(super) fn spawn(&self) -> Result<TokioChildProcess, String> {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args);
        command.envs(self.env.iter().map(|(key, value)| (key, value)));
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let (process, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| format!("cannot start `{}`: {error}", self.line()))?;
        Ok(process)
    }
}

/// A server at a Streamable HTTP URL.
#[cfg(feature = "http")]
#[derive(Clone)]
pub(super) struct HttpTarget {
    pub(super) url: String,
    pub(super) token: Option<String>,
    pub(super) headers: Vec<(String, String)>,
    /// The OAuth sign-in, shared by the connections to this server.
    pub(super) oauth: Option<std::sync::Arc<super::authorized::SignIn>>,
}

#[cfg(feature = "http")]
impl HttpTarget {
    /// A transport to the URL: pleach's HTTP client set-up (rustls, no proxy from the
    /// environment, no redirects), the token and the extra headers on every request.
    pub(super) fn transport(
        &self,
    ) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
        let client = Self::client()?;
        let mut config = self.config()?;
        config.auth_header.clone_from(&self.token);
        Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
            client, config,
        ))
    }

    /// A transport to the URL whose requests carry the OAuth sign-in's token: `None` when the
    /// server has no sign-in ([`McpRemote::oauth`](super::McpRemote::oauth)).
    pub(super) fn authorized_transport(
        &self,
    ) -> Result<
        Option<rmcp::transport::StreamableHttpClientTransport<super::authorized::Authorized>>,
        String,
    > {
        let Some(sign_in) = &self.oauth else {
            return Ok(None);
        };
        let client = super::authorized::Authorized {
            http: Self::client()?,
            sign_in: std::sync::Arc::clone(sign_in),
        };
        Ok(Some(
            rmcp::transport::StreamableHttpClientTransport::with_client(client, self.config()?),
        ))
    }

    fn client() -> Result<reqwest::Client, String> {
        pleach_core::http_client::client_builder()?
            .build()
            .map_err(|error| format!("no HTTP client: {error}"))
    }

    /// The URL and the extra headers.
    fn config(
        &self,
    ) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, String>
    {
        let mut config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                self.url.as_str(),
            );
        for (name, value) in &self.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|error| format!("the header name `{name}` is not valid: {error}"))?;
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|error| {
                format!("the value of the header `{name}` is not valid: {error}")
            })?;
            config.custom_headers.insert(name, value);
        }
        Ok(config)
    }
}
