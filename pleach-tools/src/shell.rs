//! The `shell_exec` tool (opt-in, Unix): runs one program the host allows, with an argument array,
//! in a directory under the host's root, with a timeout, a clean environment and capped output.
//!
//! ```
//! use pleach_core::ToolContext;
//! use pleach_core::extensions::{Extensions, SessionState};
//! use pleach_tools::shell::{ShellConfig, shell_exec};
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let root = tempfile::tempdir().unwrap();
//! let config = ShellConfig::new(root.path()).unwrap().allow_program("echo").unwrap();
//! let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
//!
//! // Each argument reaches the program as it is: no shell reads it.
//! let out = shell_exec::definition()
//!     .call(r#"{"program": "echo", "args": ["$(whoami);", "*"]}"#, ctx.clone())
//!     .await
//!     .unwrap();
//! assert_eq!(out.value()["stdout"], "$(whoami); *\n");
//! assert_eq!(out.value()["exit_code"], 0);
//!
//! let err = shell_exec::definition()
//!     .call(r#"{"program": "rm", "args": ["-rf", "."]}"#, ctx)
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.code().as_u16(), 1001);
//! assert_eq!(err.message(), "`rm` is not an allowed program; this host allows `echo`");
//! # });
//! ```
//!
//! # What it guards, and what it does not
//!
//! - **No shell.** `program` names an allowlisted program and `args` is an array handed to it
//!   as is (`execve`), so nothing in an argument is expanded, split or run as a command. (A host
//!   that allowlists `sh`, `bash` or an interpreter gives that back: `sh -c` runs anything. So
//!   does a program that runs another named in its arguments: `env rm -rf .`, `xargs`,
//!   `find -exec`, `nice`, `timeout`, `nohup`; with no `PATH` in the environment they still find
//!   programs in `/bin` and `/usr/bin`.)
//! - **An allowlist, resolved at configuration time.** [`ShellConfig::allow_program`] takes a
//!   name, looked up once on the host's `PATH` when the config is built, or an absolute path;
//!   calls run that exact file. The child's own `PATH` is not consulted (the environment is empty
//!   unless the host adds variables), so a call cannot pick another program of the same name.
//! - **A working directory under the root**, checked with cap-std like the `fs_*` tools' paths.
//!   It is where the program starts, not a sandbox: an allowed program can open any path the
//!   host's user can (`cat /etc/passwd`). Allowlist accordingly, or run pleach in a container.
//! - **An empty environment** ([`env_clear`](tokio::process::Command::env_clear)) plus only what
//!   [`ShellConfig::env`] adds; stdin is `/dev/null`.
//! - **A process group, killed whole.** The child starts its own process group, and the group is
//!   sent `SIGKILL` when the timeout passes, when the call's signal fires (cancellation), when
//!   the call's future is dropped, and when the program exits (so nothing it left in the
//!   background outlives the call, or holds its output pipes open). Tokio's `kill_on_drop` alone
//!   kills only the direct child: its children would keep running. A process that moves itself
//!   into another group or session (`setsid`, a shell's job control) escapes this; only a cgroup
//!   or a container catches that.
//! - **Capped output.** stdout and stderr are read concurrently (a chatty child cannot fill one
//!   pipe and stall) and each is kept up to [`ShellConfig::max_output_bytes`]; the rest is read
//!   and dropped, and `stdout_truncated` / `stderr_truncated` say so.
//!
//! # Errors
//!
//! A program not allowed, a bad working directory or over-long arguments are 1001. Passing the
//! timeout is 1010 (`TimedOut`), cancellation 1011, both after the group is killed. A program that
//! runs and exits non-zero is not an error: `exit_code` and `stderr` tell the model what happened.
//! Without a [`ShellConfig`] (or with one that allows no program), the tool fails with 1008 saying
//! what to configure.
//!
//! # Safety tier
//!
//! `standard`: a call a host's detector flags as built on fabricated input goes to the user for
//! approval. Not `critical`, which would make a detector mandatory for every host that enables the
//! tool: the allowlist, the root and the timeout already bound it, and the host chooses how wide
//! the allowlist is. A host that allows programs with wide reach should gate the tool with its own
//! approvals too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Serialize;
use pleach_core::{ErrorCode, ToolContext, ToolError, unified_tool};
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::sandbox::{blocking, invalid, io_error, not_configured, quoted, relative_path};
use crate::suggest::{close_matches, one_of};

/// The most arguments a call may pass.
const MAX_ARGS: usize = 256;

/// The most bytes all arguments together may have: far under the system's `ARG_MAX`.
const MAX_ARGS_BYTES: usize = 64 * 1024;

