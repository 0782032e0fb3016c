//! `pleach-bench __mcp-http-round-trips pleach|rmcp CALLS [add|image]`: one of `mcp-http`'s
//! servers and one client on one kept-alive connection, on one current-thread runtime, for
//! counting instructions. Wall clock on a shared 2-vCPU guest moves by a fifth between runs;
//! `valgrind --tool=callgrind` counts do not, and two runs of different lengths differ only by
//! their round trips (start-up, the servers' set-up and the first call's lazy statics cancel):
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/pleach-bench __mcp-http-round-trips pleach 2000   # then 1000
//! ```
//!
//! The client is hyper's HTTP/1.1 connection alone (no pool, no TLS layer), sending the request
//! `mcp-http`'s clients send; the first answer is checked as theirs are, and every later one must
//! be the same bytes, so a server answering wrongly cannot be counted.

use std::error::Error;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

use super::{CALL, Call, IMAGE_CALL};

/// The hidden first argument that runs this instead of a subcommand.
pub(crate) const ARG: &str = "__mcp-http-round-trips";

/// Runs the round trips `args` (the arguments after [`ARG`]) ask for.
pub(crate) fn run(args: &[String]) -> Result<(), Box<dyn Error>> {
    let usage = || format!("usage: pleach-bench {ARG} pleach|rmcp CALLS [add|image]");
    let (server, calls, which) = match args {
        [server, calls] => (server, calls, Call::Add),
        [server, calls, which] => (
            server,
            calls,
            match which.as_str() {
                "add" => Call::Add,
                "image" => Call::Image,
                _ => return Err(usage().into()),
            },
        ),
        _ => return Err(usage().into()),
    };
    let calls: u32 = calls.parse().map_err(|_| usage())?;
    if !matches!(server.as_str(), "pleach" | "rmcp") {
        return Err(usage().into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let servers = super::start_servers().await?;
        let url = servers
            .iter()
            .find(|served| served.label == server.as_str())
            .map(|served| served.url.as_str())
            .ok_or_else(usage)?;
        round_trips(url, which, calls).await
    })
}

/// `calls` round trips of `which` to `url` on one connection.
async fn round_trips(url: &str, which: Call, calls: u32) -> Result<(), Box<dyn Error>> {
    let uri: hyper::Uri = url.parse()?;
    let authority = uri
        .authority()
        .ok_or_else(|| format!("no host in {url}"))?
        .clone();
    let stream = tokio::net::TcpStream::connect(authority.as_str()).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let body = match which {
        Call::Add => CALL,
        Call::Image => IMAGE_CALL,
    };
    let mut first: Option<Bytes> = None;
    for _ in 0..calls {
        let request = hyper::Request::post(uri.clone())
            .header(hyper::header::HOST, authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::from_static(body.as_bytes())))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let answer = response.into_body().collect().await?.to_bytes();
        match &first {
            Some(first) if *first == answer => {}
            Some(_) => return Err(format!("an answer unlike the first ({status})").into()),
            None => {
                if !status.is_success() {
                    return Err(format!("the first answer is {status}").into());
                }
                super::check_answer(&answer, which)?;
                first = Some(answer);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::run;
    use crate::owned_args;

    #[test]
    fn refuses_what_it_cannot_run_before_starting_anything() {
        crate::assert_refused(
            run,
            &[
                &[],
                &["pleach"],
                &["axum", "3"],
                &["pleach", "three"],
                &["rmcp", "3", "sum"],
                &["rmcp", "3", "add", "more"],
            ],
        );
    }

    #[test]
    fn round_trips_to_either_server_with_either_call() {
        for server in ["pleach", "rmcp"] {
            run(&owned_args(&[server, "3"])).expect(server);
            run(&owned_args(&[server, "2", "image"])).expect(server);
        }
    }
}
