//! MCP on stdin and stdout.
//!
//! Neither stream costs a thread hand-off per message where it can be avoided. MCP clients start a
//! server with its stdin and stdout connected to pipes (Python's and Rust's clients) or to Unix
//! sockets (Node's `child_process`, so the TypeScript SDK's client):
//!
//! - Unix sockets are read and written on Tokio's reactor through copies of fds 0 and 1
//!   ([`UnixSockets`]); the sockets are non-blocking while served and blocking again after.
//! - Pipes go through rmcp's [`stdio_pipes`](rmcp::transport::stdio_pipes), also on the reactor,
//!   through descriptors reopened with `O_NONBLOCK` so that fds 0 and 1 keep their flags.
//! - Anything else (a file, a terminal) falls back to Tokio's stdin and stdout, which run each
//!   read and write on the blocking pool.
//!
//! Responses go through a [`QueuedWriter`]: one task writes whatever was queued since its last
//! write, so a burst of responses is one `write`, not one each.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::{McpError, McpServer};
use pleach_core::runtime::Runtime;

/// Bytes a [`QueuedWriter`] holds before a write waits for the writer task: a client that stops
/// reading stdout stalls the server instead of growing its memory.
const QUEUE_LIMIT: usize = 256 * 1024;

/// Serves every tool of `runtime` over MCP on stdin and stdout until the client disconnects.
///
/// # Errors
///
/// See [`McpError`].
///
/// ```rust,no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pleach_mcp::McpError> {
/// use pleach_core::{Runtime, ToolRegistryBuilder};
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// pleach_mcp::serve_stdio(runtime).await // until the client disconnects
/// # }
/// ```
pub async fn serve_stdio(runtime: Runtime) -> Result<(), McpError> {
    serve(McpServer::new(runtime)?).await
}

/// Serves `server` on stdin and stdout until the client disconnects. A client that closes stdin
/// before its first request has disconnected too (MCP's stdio shutdown): `Ok`, as for one that
/// closes it later. Every response the server sent is written to stdout before this returns.
///
/// # Errors
///
/// The handshake fails, or the connection ends with an error.
///
/// ```rust,no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pleach_mcp::McpError> {
/// use pleach_mcp::McpServer;
/// use pleach_core::{Runtime, ToolRegistryBuilder};
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let server = McpServer::new(runtime)?.implementation("acme-tools", "2.1.0");
/// pleach_mcp::serve(server).await
/// # }
/// ```
pub async fn serve(server: McpServer) -> Result<(), McpError> {
    // Boxed: the connection's state is large (rmcp's service loop, the server), and a caller's
    // future holding it inline would be too (clippy's `large_futures`).
    Box::pin(serve_connection(server)).await
}

/// [`serve`]'s connection, unboxed.
async fn serve_connection(server: McpServer) -> Result<(), McpError> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Some(sockets) = UnixSockets::of(std::io::stdin().as_fd(), std::io::stdout().as_fd())
        {
            let UnixSockets {
                read,
                write,
                blocking_on_drop,
            } = sockets;
            let outcome = serve_with(server, read, write).await;
            drop(blocking_on_drop);
            return outcome;
        }
    }
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_with(server, stdin, stdout).await
}

/// Serves `server` reading `stdin`, with its responses queued for a task writing `stdout`.
async fn serve_with(
    server: McpServer,
    stdin: impl AsyncRead + Send + Unpin + 'static,
    stdout: impl AsyncWrite + Send + Unpin + 'static,
) -> Result<(), McpError> {
    let (responses, queue) = QueuedWriter::new();
    let writing = tokio::spawn(write_queued(queue, stdout));
    let outcome = serve_on(server, stdin, responses).await;
    // The service loop dropped its `QueuedWriter` when it closed the transport, so the writer
    // task ends once the queue is empty. A failed write (the client closed stdout) was reported
    // to the service loop, which logs it and serves on, as it does for any failed send.
    let _ = writing.await;
    outcome
}

