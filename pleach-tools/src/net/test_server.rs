//! The loopback HTTP/1.1 server the network tools' tests talk to: pleach-test-support's, answering
//! each request by a function of it alone, with the strict policy opened to it.

pub(crate) use pleach_test_support::http::{Recorded, Reply};

use pleach_test_support::http::LoopbackServer;

use super::NetPolicy;

/// A server on `127.0.0.1`, stopped (with its connections) when dropped.
pub(crate) struct TestServer(LoopbackServer);

impl TestServer {
    pub(crate) async fn start(
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> TestServer {
        TestServer(LoopbackServer::start(move |request, _| respond(request)).await)
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        self.0.addr()
    }

    /// `http://127.0.0.1:<port><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        self.0.url(path)
    }

    /// The strict policy with this one server opened.
    pub(crate) fn policy(&self) -> NetPolicy {
        NetPolicy::new().dangerously_allow_socket_addr(self.0.addr())
    }

    /// The requests so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.0.requests()
    }
}
