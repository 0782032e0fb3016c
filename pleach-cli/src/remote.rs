//! `--mcp URL` and `--mcp-stdio "CMD ARGS"`: remote MCP servers' tools beside the catalog, for
//! `list`, `call`, `chat`, `replay` and `mcp` (a gateway).

use std::path::PathBuf;

use pleach_mcp::remote::{ClientCredentials, McpRemote, OAuth, RemoteServer};

use crate::pins::PinChoice;
use crate::token_file::read_token;
use crate::usage::UsageError;

/// The remote MCP servers whose tools join the catalog.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RemoteArgs {
    /// An MCP server over Streamable HTTP whose tools join the catalog (repeatable).
    /// `NAME=URL` names its tools `NAME__tool`.
    #[arg(long = "mcp", value_name = "[NAME=]URL")]
    urls: Vec<String>,
    /// An MCP server started as a command line, over stdio, whose tools join the catalog
    /// (repeatable; words split as a shell splits them, no variables or pipes). `NAME=CMD ARGS`
    /// names its tools `NAME__tool`.
    #[arg(long = "mcp-stdio", value_name = "[NAME=]CMD ARGS")]
    commands: Vec<String>,
    /// A bearer token for the `--mcp` servers: the file's first line that is neither blank nor
    /// a `#` comment.
    #[arg(long = "mcp-token-file", value_name = "FILE", requires = "urls")]
    mcp_token_file: Option<PathBuf>,
    /// Signs in to the `--mcp` servers that ask for OAuth as this client, with the client
    /// credentials grant (no person): with `--mcp-client-secret-file` or `--mcp-client-key-file`.
    /// Without it, the tokens of `pleach mcp login URL` are used.
    #[arg(long = "mcp-client-id", value_name = "ID", requires = "urls")]
    mcp_client_id: Option<String>,
    /// The `--mcp-client-id`'s secret: the file's first line that is neither blank nor a `#`
    /// comment.
    #[arg(
        long = "mcp-client-secret-file",
        value_name = "FILE",
        requires = "mcp_client_id",
        conflicts_with = "mcp_client_key_file"
    )]
    mcp_client_secret_file: Option<PathBuf>,
    /// The `--mcp-client-id`'s private key (PEM, RSA or EC), signing its assertions
    /// (`private_key_jwt`).
    #[arg(
        long = "mcp-client-key-file",
        value_name = "PEM",
        requires = "mcp_client_id"
    )]
    mcp_client_key_file: Option<PathBuf>,
    /// The algorithm of `--mcp-client-key-file`: RS256, RS384, RS512, PS256, PS384, PS512,
    /// ES256 or ES384.
    #[arg(
        long = "mcp-client-key-alg",
        value_name = "ALG",
        default_value = "RS256"
    )]
    mcp_client_key_alg: String,
    /// What happens to a tool definition of an `--mcp`/`--mcp-stdio` server that changed since
    /// it was pinned, or to a tool new since: `hold-back` (or `reject`: not offered, its calls
    /// refused with 1012, a warning with the diff, until `pleach mcp trust URL NAME`), `ask` (on
    /// the terminal, with the diff; held back where nobody can answer), `accept` (recorded, with
    /// the warning) or `off` (nothing pinned). An `--mcp` server's definitions are pinned in
    /// `<config>/pleach/mcp-pins/`, an `--mcp-stdio` server's for the process's life.
    #[arg(
        long = "pin-policy",
        value_name = "POLICY",
        value_enum,
        default_value_t = PinChoice::HoldBack
    )]
    pin_policy: PinChoice,
}

impl RemoteArgs {
    /// Connects to every server (in turn, in the order given) and lists its tools; the first
    /// one that fails stops the command, saying which and why.
    pub(crate) async fn connect(&self) -> Result<Vec<RemoteServer>, UsageError> {
        let token = self.mcp_token_file.as_deref().map(read_token).transpose()?;
        let mut remotes = Vec::new();
        for spec in &self.urls {
            let (prefix, url) = named(spec);
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(UsageError(format!(
                    "`--mcp {spec}`: not an http:// or https:// URL (a command line goes in \
                     `--mcp-stdio`)"
                )));
            }
            let mut remote = McpRemote::http(url).pin_file(crate::oauth::pin_path(url)?);
            if let Some(token) = &token {
                remote = remote.bearer_token(token);
            } else {
                remote = remote.oauth(self.oauth(url)?);
            }
            remotes.push(self.pin_policy.apply(with_prefix(remote, prefix)));
        }
        for spec in &self.commands {
            let (prefix, line) = named(spec);
            let remote = McpRemote::command_line(line)
                .map_err(|error| UsageError(format!("`--mcp-stdio {spec}`: {error}")))?;
            remotes.push(self.pin_policy.apply(with_prefix(remote, prefix)));
        }
        let mut servers = Vec::new();
        for remote in remotes {
            let server = remote
                .connect()
                .await
                .map_err(|error| UsageError(error.to_string()))?;
            servers.push(server);
        }
        Ok(servers)
    }
}

impl RemoteArgs {
    /// The sign-in of the server at `url`: client credentials when given, else the tokens
    /// `pleach mcp login` keeps for it.
    fn oauth(&self, url: &str) -> Result<OAuth, UsageError> {
        let mut oauth = OAuth::new().token_file(crate::oauth::token_path(url)?);
        if let Some(id) = &self.mcp_client_id {
            let credentials = if let Some(file) = &self.mcp_client_key_file {
                let pem = std::fs::read(file).map_err(|error| {
                    UsageError(format!("cannot read `{}`: {error}", file.display()))
                })?;
                ClientCredentials::private_key_jwt(id, &pem, &self.mcp_client_key_alg).map_err(
                    |error| {
                        UsageError(format!(
                            "`--mcp-client-key-file {}`: {error}",
                            file.display()
                        ))
                    },
                )?
            } else if let Some(file) = &self.mcp_client_secret_file {
                ClientCredentials::secret(id, read_token(file)?)
            } else {
                return Err(UsageError(
                    "`--mcp-client-id` needs `--mcp-client-secret-file` or `--mcp-client-key-file`"
                        .to_owned(),
                ));
            };
            oauth = oauth.client_credentials(credentials);
        }
        Ok(oauth)
    }
}

fn with_prefix(remote: McpRemote, prefix: Option<&str>) -> McpRemote {
    match prefix {
        Some(prefix) => remote.prefix(prefix),
        None => remote,
    }
}

/// `NAME=rest` split when `NAME` is a tool-name prefix (letters, digits, `_`, `-`), else the
/// whole spec.
fn named(spec: &str) -> (Option<&str>, &str) {
    if let Some((name, rest)) = spec.split_once('=')
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !rest.is_empty()
    {
        return (Some(name), rest);
    }
    (None, spec)
}

#[cfg(test)]
mod tests {
    use super::named;

    #[test]
    fn a_name_before_the_first_equals_sign_is_a_prefix() {
        assert_eq!(named("gh=https://x/mcp"), (Some("gh"), "https://x/mcp"));
        assert_eq!(named("https://x/mcp?a=b"), (None, "https://x/mcp?a=b"));
        assert_eq!(named("node server.mjs"), (None, "node server.mjs"));
        assert_eq!(
            named("files=node fs.mjs --root=/srv"),
            (Some("files"), "node fs.mjs --root=/srv")
        );
        assert_eq!(named("=x"), (None, "=x"));
    }
}