async fn serve_on(
    server: McpServer,
    read: impl AsyncRead + Send + Unpin + 'static,
    write: impl AsyncWrite + Send + Unpin + 'static,
) -> Result<(), McpError> {
    let running = match server.serve((read, write)).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(error) => return Err(McpError::Initialize(error.to_string())),
    };
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|error| McpError::Connection(error.to_string()))
}

/// stdin and stdout when both are Unix stream sockets, as Tokio streams on copies of their
/// descriptors.
#[cfg(unix)]
struct UnixSockets {
    read: tokio::net::UnixStream,
    write: tokio::net::UnixStream,
    /// Puts both sockets back in blocking mode once the transport is done with them.
    blocking_on_drop: BlockingOnDrop,
}

#[cfg(unix)]
impl UnixSockets {
    /// The sockets behind `read` and `write` (fds 0 and 1), or `None` if either is something else
    /// (a pipe, a file, a terminal, a TCP socket). Must run inside a Tokio runtime.
    fn of(read: std::os::fd::BorrowedFd<'_>, write: std::os::fd::BorrowedFd<'_>) -> Option<Self> {
        let read = unix_stream(read)?;
        let write = unix_stream(write)?;
        // `O_NONBLOCK` belongs to the socket's open file description, which the copies share with
        // fds 0 and 1: it cannot be set on the copies alone, as rmcp's reopening does for pipes
        // (a socket cannot be reopened). The guard clears it again.
        let blocking_on_drop = BlockingOnDrop([read.try_clone().ok()?, write.try_clone().ok()?]);
        read.set_nonblocking(true).ok()?;
        write.set_nonblocking(true).ok()?;
        Some(UnixSockets {
            read: tokio::net::UnixStream::from_std(read).ok()?,
            write: tokio::net::UnixStream::from_std(write).ok()?,
            blocking_on_drop,
        })
    }
}

/// A copy of `fd` if it is a Unix socket: `getsockname` fails on anything that is not a socket,
/// and std refuses an address that is not a Unix one.
#[cfg(unix)]
fn unix_stream(fd: std::os::fd::BorrowedFd<'_>) -> Option<std::os::unix::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd.try_clone_to_owned().ok()?);
    stream.local_addr().ok()?;
    Some(stream)
}

/// Clears `O_NONBLOCK` on its sockets when dropped.
#[cfg(unix)]
struct BlockingOnDrop([std::os::unix::net::UnixStream; 2]);

#[cfg(unix)]
impl Drop for BlockingOnDrop {
    fn drop(&mut self) {
        for socket in &self.0 {
            // Nothing to do about a failure: the process is about to stop serving anyway.
            let _ = socket.set_nonblocking(false);
        }
    }
}

/// What a [`QueuedWriter`] and its writer task share.
#[derive(Debug, Default)]
struct Queue {
    /// Bytes written and not yet taken by the writer task.
    bytes: Vec<u8>,
    /// The writer task, parked on an empty queue.
    writer: Option<Waker>,
    /// A write parked on a full queue.
    sender: Option<Waker>,
    /// The `QueuedWriter` is gone or shut down: nothing more will be queued.
    closed: bool,
    /// The writer task's write failed: every later write fails with this kind.
    failed: Option<io::ErrorKind>,
}

fn lock(queue: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    // The lock is never held across a panic that could leave the queue half-changed.
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// An [`AsyncWrite`] that queues bytes for a writer task ([`write_queued`]) and never waits for
/// the output, unless [`QUEUE_LIMIT`] bytes are already queued. A flush hands the bytes over:
/// they are written in order, after everything queued before them, and all of them before the
/// writer task ends. A write after the writer task failed returns that failure's kind.
#[derive(Debug)]
struct QueuedWriter {
    queue: Arc<Mutex<Queue>>,
}

impl QueuedWriter {
    /// The writer, and the queue to give [`write_queued`].
    fn new() -> (Self, Arc<Mutex<Queue>>) {
        let queue = Arc::new(Mutex::new(Queue::default()));
        (
            QueuedWriter {
                queue: Arc::clone(&queue),
            },
            queue,
        )
    }

    fn failure(kind: io::ErrorKind) -> io::Error {
        io::Error::new(kind, "writing to stdout failed")
    }

    fn close(&self) {
        let mut queue = lock(&self.queue);
        queue.closed = true;
        let writer = queue.writer.take();
        drop(queue);
        wake(writer);
    }
}

impl AsyncWrite for QueuedWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut queue = lock(&self.queue);
        if let Some(kind) = queue.failed {
            return Poll::Ready(Err(Self::failure(kind)));
        }
        let writer = queue.writer.take();
        let poll = if queue.bytes.len() >= QUEUE_LIMIT {
            queue.sender = Some(cx.waker().clone());
            Poll::Pending
        } else {
            queue.bytes.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        };
        drop(queue);
        wake(writer);
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The writer task was woken by the write that queued the bytes.
        match lock(&self.queue).failed {
            Some(kind) => Poll::Ready(Err(Self::failure(kind))),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = self.as_mut().poll_flush(cx);
        self.close();
        flushed
    }
}

