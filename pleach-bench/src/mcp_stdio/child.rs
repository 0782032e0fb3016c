//! The server's child process: started from this binary, and its CPU time read once it exits.

use std::error::Error;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout};

use super::Server;

/// The hidden first argument that makes `pleach-bench` a server child: `pleach-bench
/// __serve-mcp-stdio pleach|rmcp`.
pub(crate) const SERVE_ARG: &str = "__serve-mcp-stdio";

/// How long a child may take to exit once its stdin is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A process's CPU time.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cpu {
    pub(super) user: Duration,
    pub(super) system: Duration,
}

/// A running server child, killed if dropped before it exits.
pub(super) struct Child {
    process: tokio::process::Child,
}

impl Child {
    pub(super) fn start(server: Server) -> Result<Self, Box<dyn Error>> {
        let process = tokio::process::Command::new(std::env::current_exe()?)
            .args([SERVE_ARG, server.name()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Child { process })
    }

    /// The child's stdout and stdin, for the client.
    pub(super) fn pipes(&mut self) -> Result<(ChildStdout, ChildStdin), Box<dyn Error>> {
        let stdout = self
            .process
            .stdout
            .take()
            .ok_or("the child's stdout is taken")?;
        let stdin = self
            .process
            .stdin
            .take()
            .ok_or("the child's stdin is taken")?;
        Ok((stdout, stdin))
    }

    /// Waits for the child to exit, reads its CPU time while it is a zombie, then reaps it; an
    /// error if it does not exit within [`EXIT_TIMEOUT`] or exits with a failure.
    pub(super) async fn exited_cpu(mut self) -> Result<Cpu, Box<dyn Error>> {
        let pid = self.process.id().ok_or("the child was already reaped")?;
        let raw_pid = i32::try_from(pid)?;
        let pid = rustix::process::Pid::from_raw(raw_pid).ok_or("the child has no pid")?;
        // `WNOWAIT`: the child stays a zombie, so `/proc/PID/stat` still holds its times.
        let exited = tokio::task::spawn_blocking(move || {
            rustix::process::waitid(
                rustix::process::WaitId::Pid(pid),
                rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
            )
        });
        match tokio::time::timeout(EXIT_TIMEOUT, exited).await {
            Ok(exited) => {
                exited??;
            }
            Err(_) => return Err("the server did not exit after its stdin was closed".into()),
        }
        let cpu = cpu_of(&std::fs::read_to_string(format!("/proc/{raw_pid}/stat"))?)?;
        let status = self.process.wait().await?;
        if !status.success() {
            return Err(format!("the server exited with {status}").into());
        }
        Ok(cpu)
    }
}

/// The user and system CPU time in the text of `/proc/PID/stat` (fields 14 and 15, in clock
/// ticks). The command name (field 2) is in parentheses and may hold spaces: fields are counted
/// from the last `)`.
fn cpu_of(stat: &str) -> Result<Cpu, Box<dyn Error>> {
    let after_name = stat
        .rfind(')')
        .map(|end| &stat[end + 1..])
        .ok_or("no `)` in /proc/PID/stat")?;
    // Field 3 (the state) is the first after the name.
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let mut ticks = || -> Result<u64, Box<dyn Error>> {
        Ok(fields
            .next()
            .ok_or("/proc/PID/stat is too short")?
            .parse()?)
    };
    let (user, system) = (ticks()?, ticks()?);
    let per_second = rustix::param::clock_ticks_per_second();
    let time = |ticks: u64| Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / per_second);
    Ok(Cpu {
        user: time(user),
        system: time(system),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_and_system_ticks_after_the_name() {
        let stat = "4242 (a (b) c) Z 1 4242 4242 0 -1 4194564 100 0 0 0 37 12 0 0 20 0 1 0 9 0 0";
        let cpu = cpu_of(stat).expect("a whole stat line");
        let tick = Duration::from_secs(1)
            / u32::try_from(rustix::param::clock_ticks_per_second())
                .expect("a few hundred ticks a second");
        assert_eq!(cpu.user, tick * 37);
        assert_eq!(cpu.system, tick * 12);
        assert!(cpu_of("4242 (x) Z 1 2").is_err());
    }
}