/// How long the group, once killed, has to be reaped and close its pipes before the call returns
/// without waiting further.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// How long the pipes may stay open once the program has ended and its group is killed: what is
/// left in them is read, but a process that left the group is not waited for.
const OUTPUT_GRACE: Duration = Duration::from_millis(200);

/// The programs `shell_exec` may run, the root its working directories are under, the
/// environment, the timeout and the output cap. Provide it to the runtime
/// ([`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide) or
/// [`PleachPlugin::provide`](https://docs.rs/pleach-core/latest/pleach_core/plugin/struct.PleachPlugin.html#method.provide)); the CLI builds it from
/// `--root DIR`, `--allow-program NAME` and `--timeout DURATION`.
///
/// ```
/// use std::time::Duration;
/// use pleach_tools::shell::ShellConfig;
///
/// let root = tempfile::tempdir().unwrap();
/// let config = ShellConfig::new(root.path())?
///     .allow_program("ls")?
///     .allow_program("/bin/echo")?
///     .env("LANG", "C.UTF-8")
///     .timeout(Duration::from_secs(10))
///     .max_output_bytes(32 * 1024);
/// assert_eq!(config.allowed_programs().collect::<Vec<_>>(), ["echo", "ls"]);
/// assert!(ShellConfig::new(root.path())?.allow_program("no-such-program-here").is_err());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShellConfig {
    root: PathBuf,
    root_dir: Arc<Dir>,
    programs: BTreeMap<String, PathBuf>,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    max_output_bytes: usize,
}

impl ShellConfig {
    /// A config whose working directories are under `root` (a directory), allowing no program
    /// yet; a 30 s timeout, output kept up to 64 KiB per stream, an empty environment.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use pleach_tools::shell::ShellConfig;
    ///
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path()).unwrap();
    /// assert_eq!(config.allowed_programs().count(), 0); // calls fail until a program is allowed
    /// let err = ShellConfig::new(root.path().join("missing")).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// ```
    pub fn new(root: impl AsRef<Path>) -> io::Result<ShellConfig> {
        let root = root.as_ref();
        let context = |err: io::Error| {
            io::Error::new(
                err.kind(),
                format!("cannot use {} as the shell root: {err}", root.display()),
            )
        };
        let canonical = std::fs::canonicalize(root).map_err(context)?;
        let root_dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(context)?;
        Ok(ShellConfig {
            root: canonical,
            root_dir: Arc::new(root_dir),
            programs: BTreeMap::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(30),
            max_output_bytes: 64 * 1024,
        })
    }

    /// Allows a program: a name (`"git"`), found now on this process's `PATH`, or an absolute
    /// path (`"/usr/bin/git"`), allowed under its file name. Calls name it by that name and run
    /// the file found here, whatever their environment says. Fails if no executable file is
    /// found.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use pleach_tools::shell::ShellConfig;
    ///
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path()).unwrap().allow_program("echo").unwrap();
    /// assert_eq!(config.allowed_programs().collect::<Vec<_>>(), ["echo"]);
    ///
    /// let err = ShellConfig::new(root.path()).unwrap().allow_program("bin/echo").unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidInput); // a name, or an absolute path
    /// ```
    pub fn allow_program(mut self, program: &str) -> io::Result<ShellConfig> {
        let (name, path) = if program.contains('/') {
            let path = PathBuf::from(program);
            if !path.is_absolute() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("program `{program}` must be a bare name or an absolute path"),
                ));
            }
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("program `{program}` does not end in a UTF-8 file name"),
                    )
                })?
                .to_owned();
            (name, path)
        } else {
            (program.to_owned(), find_on_path(program)?)
        };
        if !is_executable(&path) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("program `{}` is not an executable file", path.display()),
            ));
        }
        self.programs.insert(name, path);
        Ok(self)
    }

    /// Sets an environment variable for every program run (the environment is otherwise empty).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::shell::{ShellConfig, shell_exec};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path())
    ///     .unwrap()
    ///     .allow_program("printenv")
    ///     .unwrap()
    ///     .env("LANG", "C.UTF-8");
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let out = shell_exec(ctx, "printenv".to_owned(), vec![], None, None).await.unwrap();
    /// assert_eq!(out.stdout, "LANG=C.UTF-8\n"); // and nothing of this process's environment
    /// # }
    /// ```
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> ShellConfig {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The longest a call may run (at least 1 ms; default 30 s); a call may ask for less with
    /// `timeout_ms`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::shell::{ShellConfig, shell_exec};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path())
    ///     .unwrap()
    ///     .allow_program("echo")
    ///     .unwrap()
    ///     .timeout(Duration::from_secs(5));
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let err = shell_exec(ctx, "echo".to_owned(), vec![], None, Some(10_000)).await.unwrap_err();
    /// assert_eq!(err.code().as_u16(), 1001);
    /// assert!(err.message().starts_with("`timeout_ms` is 10000, over this host's limit of 5000 ms"));
    /// # }
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> ShellConfig {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How many bytes of stdout, and of stderr, a result keeps (default 64 KiB).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    /// use pleach_tools::shell::{ShellConfig, shell_exec};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path())
    ///     .unwrap()
    ///     .allow_program("echo")
    ///     .unwrap()
    ///     .max_output_bytes(5);
    /// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
    ///
    /// let args = vec!["hello, world".to_owned()];
    /// let out = shell_exec(ctx, "echo".to_owned(), args, None, None).await.unwrap();
    /// assert_eq!(out.stdout, "hello");
    /// assert!(out.stdout_truncated);
    /// # }
    /// ```
    #[must_use]
    pub fn max_output_bytes(mut self, max: usize) -> ShellConfig {
        self.max_output_bytes = max;
        self
    }

    /// The names calls may use, sorted.
    ///
    /// ```
    /// use pleach_tools::shell::ShellConfig;
    ///
    /// let root = tempfile::tempdir().unwrap();
    /// let config = ShellConfig::new(root.path())?.allow_program("true")?.allow_program("/bin/echo")?;
    /// assert_eq!(config.allowed_programs().collect::<Vec<_>>(), ["echo", "true"]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn allowed_programs(&self) -> impl Iterator<Item = &str> {
        self.programs.keys().map(String::as_str)
    }
}

