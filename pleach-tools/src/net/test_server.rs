//! A loopback HTTP/1.1 server for the network tools' tests: one response a connection, chosen by
//! a function of the request, and every request recorded. Written by hand: a few dozen lines
//! beat a server framework in the dependency tree, and the tests need odd replies (a body that
//! never ends, a server that never answers) that a framework would make awkward.
// Each tool's tests use part of it; with one of the two features, the rest is unused.
#![cfg_attr(
    not(all(feature = "url-fetch", feature = "http-request")),
    allow(dead_code)
)]

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use super::NetPolicy;

/// A request as the server read it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    /// The request target, e.g. `/page?x=1`.
    pub(crate) target: String,
    /// Header names lowercase, in order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What the server does with a request.
pub(crate) enum Reply {
    /// These bytes, then the connection closes.
    Raw(Vec<u8>),
    /// Nothing, ever (until the test ends).
    Stall,
    /// A 200 whose body goes on until the client hangs up (64 MiB at most).
    Endless,
}

impl Reply {
    /// A response with `status`, `headers` and `body`, its length given.
    pub(crate) fn with(status: u16, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Reply {
        let body = body.as_ref();
        let mut head = format!(
            "HTTP/1.1 {status} Status\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        head.push_str("connection: close\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        Reply::Raw(bytes)
    }

    /// A 200 with `body` as `content_type`.
    pub(crate) fn ok(content_type: &str, body: impl AsRef<[u8]>) -> Reply {
        Reply::with(200, &[("content-type", content_type)], body)
    }

    /// A redirect with `status` to `location`.
    pub(crate) fn redirect(status: u16, location: &str) -> Reply {
        Reply::with(status, &[("location", location)], "")
    }
}

type Respond = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// A server on `127.0.0.1`, stopped (with its connections) when dropped.
pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl TestServer {
    pub(crate) async fn start(
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> TestServer {
        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(err) => panic!("cannot listen on loopback: {err}"),
        };
        let addr = match listener.local_addr() {
            Ok(addr) => addr,
            Err(err) => panic!("no local address: {err}"),
        };
        let requests = Arc::new(Mutex::new(Vec::new()));
        let respond: Arc<Respond> = Arc::new(respond);
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            // Dropped with the task: aborting the server aborts its connections too.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(serve(stream, respond.clone(), recorded.clone()));
            }
        });
        TestServer {
            addr,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The strict policy with this one server opened.
    pub(crate) fn policy(&self) -> NetPolicy {
        NetPolicy::new().dangerously_allow_socket_addr(self.addr)
    }

    /// The requests so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(stream: TcpStream, respond: Arc<Respond>, requests: Arc<Mutex<Vec<Recorded>>>) {
    let mut stream = BufReader::new(stream);
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = respond(&request);
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    let stream = stream.get_mut();
    match reply {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.shutdown().await;
        }
        Reply::Stall => std::future::pending().await,
        Reply::Endless => {
            let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
            let chunk = [b'a'; 16 * 1024];
            if stream.write_all(head).await.is_ok() {
                for _ in 0..4096 {
                    if stream.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        stream.read_line(&mut line).await.ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length.min(1024 * 1024)];
    stream.read_exact(&mut body).await.ok()?;
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}