impl Drop for QueuedWriter {
    fn drop(&mut self) {
        self.close();
    }
}

/// The writer task: writes whatever `queue` holds to `out`, one `write_all` per turn, until the
/// [`QueuedWriter`] is closed and the queue is empty, or a write fails.
async fn write_queued(
    queue: Arc<Mutex<Queue>>,
    mut out: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    let mut batch = Vec::new();
    loop {
        batch.clear();
        let more = std::future::poll_fn(|cx| take_queued(&queue, &mut batch, cx)).await;
        if !more {
            return out.flush().await;
        }
        let written = match out.write_all(&batch).await {
            Ok(()) => out.flush().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            let mut shared = lock(&queue);
            shared.failed = Some(error.kind());
            let sender = shared.sender.take();
            drop(shared);
            wake(sender);
            return Err(error);
        }
    }
}

/// Moves the queued bytes into `batch` (which is empty): `Ready(true)` with bytes to write,
/// `Ready(false)` once the queue is closed and empty, `Pending` until either.
fn take_queued(queue: &Mutex<Queue>, batch: &mut Vec<u8>, cx: &mut Context<'_>) -> Poll<bool> {
    let mut queue = lock(queue);
    if !queue.bytes.is_empty() {
        // Swapping keeps both buffers' capacity: no allocation per turn once they have grown.
        std::mem::swap(&mut queue.bytes, batch);
        let sender = queue.sender.take();
        drop(queue);
        wake(sender);
        Poll::Ready(true)
    } else if queue.closed {
        Poll::Ready(false)
    } else {
        queue.writer = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[tokio::test(flavor = "current_thread")]
    async fn unix_sockets_are_served_on_the_reactor_and_left_blocking() {
        use std::io::{Read, Write};
        use std::os::fd::AsFd;
        use tokio::io::AsyncReadExt;

        let (mut client_in, server_in) = std::os::unix::net::UnixStream::pair().expect("a pair");
        let (server_out, mut client_out) = std::os::unix::net::UnixStream::pair().expect("a pair");
        let sockets = UnixSockets::of(server_in.as_fd(), server_out.as_fd()).expect("sockets");
        let UnixSockets {
            mut read,
            mut write,
            blocking_on_drop,
        } = sockets;
        client_in.write_all(b"ping\n").expect("written");
        let mut got = [0; 5];
        read.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"ping\n");
        write.write_all(b"pong\n").await.expect("written");
        let mut got = [0; 5];
        client_out.read_exact(&mut got).expect("read");
        assert_eq!(&got, b"pong\n");
        // While served, a read with nothing to read does not wait.
        let mut probe = [0; 1];
        assert_eq!(
            (&server_in).read(&mut probe).map_err(|error| error.kind()),
            Err(io::ErrorKind::WouldBlock)
        );
        drop((read, write, blocking_on_drop));
        // After, it waits again: with a receive timeout, for the whole timeout.
        let timeout = std::time::Duration::from_millis(50);
        server_in
            .set_read_timeout(Some(timeout))
            .expect("a timeout");
        let started = std::time::Instant::now();
        let waited = (&server_in).read(&mut probe);
        assert!(waited.is_err(), "nothing was sent");
        assert!(started.elapsed() >= timeout, "the read waited");
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "current_thread")]
    async fn pipes_and_files_are_not_unix_sockets() {
        use std::os::fd::AsFd;

        let (reader, writer) = std::io::pipe().expect("a pipe");
        assert!(UnixSockets::of(reader.as_fd(), writer.as_fd()).is_none());
        let file = std::fs::File::open("/dev/null").expect("/dev/null");
        let (socket, _other) = std::os::unix::net::UnixStream::pair().expect("a pair");
        assert!(UnixSockets::of(socket.as_fd(), file.as_fd()).is_none());
        assert!(UnixSockets::of(file.as_fd(), socket.as_fd()).is_none());
    }

    /// An output that records each `poll_write` it gets, and fails every write when asked to.
    #[derive(Debug, Default, Clone)]
    struct Recorder {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        fail: bool,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.fail {
                return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            self.writes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_burst_of_messages_is_one_write_in_order() {
        let out = Recorder::default();
        let (mut writer, queue) = QueuedWriter::new();
        let task = tokio::spawn(write_queued(queue, out.clone()));
        // No await lets the writer task run in between: the three are one burst.
        for line in ["{\"id\":1}\n", "{\"id\":2}\n", "{\"id\":3}\n"] {
            let mut pending = std::pin::pin!(writer.write_all(line.as_bytes()));
            let waker = Waker::noop();
            let done = pending.as_mut().poll(&mut Context::from_waker(waker));
            assert!(matches!(done, Poll::Ready(Ok(()))));
        }
        writer.flush().await.expect("nothing failed");
        drop(writer);
        task.await
            .expect("the writer task does not panic")
            .expect("the writes succeed");
        let recorded = out.writes.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(
            *recorded,
            [b"{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n".to_vec()]
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn everything_queued_is_written_before_the_task_ends() {
        let out = Recorder::default();
        let (mut writer, queue) = QueuedWriter::new();
        let task = tokio::spawn(write_queued(queue, out.clone()));
        let line = vec![b'x'; 1000];
        let mut expected = Vec::new();
        for _ in 0..1000 {
            writer.write_all(&line).await.expect("nothing failed");
            expected.extend_from_slice(&line);
            if expected.len() % 10_000 == 0 {
                tokio::task::yield_now().await; // let the writer take some of it
            }
        }
        writer.shutdown().await.expect("nothing failed");
        drop(writer);
        task.await
            .expect("the writer task does not panic")
            .expect("the writes succeed");
        let recorded = out.writes.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(
            recorded.len() > 1,
            "the writer took the bytes in several turns"
        );
        assert_eq!(recorded.concat(), expected);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_waits_for_the_writer() {
        let out = Recorder::default();
        let (mut writer, queue) = QueuedWriter::new();
        let chunk = vec![b'y'; QUEUE_LIMIT];
        writer.write_all(&chunk).await.expect("below the limit");
        // The writer task is not running yet: the next write must wait for it.
        let mut blocked = std::pin::pin!(writer.write_all(b"z"));
        let waker = Waker::noop();
        assert!(
            blocked
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_pending()
        );
        let task = tokio::spawn(write_queued(queue, out.clone()));
        blocked.await.expect("the writer made room");
        drop(writer);
        task.await
            .expect("the writer task does not panic")
            .expect("the writes succeed");
        let written = out
            .writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .concat();
        assert_eq!(written.len(), QUEUE_LIMIT + 1);
        assert_eq!(written.last(), Some(&b'z'));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_write_fails_the_writes_after_it() {
        let out = Recorder {
            fail: true,
            ..Recorder::default()
        };
        let (mut writer, queue) = QueuedWriter::new();
        let task = tokio::spawn(write_queued(queue, out));
        writer.write_all(b"{}\n").await.expect("queued");
        let failed = task.await.expect("the writer task does not panic");
        assert_eq!(
            failed.map_err(|error| error.kind()),
            Err(io::ErrorKind::BrokenPipe)
        );
        let later = writer.write_all(b"{}\n").await;
        assert_eq!(
            later.map_err(|error| error.kind()),
            Err(io::ErrorKind::BrokenPipe)
        );
    }
}
