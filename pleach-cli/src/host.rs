//! What the host lets the tools reach (`--root`, `--allow-program`, `--timeout`, `--approve`, the
//! remote servers' flags), and the runtime over the catalog those flags configure: what `call`,
//! `replay`, `chat`, `mcp` and `worker` run their calls on.

use std::path::PathBuf;
use std::time::Duration;

use pleach_core::Runtime;
use pleach_core::safety::ApprovalRequired;

use crate::duration;
use crate::remote::RemoteArgs;
use crate::usage::UsageError;

/// What the host lets the tools reach.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct HostArgs {
    /// The folder the `fs_*` tools and `shell_exec` work under (nothing outside it).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// A program `shell_exec` may run (repeatable; needs `--root`).
    #[arg(long = "allow-program", value_name = "P", requires = "root")]
    allow_program: Vec<String>,
    /// The runtime's default timeout per call, and the shell's (`30s`, `500ms`, `2m`).
    #[arg(long, value_name = "DURATION", value_parser = duration::positive)]
    timeout: Option<Duration>,
    /// A tool whose every call waits for the user's approval (repeatable): `ApprovalRequired`.
    /// `call` and `chat` ask on the terminal, `mcp` asks the client, a `worker`'s calls wait
    /// for `pleach approve`.
    #[arg(long = "approve", value_name = "TOOL")]
    approve: Vec<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

impl HostArgs {
    /// The tools `--approve` named: each call of one waits for the user's decision.
    #[cfg(feature = "temporal")]
    pub(crate) fn approved_tools(&self) -> &[String] {
        &self.approve
    }

    /// The runtime over the catalog and the remote servers' tools, with the tools'
    /// configuration from the flags.
    pub(crate) async fn runtime(&self) -> Result<Runtime, UsageError> {
        self.runtime_builder()
            .await?
            .build()
            .map_err(|error| UsageError(format!("cannot build the runtime: {error}")))
    }

    /// The runtime's builder, configured from the flags (the remote servers connected, their
    /// tools added), for a command to add to.
    pub(crate) async fn runtime_builder(&self) -> Result<pleach_core::RuntimeBuilder, UsageError> {
        let mut builder = self.catalog_builder()?;
        for server in self.remote.connect().await? {
            builder = builder.plugin(server.plugin());
        }
        Ok(builder)
    }

    /// The catalog's part of [`runtime_builder`](HostArgs::runtime_builder).
    fn catalog_builder(&self) -> Result<pleach_core::RuntimeBuilder, UsageError> {
        // The scratchpad's notes can outlive a process (`pleach mcp --http --session-store`).
        let mut builder =
            Runtime::builder().persist_state::<pleach_tools::scratchpad::Scratchpad>();
        if let Some(timeout) = self.timeout {
            builder = builder.default_timeout(timeout);
        }
        // What reads or only computes may run again when a durable worker died mid-call.
        for name in pleach_tools::idempotent_tool_names() {
            builder = builder.idempotent(name, true);
        }
        if !self.approve.is_empty() {
            builder = builder.detector(ApprovalRequired::tools(&self.approve));
        }
        if let Some(root) = &self.root {
            let fs = pleach_tools::fs::FsConfig::new(root).map_err(|error| {
                UsageError(format!(
                    "cannot open the root `{}`: {error}",
                    root.display()
                ))
            })?;
            builder = builder.provide(fs);
            builder = builder.provide(self.shell_config(root)?);
        }
        if let Some(meter) = crate::telemetry::meter() {
            builder = builder.meter(meter);
        }
        Ok(builder)
    }

    /// `shell_exec`'s configuration: the root, the programs allowed, `--timeout` as its limit.
    fn shell_config(
        &self,
        root: &std::path::Path,
    ) -> Result<pleach_tools::shell::ShellConfig, UsageError> {
        let mut shell = pleach_tools::shell::ShellConfig::new(root).map_err(|error| {
            UsageError(format!(
                "cannot open the root `{}`: {error}",
                root.display()
            ))
        })?;
        for program in &self.allow_program {
            shell = shell
                .allow_program(program)
                .map_err(|error| UsageError(format!("cannot allow `{program}`: {error}")))?;
        }
        if let Some(timeout) = self.timeout {
            shell = shell.timeout(timeout);
        }
        Ok(shell)
    }
}

/// The catalog with the remote servers' tools and nothing else configured (`pleach list`).
impl From<RemoteArgs> for HostArgs {
    fn from(remote: RemoteArgs) -> Self {
        HostArgs {
            remote,
            ..HostArgs::default()
        }
    }
}