/// The first executable file named `name` in a directory of `PATH`.
fn find_on_path(name: &str) -> io::Result<PathBuf> {
    let not_found = || {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("program `{name}` is not on PATH; allow it by its absolute path"),
        )
    };
    if name.is_empty() {
        return Err(not_found());
    }
    let path = std::env::var_os("PATH").ok_or_else(not_found)?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// The result of `shell_exec`.
///
/// ```
/// use pleach_core::ToolContext;
/// use pleach_core::extensions::{Extensions, SessionState};
/// use pleach_tools::shell::{ShellConfig, shell_exec};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let root = tempfile::tempdir().unwrap();
/// let config = ShellConfig::new(root.path()).unwrap().allow_program("ls").unwrap();
/// let ctx = ToolContext::new("call_1").with_scope(Extensions::new().with(config), SessionState::new());
///
/// // A non-zero exit is a result: the model reads the code and stderr.
/// let out = shell_exec(ctx, "ls".to_owned(), vec!["missing".to_owned()], None, None).await.unwrap();
/// assert_ne!(out.exit_code, Some(0));
/// assert_eq!(out.signal, None);
/// assert!(out.stdout.is_empty());
/// assert!(out.stderr.contains("missing"));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
// Set here so the output schema carries this line, not the Rust example above.
#[schemars(
    crate = "pleach_core::schemars",
    description = "The result of `shell_exec`."
)]
#[non_exhaustive]
pub struct ShellOutput {
    /// The program's exit code; absent when a signal ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended the program, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// What it wrote to stdout (invalid UTF-8 replaced with `�`; a character the limit cut in two
    /// left out).
    pub stdout: String,
    /// What it wrote to stderr.
    pub stderr: String,
    /// Whether stdout went past the host's output limit and was cut, or was still open when the
    /// program ended (held by a process it set loose with `setsid`, which the call does not wait
    /// for).
    pub stdout_truncated: bool,
    /// The same for stderr.
    pub stderr_truncated: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// Runs a program the host allows, with arguments passed as an array (no shell: nothing is
/// expanded or split), and returns its exit code, stdout and stderr; for example `{"program":
/// "ls", "args": ["-l", "src"]}`.
///
/// The program starts in the host's root directory, or `cwd` under it, with an empty environment
/// and no stdin. It is stopped, with everything it started, when the host's timeout passes (or the
/// shorter `timeout_ms`). A non-zero exit is a result, not an error: read `exit_code` and
/// `stderr`. Output past the host's limit is cut and flagged.
#[unified_tool(safety_tier = "standard", category = "shell")]
pub async fn shell_exec(
    ctx: ToolContext,
    #[arg(description = "The program to run, by the name the host allows, e.g. `ls`")]
    program: String,
    #[arg(
        description = "The arguments, one string each, passed as they are (no shell quoting or expansion)",
        default = Vec::new()
    )]
    args: Vec<String>,
    #[arg(
        description = "The working directory, relative to the root directory; the root if absent"
    )]
    cwd: Option<String>,
    #[arg(
        description = "Stop the program after this many milliseconds (at most the host's timeout)",
        min = 1
    )]
    timeout_ms: Option<u64>,
) -> Result<ShellOutput, ToolError> {
    let config = ctx.get::<ShellConfig>().ok_or_else(|| {
        not_configured(
            "shell_exec",
            "a `ShellConfig` with a root directory and the programs it may run (`--root DIR \
             --allow-program NAME` with the CLI)",
        )
    })?;
    let executable = find_program(config, &program)?;
    check_args(&args)?;
    let timeout = call_timeout(config, timeout_ms)?;
    let cwd = working_directory(config, cwd).await?;
    if ctx.signal.is_cancelled() {
        return Err(cancelled(&program));
    }
    let mut command = tokio::process::Command::new(executable);
    command
        .args(&args)
        .current_dir(cwd)
        .env_clear()
        .envs(config.env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    run(&ctx, &program, command, timeout, config.max_output_bytes).await
}

/// The file to run for `program`, or why it may not run.
fn find_program<'c>(config: &'c ShellConfig, program: &str) -> Result<&'c Path, ToolError> {
    if config.programs.is_empty() {
        return Err(not_configured(
            "shell_exec",
            "at least one allowed program (`ShellConfig::allow_program`, or `--allow-program \
             NAME` with the CLI)",
        ));
    }
    if let Some(path) = config.programs.get(program) {
        return Ok(path);
    }
    let allowed: Vec<String> = config
        .allowed_programs()
        .map(|n| format!("`{n}`"))
        .collect();
    if program.trim().is_empty() {
        return Err(invalid(format!(
            "`program` is empty; name one of {}",
            one_of(&allowed)
        )));
    }
    let shown = quoted(program);
    if program.contains('/') {
        return Err(invalid(format!(
            "`program` takes a name the host allows, not a path: got `{shown}`; use one of {}",
            one_of(&allowed)
        )));
    }
    if program.contains(char::is_whitespace) {
        return Err(invalid(format!(
            "`program` is one name, and its arguments go in `args`: got `{shown}`; e.g. \
             {{\"program\": \"ls\", \"args\": [\"-l\"]}}"
        )));
    }
    let close: Vec<String> =
        close_matches(program, config.programs.keys().map(|k| (k.as_str(), ())))
            .into_iter()
            .take(3)
            .map(|(name, ())| format!("`{name}`"))
            .collect();
    let hint = if close.is_empty() {
        format!("this host allows {}", one_of(&allowed))
    } else {
        format!("did you mean {}?", one_of(&close))
    };
    Err(invalid(format!(
        "`{shown}` is not an allowed program; {hint}"
    )))
}

