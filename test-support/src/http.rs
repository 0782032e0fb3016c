//! [`LoopbackServer`]: a loopback HTTP/1.1 server for tests. Each connection carries one request
//! and gets one [`Reply`], chosen by a function of the request and of its place in the order the
//! connections came; every request is recorded. The server and its open connections stop when it
//! is dropped.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// The most of a request body the server reads.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions?x=1`.
    pub target: String,
    /// Header names lowercase, in order.
    pub headers: Vec<(String, String)>,
    /// The body (`content-length` bytes).
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// When the body is not JSON: a test's request that should be.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "the request body is not JSON ({err}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// What the server does with a request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// These bytes, then the connection closes.
    Raw(Vec<u8>),
    /// A 200 `text/event-stream` with this body, written in pieces of `chunk` bytes, each
    /// flushed; with `cut`, only that many bytes are written before the connection closes (the
    /// length said more).
    Sse {
        /// The whole body.
        body: Vec<u8>,
        /// Bytes per write.
        chunk: usize,
        /// How many bytes are written, if fewer than the body.
        cut: Option<usize>,
    },
    /// Nothing, ever (until the server is dropped).
    Stall,
    /// These bytes, then nothing more, the connection held open (a response whose length said
    /// more, from a server that went quiet).
    Hold(Vec<u8>),
    /// A 200 whose body goes on until the client hangs up (64 MiB at most).
    Endless,
    /// These bytes (a whole response that offers keep-alive), then the connection held open
    /// until the client sends more, and closed without a word: llama.cpp's `llama-server` after
    /// a streamed response.
    ClosedOnReuse(Vec<u8>),
    /// The connection closed without a word.
    Close,
}

impl Reply {
    /// A response with `status`, `headers` and `body`, its length given.
    pub fn with(status: u16, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Reply {
        let body = body.as_ref();
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n",
            reason(status),
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
    pub fn ok(content_type: &str, body: impl AsRef<[u8]>) -> Reply {
        Reply::with(200, &[("content-type", content_type)], body)
    }

    /// `status` with a JSON `body`.
    pub fn json(status: u16, body: impl AsRef<[u8]>) -> Reply {
        Reply::with(status, &[("content-type", "application/json")], body)
    }

    /// A redirect with `status` to `location`.
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::with(status, &[("location", location)], "")
    }

    /// A 200 `text/event-stream` of `body`, written in pieces of 7 bytes (so a client reads it
    /// split anywhere).
    pub fn sse(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Sse {
            body: body.into(),
            chunk: 7,
            cut: None,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

type Respond = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

/// A server on `127.0.0.1`, on a free port, stopped (with its connections) when dropped.
pub struct LoopbackServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl LoopbackServer {
    /// Starts a server that answers the `n`th connection (from 0, in the order they came) with
    /// `respond(request, n)`. Must be called within a Tokio runtime.
    ///
    /// # Panics
    ///
    /// When loopback cannot be bound.
    pub async fn start(
        respond: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> LoopbackServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|err| panic!("cannot listen on loopback: {err}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|err| panic!("no local address: {err}"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let respond: Arc<Respond> = Arc::new(respond);
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            // Dropped with the task: aborting the server aborts its connections too.
            let mut connections = JoinSet::new();
            for n in 0.. {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                connections.spawn(serve(stream, n, respond.clone(), recorded.clone()));
            }
        });
        LoopbackServer {
            addr,
            requests,
            task,
        }
    }

    /// Starts a server that answers its connections with `replies`, one each in order; a
    /// connection past the last is closed without a word.
    pub async fn replying(replies: Vec<Reply>) -> LoopbackServer {
        LoopbackServer::start(move |_, n| replies.get(n).cloned().unwrap_or(Reply::Close)).await
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests so far, in the order they were read.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    stream: TcpStream,
    n: usize,
    respond: Arc<Respond>,
    requests: Arc<Mutex<Vec<Recorded>>>,
) {
    let mut stream = BufReader::new(stream);
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = respond(&request, n);
    requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request);
    let stream = stream.get_mut();
    match reply {
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Reply::Sse { body, chunk, cut } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let sent = &body[..cut.unwrap_or(body.len()).min(body.len())];
            for piece in sent.chunks(chunk.max(1)) {
                if stream.write_all(piece).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
        }
        Reply::Stall => std::future::pending().await,
        Reply::Hold(bytes) => {
            let _ = stream.write_all(&bytes).await;
            std::future::pending::<()>().await;
        }
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
        Reply::ClosedOnReuse(bytes) => {
            if stream.write_all(&bytes).await.is_ok() {
                let mut next = [0; 1];
                let _ = stream.read(&mut next).await;
            }
        }
        Reply::Close => {}
    }
    let _ = stream.shutdown().await;
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
    let mut body = vec![0; length.min(MAX_BODY)];
    stream.read_exact(&mut body).await.ok()?;
    Some(Recorded {
        method,
        target,
        headers,
        body,
    })
}
