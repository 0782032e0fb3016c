//! The one Cargo every build of both crates goes through: the same program, the same flags and
//! the same environment for both, with what could make a build skip work or change its profile
//! taken out.

use std::error::Error;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The dev profile's own `CARGO_INCREMENTAL`: incremental compilation on for the crate being
/// built. Set explicitly, so a CI's `CARGO_INCREMENTAL=0` does not silently change what is timed.
const DEV_INCREMENTAL: &str = "1";

/// Variables removed from every build's environment: a caching wrapper would replay a build
/// instead of doing it, and the others would move the target dir or change the dev profile.
/// `RUSTFLAGS` and the like stay, the same for both crates, and are shown in the header.
const REMOVED: &[&str] = &[
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
];

/// Prefixes of variables removed for the same reason (`CARGO_PROFILE_DEV_OPT_LEVEL`, …).
const REMOVED_PREFIXES: &[&str] = &["CARGO_PROFILE_"];

/// Flags that reach rustc from the environment, named in the header when set.
const SHOWN: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
];

/// What Cargo prints when another Cargo on the machine holds a lock it needs: the time then
/// includes waiting for that other process.
const BLOCKED: &str = "Blocking waiting for file lock";

/// One timed Cargo command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timed {
    pub(super) elapsed: Duration,
    /// Whether Cargo waited for another process's lock (package cache, build directory).
    pub(super) blocked: bool,
}

/// The Cargo that runs this benchmark's builds.
pub(super) struct Cargo {
    program: OsString,
}

impl Cargo {
    /// The Cargo that built and runs this program (`$CARGO`, which `cargo run` sets), else the
    /// `cargo` on `PATH`.
    pub(super) fn new() -> Self {
        Cargo {
            program: std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        }
    }

    /// What every build runs with, for the header: the versions, `CARGO_INCREMENTAL` and what it
    /// was in this environment, and any flags that reach rustc.
    pub(super) fn describe(&self) -> Result<String, Box<dyn Error>> {
        let version = |program: &OsString| -> Result<String, Box<dyn Error>> {
            let output = Command::new(program).arg("-V").output()?;
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        };
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let inherited = match std::env::var("CARGO_INCREMENTAL") {
            Ok(value) => format!("`{value}` in this environment, overridden"),
            Err(_) => "unset in this environment".to_owned(),
        };
        let flags: Vec<String> = SHOWN
            .iter()
            .filter_map(|name| {
                let value = std::env::var(name).ok()?;
                Some(format!("{name}={value:?}"))
            })
            .collect();
        let flags = if flags.is_empty() {
            "no RUSTFLAGS".to_owned()
        } else {
            flags.join(" ")
        };
        Ok(format!(
            "{}; {}; dev profile, CARGO_INCREMENTAL={DEV_INCREMENTAL} (the dev profile's default; \
             {inherited}); {flags}; no rustc wrapper",
            version(&self.program)?,
            version(&rustc)?,
        ))
    }

    /// `cargo <args>` in `dir` (a generated crate) with `target` as its target dir, pinned as
    /// above. Returns how long it took; a failure is an error holding Cargo's stderr.
    pub(super) fn run(
        &self,
        dir: &Path,
        target: &Path,
        args: &[&str],
    ) -> Result<Timed, Box<dyn Error>> {
        self.output(dir, target, args).map(|(timed, _)| timed)
    }

    /// As [`Cargo::run`], also returning the command's output.
    pub(super) fn output(
        &self,
        dir: &Path,
        target: &Path,
        args: &[&str],
    ) -> Result<(Timed, Output), Box<dyn Error>> {
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .arg("--target-dir")
            .arg(target)
            .current_dir(dir)
            .env("CARGO_INCREMENTAL", DEV_INCREMENTAL);
        for name in REMOVED {
            command.env_remove(name);
        }
        for (name, _) in std::env::vars_os() {
            let removed = name
                .to_str()
                .is_some_and(|name| REMOVED_PREFIXES.iter().any(|p| name.starts_with(p)));
            if removed {
                command.env_remove(name);
            }
        }
        let start = Instant::now();
        let output = command.output()?;
        let elapsed = start.elapsed();
        if !output.status.success() {
            return Err(format!(
                "`cargo {}` in {} failed ({}):\n{}",
                args.join(" "),
                dir.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let blocked = String::from_utf8_lossy(&output.stderr).contains(BLOCKED);
        Ok((Timed { elapsed, blocked }, output))
    }
}