fn check_args(args: &[String]) -> Result<(), ToolError> {
    if args.len() > MAX_ARGS {
        return Err(invalid(format!(
            "`args` has {} arguments, over the limit of {MAX_ARGS}",
            args.len()
        )));
    }
    let bytes: usize = args.iter().map(String::len).sum();
    if bytes > MAX_ARGS_BYTES {
        return Err(invalid(format!(
            "`args` are {bytes} bytes long in all, over the limit of {MAX_ARGS_BYTES}; pass \
             large data in a file instead"
        )));
    }
    if let Some(index) = args.iter().position(|arg| arg.contains('\0')) {
        return Err(invalid(format!(
            "`args[{index}]` contains a NUL byte, which no program argument can; remove it"
        )));
    }
    Ok(())
}

fn call_timeout(config: &ShellConfig, timeout_ms: Option<u64>) -> Result<Duration, ToolError> {
    match timeout_ms.map(Duration::from_millis) {
        None => Ok(config.timeout),
        Some(asked) if asked <= config.timeout => Ok(asked.max(Duration::from_millis(1))),
        Some(asked) => Err(invalid(format!(
            "`timeout_ms` is {}, over this host's limit of {} ms; pass at most that, or leave it \
             out",
            asked.as_millis(),
            config.timeout.as_millis()
        ))),
    }
}

/// The working directory for `cwd`: checked beneath the root with cap-std (no `..`, absolute
/// path or link out), then as a host path whose real location is still under the root.
async fn working_directory(
    config: &ShellConfig,
    cwd: Option<String>,
) -> Result<PathBuf, ToolError> {
    let Some(cwd) = cwd else {
        return Ok(config.root.clone());
    };
    let relative = relative_path("cwd", &cwd)?.to_owned();
    let (root, root_dir) = (config.root.clone(), config.root_dir.clone());
    blocking(move || {
        let verb = "use as the working directory";
        if !relative.as_os_str().is_empty() {
            root_dir
                .open_dir(&relative)
                .map_err(|err| io_error(&err, verb, &cwd, &root_dir))?;
        }
        let real = std::fs::canonicalize(root.join(&relative))
            .map_err(|err| io_error(&err, verb, &cwd, &root_dir))?;
        // cap-std has just refused any way out; this catches a link swapped in since.
        if !real.starts_with(&root) {
            return Err(invalid(format!(
                "`{}` leads outside the root directory through a symbolic link; use a path that \
                 stays inside it",
                quoted(&cwd)
            )));
        }
        Ok(real)
    })
    .await
}

