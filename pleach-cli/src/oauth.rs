//! `pleach mcp login URL` and `pleach mcp logout URL`: a person signs in to an OAuth-protected MCP
//! server once; the tokens are kept per server in the user's config folder, where every later
//! `--mcp URL` finds (and refreshes) them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use pleach_mcp::remote::{McpRemote, OAuth};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::usage::{Outcome, UsageError};

/// What `pleach mcp login` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The server's Streamable HTTP URL.
    url: String,
    /// A client ID the authorization server knows beforehand (else pleach registers itself).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// A scope to ask for (repeatable; default: the server's challenge or metadata says).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
}

/// What `pleach mcp logout` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct LogoutArgs {
    /// The server's Streamable HTTP URL.
    url: String,
}

/// `pleach mcp logout URL`: removes the server's token file.
pub(crate) fn logout(args: &LogoutArgs) -> Outcome {
    let path = token_path(&args.url)?;
    match std::fs::remove_file(&path) {
        Ok(()) => eprintln!("signed out of {}: {} removed", args.url, path.display()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("no tokens kept for {}", args.url);
        }
        Err(error) => {
            return Err(UsageError(format!(
                "cannot remove {}: {error}",
                path.display()
            )));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `pleach mcp login URL`: signs in and keeps the tokens.
pub(crate) async fn login(args: LoginArgs) -> Outcome {
    let path = token_path(&args.url)?;
    // A login is a new sign-in, whatever was kept before.
    if let Err(error) = std::fs::remove_file(&path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        return Err(UsageError(format!(
            "cannot remove {}: {error}",
            path.display()
        )));
    }
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|error| UsageError(format!("cannot listen on a loopback port: {error}")))?;
    let port = listener
        .local_addr()
        .map_err(|error| UsageError(error.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let listener = Arc::new(listener);
    let redirect = redirect_uri.clone();
    let mut oauth = OAuth::new()
        .token_file(&path)
        .authorize(redirect_uri, move |url: String| {
            let listener = Arc::clone(&listener);
            let redirect = redirect.clone();
            async move { wait_for_redirect(&listener, &url, &redirect).await }
        });
    if let Some(client_id) = args.client_id {
        oauth = oauth.client_id(client_id);
    }
    if !args.scopes.is_empty() {
        oauth = oauth.scopes(args.scopes);
    }
    let server = McpRemote::http(&args.url)
        .oauth(oauth)
        .connect()
        .await
        .map_err(|error| UsageError(error.to_string()))?;
    eprintln!(
        "signed in to {}: {} tools; tokens kept in {}",
        args.url,
        server.tools().len(),
        path.display()
    );
    server.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Shows the authorization URL and waits for the browser's redirect to the loopback listener,
/// or for a redirected URL or a code pasted on stdin.
async fn wait_for_redirect(
    listener: &TcpListener,
    url: &str,
    redirect_uri: &str,
) -> Result<String, String> {
    eprintln!("Open this URL in a browser to sign in:\n\n  {url}\n");
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        open_browser(url);
    }
    eprintln!(
        "Waiting for the browser at {redirect_uri} (on another machine, over SSH: paste the URL \
         the browser was sent to, or its `code`, and press Enter)"
    );
    let state = reqwest::Url::parse(url).ok().and_then(|url| {
        url.query_pairs()
            .find(|(key, _)| key == "state")
            .map(|(_, value)| value.into_owned())
    });
    tokio::select! {
        redirected = accept_redirect(listener, redirect_uri) => redirected,
        pasted = read_pasted(redirect_uri, state.as_deref()) => pasted,
    }
}

/// The first request to the redirect URI's path, answered with a page saying the sign-in is
/// done; other requests (a favicon) get 404.
async fn accept_redirect(listener: &TcpListener, redirect_uri: &str) -> Result<String, String> {
    let path = reqwest::Url::parse(redirect_uri)
        .map(|url| url.path().to_owned())
        .map_err(|error| error.to_string())?;
    loop {
        let (mut socket, _) = listener.accept().await.map_err(|error| error.to_string())?;
        let mut head = Vec::new();
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => head.extend_from_slice(&buffer[..read]),
            }
        }
        let head = String::from_utf8_lossy(&head);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_default()
            .to_owned();
        if target.split('?').next() == Some(path.as_str()) {
            let page = "<!doctype html><title>pleach</title><p>Signed in: you can close this tab.";
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
            let _ = socket.write_all(answer.as_bytes()).await;
            let base = redirect_uri.split('?').next().unwrap_or(redirect_uri);
            let origin = base.strip_suffix(path.as_str()).unwrap_or(base);
            return Ok(format!("{origin}{target}"));
        }
        let _ = socket
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }
}

/// A line of stdin: the URL the browser was sent to, or just its code (the state is the
/// authorization URL's own). Stdin closed: waits for the browser alone.
async fn read_pasted(redirect_uri: &str, state: Option<&str>) -> Result<String, String> {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let Ok(Some(line)) = lines.next_line().await else {
            return std::future::pending().await;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("http://") || line.starts_with("https://") {
            return Ok(line.to_owned());
        }
        let mut url = reqwest::Url::parse(redirect_uri).map_err(|error| error.to_string())?;
        url.query_pairs_mut().append_pair("code", line);
        if let Some(state) = state {
            url.query_pairs_mut().append_pair("state", state);
        }
        return Ok(url.into());
    }
}

/// Asks the desktop to open `url`; nothing happens where there is none (the URL is printed).
fn open_browser(url: &str) {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut command = std::process::Command::new("cmd");
        command.args(["/C", "start", ""]);
        command
    } else {
        std::process::Command::new("xdg-open")
    };
    let _ = command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Where the tokens of the server at `url` are kept: `<config>/pleach/mcp-tokens/<server>.json`,
/// `<config>` being `$XDG_CONFIG_HOME` when set, else the platform's (`~/.config`,
/// `~/Library/Application Support`, `%APPDATA%`).
pub(crate) fn token_path(url: &str) -> Result<PathBuf, UsageError> {
    server_path("mcp-tokens", "tokens", url)
}

/// Where the pinned tool definitions of the server at `url` are kept (its lock file):
/// `<config>/pleach/mcp-pins/<server>.json`, named as the tokens are.
pub(crate) fn pin_path(url: &str) -> Result<PathBuf, UsageError> {
    server_path("mcp-pins", "pinned definitions", url)
}

/// `<config>/pleach/<folder>/<server>.json` for the server at `url`, kept for `what`.
fn server_path(folder: &str, what: &str, url: &str) -> Result<PathBuf, UsageError> {
    let parsed = reqwest::Url::parse(url)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.host_str().is_some())
        .ok_or_else(|| UsageError(format!("`{url}` is not an http:// or https:// URL")))?;
    let dir = config_dir().ok_or_else(|| {
        UsageError(format!(
            "no config folder to keep {what} in: set XDG_CONFIG_HOME or HOME"
        ))
    })?;
    Ok(dir
        .join("pleach")
        .join(folder)
        .join(server_file_name(&parsed)))
}

/// One file name per server: scheme, host, port and path, each character outside
/// `[A-Za-z0-9.-]` as `_`.
fn server_file_name(url: &reqwest::Url) -> String {
    let server = format!(
        "{}_{}_{}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or_default(),
        url.path().trim_end_matches('/')
    );
    let mut name: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.push_str(".json");
    name
}

fn config_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    if let Some(dir) = absolute("XDG_CONFIG_HOME") {
        return Some(dir);
    }
    if cfg!(windows) {
        return absolute("APPDATA");
    }
    let home = absolute("HOME")?;
    Some(if cfg!(target_os = "macos") {
        home.join("Library").join("Application Support")
    } else {
        home.join(".config")
    })
}

#[cfg(test)]
mod tests {
    use super::server_file_name;

    #[test]
    fn each_server_has_its_own_file_name() {
        let name = |url: &str| server_file_name(&reqwest::Url::parse(url).unwrap());
        assert_eq!(
            name("https://mcp.example.com/mcp"),
            "https_mcp.example.com_443_mcp.json"
        );
        assert_eq!(
            name("https://mcp.example.com:443/mcp/"),
            "https_mcp.example.com_443_mcp.json"
        );
        assert_eq!(
            name("http://127.0.0.1:8080/a/mcp?x=1"),
            "http_127.0.0.1_8080_a_mcp.json"
        );
        assert_ne!(name("https://a.example/mcp"), name("https://b.example/mcp"));
        assert!(!name("https://x.example/../../etc").contains('/'));
    }
}