/// A process group, sent `SIGKILL` once: by [`ProcessGroup::kill`], or when dropped.
#[derive(Debug)]
struct ProcessGroup(AtomicI32);

impl ProcessGroup {
    fn new(leader: Option<u32>) -> ProcessGroup {
        let id = leader.and_then(|id| i32::try_from(id).ok()).unwrap_or(0);
        ProcessGroup(AtomicI32::new(id))
    }

    /// Kills every process still in the group. Only the first call signals: once the leader has
    /// been reaped and the group is empty, its number may name another group.
    fn kill(&self) {
        if let Some(group) = Pid::from_raw(self.0.swap(0, Ordering::SeqCst)) {
            // `ESRCH`: the group is empty already.
            let _ = kill_process_group(group, Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Spawns `command` and waits for it, for the timeout or for the call's signal, whichever comes
/// first; on the last two, kills its group.
async fn run(
    ctx: &ToolContext,
    program: &str,
    mut command: tokio::process::Command,
    timeout: Duration,
    max_output_bytes: usize,
) -> Result<ShellOutput, ToolError> {
    let started = Instant::now();
    let mut child = command.spawn().map_err(|err| {
        ToolError::failed(format!("could not start `{program}`"))
            .with_detail(format!("spawn `{program}`: {err}"))
    })?;
    let group = ProcessGroup::new(child.id());
    // Filled as the pipes are read, so what was read stays when the readers are dropped.
    let (mut stdout, mut stderr) = (Captured::default(), Captured::default());
    let (stdout_pipe, stderr_pipe) = (child.stdout.take(), child.stderr.take());
    let outcome = {
        let readers = async {
            tokio::join!(
                read_capped(stdout_pipe, max_output_bytes, &mut stdout),
                read_capped(stderr_pipe, max_output_bytes, &mut stderr),
            )
        };
        let finished = async {
            tokio::pin!(readers);
            let (status, read_all) = tokio::select! {
                status = child.wait() => (status, false),
                _ = &mut readers => (child.wait().await, true),
            };
            // What the program left running goes with it, so that the pipes close.
            group.kill();
            // A process that left the group (`setsid`) may still hold the pipes: what it writes
            // later is not this call's output, and the call does not wait for it.
            let held_open = !read_all
                && tokio::time::timeout(OUTPUT_GRACE, &mut readers)
                    .await
                    .is_err();
            (status, held_open)
        };
        tokio::pin!(finished);
        tokio::select! {
            done = &mut finished => Ok(done),
            () = tokio::time::sleep(timeout) => Err(ToolError::new(
                ErrorCode::TimedOut,
                format!(
                    "`{program}` did not finish within {} ms, so it and every process it \
                     started were stopped; ask for less work, or a longer `timeout_ms` within \
                     the host's limit",
                    timeout.as_millis()
                ),
            )),
            () = ctx.signal.cancelled() => Err(cancelled(program)),
        }
        // The readers, and their hold on the child and the buffers, end here.
    };
    let (status, held_open) = match outcome {
        Ok(done) => done,
        Err(stopped) => {
            group.kill();
            // Reap the child before returning, briefly.
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
            return Err(stopped);
        }
    };
    let status = status.map_err(|err| {
        ToolError::failed(format!("lost track of `{program}`"))
            .with_detail(format!("wait for `{program}`: {err}"))
    })?;
    Ok(ShellOutput {
        exit_code: status.code(),
        signal: status.signal(),
        stdout: stdout.text(),
        stderr: stderr.text(),
        // Still open after the program ended: more may come, from a process it set loose.
        stdout_truncated: stdout.truncated || held_open,
        stderr_truncated: stderr.truncated || held_open,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

fn cancelled(program: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        format!("the call was cancelled; `{program}` and every process it started were stopped"),
    )
}

/// One pipe's output: the first bytes, up to the cap, and whether more came.
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    truncated: bool,
}

impl Captured {
    /// The output as text: invalid UTF-8 replaced with `�`, and a character the cap cut in two
    /// dropped rather than replaced.
    fn text(&self) -> String {
        let mut bytes = self.kept.as_slice();
        if self.truncated
            && let Err(err) = std::str::from_utf8(bytes)
            && err.error_len().is_none()
        {
            bytes = &bytes[..err.valid_up_to()];
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Reads `pipe` to its end into `out`, keeping the first `max` bytes.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, max: usize, out: &mut Captured) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buffer = vec![0; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = max - out.kept.len();
                if read > room {
                    out.truncated = true;
                }
                out.kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pleach_core::extensions::{Extensions, SessionState};
    use serde_json::{Value, json};

    struct Fixture {
        root: tempfile::TempDir,
        extensions: Extensions,
    }

    impl Fixture {
        /// A root with a `sub` directory, allowing `echo`, `sh`, `env` and `pwd`.
        fn new() -> Fixture {
            Fixture::with(|config| config)
        }

        fn with(adjust: impl FnOnce(ShellConfig) -> ShellConfig) -> Fixture {
            let root = tempfile::tempdir().unwrap();
            std::fs::create_dir(root.path().join("sub")).unwrap();
            let mut config = ShellConfig::new(root.path()).unwrap();
            for program in ["echo", "sh", "env", "pwd"] {
                config = config.allow_program(program).unwrap();
            }
            Fixture {
                extensions: Extensions::new().with(adjust(config)),
                root,
            }
        }

        fn ctx(&self) -> ToolContext {
            ToolContext::new("call_1").with_scope(self.extensions.clone(), SessionState::new())
        }

        async fn call(&self, args: Value) -> Result<Value, ToolError> {
            shell_exec::definition()
                .call(&args.to_string(), self.ctx())
                .await
                .map(|out| out.value().clone())
        }

        #[track_caller]
        fn refusal(&self, outcome: Result<Value, ToolError>, needle: &str) {
            let message = crate::test_support::refusal(outcome, &needle);
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
            let root = self.root.path().to_string_lossy();
            assert!(
                !message.contains(root.as_ref()),
                "{message:?} names the root"
            );
        }

        /// The pid the script wrote to `pid` in the root.
        async fn written_pid(&self) -> i32 {
            for _ in 0..100 {
                if let Ok(text) = std::fs::read_to_string(self.root.path().join("pid"))
                    && let Ok(pid) = text.trim().parse()
                {
                    return pid;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the script wrote no pid");
        }
    }

    /// Whether `pid` is a live process (a zombie, killed and waiting for its parent, is not).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => false,
            Ok(stat) => {
                let state = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.trim().chars().next());
                !matches!(state, Some('Z' | 'X'))
            }
        }
    }

    /// Waits up to 5 s for `pid` to die.
    async fn assert_dies(pid: i32) {
        for _ in 0..250 {
            if !alive(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("process {pid} outlived the call");
    }

    #[track_caller]
    fn assert_within(started: Instant, limit: Duration) {
        let elapsed = started.elapsed();
        assert!(elapsed < limit, "took {elapsed:?}, over {limit:?}");
    }

    /// Starts a grandchild (`sleep 30` in the background), writes its pid, then waits.
    const SCRIPT: &str = "sleep 30 & echo $! > pid; sleep 30";

    #[tokio::test]
    async fn runs_programs_with_literal_arguments() {
        let fx = Fixture::new();
        let out = fx
            .call(json!({"program": "echo", "args": ["a b", "$HOME", "`id`", ";", "|"]}))
            .await
            .unwrap();
        assert_eq!(out["stdout"], "a b $HOME `id` ; |\n");
        assert_eq!(out["exit_code"], 0);
        assert_eq!(out["stdout_truncated"], false);
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", "echo oops >&2; exit 3"]}))
            .await
            .unwrap();
        assert_eq!(
            (out["exit_code"].as_i64(), out["stderr"].as_str()),
            (Some(3), Some("oops\n"))
        );
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", "kill -9 $$"]}))
            .await
            .unwrap();
        assert_eq!(
            (out.get("exit_code"), out["signal"].as_i64()),
            (None, Some(9))
        );
        let out = fx.call(json!({"program": "echo"})).await.unwrap();
        assert_eq!(out["stdout"], "\n");
    }

    #[tokio::test]
    async fn only_allowed_programs_run() {
        let fx = Fixture::new();
        fx.refusal(
            fx.call(json!({"program": "rm", "args": ["-rf", "."]}))
                .await,
            "`rm` is not an allowed program; this host allows `echo`, `env`, `pwd` or `sh`",
        );
        fx.refusal(
            fx.call(json!({"program": "ehco"})).await,
            "did you mean `echo`?",
        );
        fx.refusal(
            fx.call(json!({"program": "/bin/echo"})).await,
            "takes a name the host allows, not a path",
        );
        fx.refusal(fx.call(json!({"program": "./echo"})).await, "not a path");
        fx.refusal(
            fx.call(json!({"program": "echo hi"})).await,
            "its arguments go in `args`",
        );
        fx.refusal(fx.call(json!({"program": ""})).await, "`program` is empty");
    }

    #[tokio::test]
    async fn without_configuration_nothing_runs() {
        let err = shell_exec::definition()
            .call(r#"{"program": "echo"}"#, ToolContext::new("c1"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(!err.is_recoverable());
        assert!(
            err.message().contains("it needs a `ShellConfig`"),
            "{}",
            err.message()
        );

        let root = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new("c2").with_scope(
            Extensions::new().with(ShellConfig::new(root.path()).unwrap()),
            SessionState::new(),
        );
        let err = shell_exec::definition()
            .call(r#"{"program": "echo"}"#, ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ToolFailed);
        assert!(
            err.message().contains("at least one allowed program"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn programs_are_resolved_when_allowed() {
        let root = tempfile::tempdir().unwrap();
        let config = ShellConfig::new(root.path())
            .unwrap()
            .allow_program("sh")
            .unwrap();
        assert!(config.programs["sh"].is_absolute());
        let err = ShellConfig::new(root.path())
            .unwrap()
            .allow_program("bin/sh")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let err = ShellConfig::new(root.path())
            .unwrap()
            .allow_program("/etc/passwd")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        let err = ShellConfig::new(root.path())
            .unwrap()
            .allow_program("")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(ShellConfig::new(root.path().join("missing")).is_err());
    }

    #[tokio::test]
    async fn the_environment_is_empty_unless_the_host_adds_to_it() {
        let fx = Fixture::new();
        assert_eq!(
            fx.call(json!({"program": "env"})).await.unwrap()["stdout"],
            ""
        );
        let fx = Fixture::with(|config| config.env("GREETING", "hi"));
        assert_eq!(
            fx.call(json!({"program": "env"})).await.unwrap()["stdout"],
            "GREETING=hi\n"
        );
    }

    #[tokio::test]
    async fn the_working_directory_stays_under_the_root() {
        let fx = Fixture::new();
        let root = std::fs::canonicalize(fx.root.path()).unwrap();
        let pwd = |out: Value| out["stdout"].as_str().unwrap().trim_end().to_owned();
        assert_eq!(
            pwd(fx.call(json!({"program": "pwd"})).await.unwrap()),
            root.to_str().unwrap()
        );
        assert_eq!(
            pwd(fx
                .call(json!({"program": "pwd", "cwd": "sub"}))
                .await
                .unwrap()),
            root.join("sub").to_str().unwrap()
        );

        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), fx.root.path().join("out")).unwrap();
        std::fs::write(fx.root.path().join("file"), "").unwrap();
        for (cwd, needle) in [
            ("..", "`cwd` must not contain `..`"),
            ("sub/../..", "must not contain `..`"),
            ("/tmp", "`cwd` must be relative to the root"),
            ("out", "leads outside the root directory"),
            ("file", "as if it were a directory"),
            ("nope", "there is no file or directory at `nope`"),
            ("s\u{0}", "`cwd` contains a NUL byte"),
        ] {
            fx.refusal(fx.call(json!({"program": "pwd", "cwd": cwd})).await, needle);
        }
    }

    #[tokio::test]
    async fn arguments_are_bounded() {
        let fx = Fixture::new();
        let many: Vec<String> = (0..257).map(|i| i.to_string()).collect();
        fx.refusal(
            fx.call(json!({"program": "echo", "args": many})).await,
            "`args` has 257 arguments, over the limit of 256",
        );
        let big = "x".repeat(MAX_ARGS_BYTES + 1);
        fx.refusal(
            fx.call(json!({"program": "echo", "args": [big]})).await,
            "bytes long in all, over the limit of 65536",
        );
        fx.refusal(
            fx.call(json!({"program": "echo", "args": ["ok", "a\u{0}b"]}))
                .await,
            "`args[1]` contains a NUL byte",
        );
        fx.refusal(
            fx.call(json!({"program": "echo", "timeout_ms": 31_000}))
                .await,
            "`timeout_ms` is 31000, over this host's limit of 30000 ms",
        );
        let err = fx
            .call(json!({"program": "echo", "timeout_ms": 0}))
            .await
            .unwrap_err();
        assert_eq!(err.path(), Some("/timeout_ms"));
        let err = fx
            .call(json!({"program": "echo", "args": "-n hi"}))
            .await
            .unwrap_err();
        assert_eq!(err.path(), Some("/args"));
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let fx = Fixture::new();
        let started = Instant::now();
        let err = fx
            .call(json!({"program": "sh", "args": ["-c", SCRIPT], "timeout_ms": 2_000}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TimedOut);
        assert!(
            err.message()
                .starts_with("`sh` did not finish within 2000 ms"),
            "{}",
            err.message()
        );
        assert_within(started, Duration::from_secs(10));
        assert_dies(fx.written_pid().await).await;
    }

    #[tokio::test]
    async fn a_process_that_leaves_the_group_is_not_waited_for() {
        if !Path::new("/usr/bin/setsid").exists() && !Path::new("/bin/setsid").exists() {
            eprintln!("skipped: no `setsid` on this machine");
            return;
        }
        let fx = Fixture::new();
        let started = Instant::now();
        // `sh` ends once the `sleep` it sets loose is in a session of its own (so the group's kill
        // misses it, however slowly it starts); that `sleep` keeps the pipes.
        let script = "echo started; setsid sh -c ': > left; exec sleep 3' & \
                      while [ ! -e left ]; do sleep 0.01; done";
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", script]}))
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(2_500),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out["exit_code"], 0, "{out}");
        assert_eq!(out["stdout"], "started\n");
        // The pipes were still open: more could have come.
        assert_eq!(out["stdout_truncated"], true, "{out}");
    }

    #[tokio::test]
    async fn a_character_the_output_cap_cuts_is_dropped_not_replaced() {
        let fx = Fixture::with(|config| config.max_output_bytes(4));
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", "printf 'abc\\342\\202\\254'"]}))
            .await
            .unwrap();
        assert_eq!(out["stdout"], "abc", "{out}");
        assert_eq!(out["stdout_truncated"], true);
        // Invalid bytes the program wrote are still shown as `�`.
        let fx = Fixture::new();
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", "printf 'a\\377b'"]}))
            .await
            .unwrap();
        assert_eq!(out["stdout"], "a\u{fffd}b", "{out}");
    }

    #[tokio::test]
    async fn the_host_timeout_applies_without_timeout_ms() {
        let fx = Fixture::with(|config| config.timeout(Duration::from_secs(2)));
        let err = fx
            .call(json!({"program": "sh", "args": ["-c", SCRIPT]}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TimedOut);
        assert_dies(fx.written_pid().await).await;
    }

    #[tokio::test]
    async fn cancellation_kills_the_group_and_returns_promptly() {
        let fx = Fixture::new();
        let ctx = fx.ctx();
        let signal = ctx.signal.clone();
        let call = tokio::spawn(async move {
            let args = json!({"program": "sh", "args": ["-c", SCRIPT]}).to_string();
            shell_exec::definition().call(&args, ctx).await
        });
        let pid = fx.written_pid().await;
        assert!(
            alive(pid),
            "the grandchild runs until the call is cancelled"
        );
        let cancelled_at = Instant::now();
        signal.cancel();
        let err = call.await.unwrap().unwrap_err();
        assert_eq!(err.code(), ErrorCode::Cancelled);
        assert_within(cancelled_at, Duration::from_secs(3));
        assert_dies(pid).await;
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_group() {
        let fx = Fixture::new();
        let call = fx.call(json!({"program": "sh", "args": ["-c", SCRIPT]}));
        // The runtime drops a call that ignores its signal past the grace period; same effect.
        // Dropped only after the script had time to write the pid, however loaded the machine.
        assert!(
            tokio::time::timeout(Duration::from_secs(2), call)
                .await
                .is_err()
        );
        assert_dies(fx.written_pid().await).await;
    }

    #[tokio::test]
    async fn background_processes_do_not_outlive_the_program() {
        let fx = Fixture::new();
        let started = Instant::now();
        let out = fx
            .call(
                json!({"program": "sh", "args": ["-c", "sleep 30 & echo $! > pid; echo started"]}),
            )
            .await
            .unwrap();
        assert_eq!(out["stdout"], "started\n");
        // The background `sleep` held the output pipe: the call would otherwise wait 30 s.
        assert_within(started, Duration::from_secs(5));
        assert_dies(fx.written_pid().await).await;
    }

    #[tokio::test]
    async fn chatty_output_is_capped_without_stalling() {
        let fx = Fixture::with(|config| config.max_output_bytes(1000));
        let script = "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; echo done >&2";
        let out = fx
            .call(json!({"program": "sh", "args": ["-c", script]}))
            .await
            .unwrap();
        assert_eq!(out["exit_code"], 0);
        assert_eq!(
            (
                out["stdout_truncated"].as_bool(),
                out["stderr_truncated"].as_bool()
            ),
            (Some(true), Some(true))
        );
        assert_eq!(out["stdout"].as_str().unwrap().len(), 1000);
        assert_eq!(out["stderr"].as_str().unwrap().len(), 1000);
    }

    #[test]
    fn schema_tier_and_strategy() {
        let tool = shell_exec::definition();
        assert_eq!(tool.input_schema()["required"], json!(["program"]));
        assert_eq!(
            tool.input_schema()["properties"]["args"]["default"],
            json!([])
        );
        assert_eq!(
            shell_exec::unified().safety_tier(),
            Some(pleach_core::SafetyTier::Standard)
        );
        assert_eq!(
            pleach::infer_batching_strategy(&tool),
            pleach::BatchingStrategy::Serial
        );
    }
}
