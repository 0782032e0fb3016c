//! `compile`: what a crate of many tools costs to compile, pleach's `#[tool]` fns beside the same
//! tools as rmcp `#[tool]` methods of one `#[tool_router]` impl, generated and built in one run.
//!
//! | column | the generated crate |
//! | --- | --- |
//! | `pleach` | N `#[tool] async fn tool_N(#[input] input: InputN) -> i64` and `main` printing `tool_registry().len()` |
//! | `rmcp` | N `#[tool] async fn tool_N(&self, Parameters(input): Parameters<InputN>) -> Json<i64>` in one `#[tool_router]` impl, and `main` printing `tool_router().list_all().len()` |
//!
//! Every `InputN` is the same three-field struct (`i64`, `i64`, `String`, doc comments on each)
//! deriving `Deserialize` and `JsonSchema`; every body adds the fields and a literal. Each crate
//! is a binary (so a build includes its link) in its own directory under the system's temp dir,
//! with its own target dir, its own `[workspace]` table (not part of this workspace), and this
//! workspace's `Cargo.lock`, so its dependencies are the versions pleach-bench itself builds:
//! pleach-contract by absolute path under the name `pleach-core` (what a crate that only defines
//! tools depends on, README's "stop its build at the contract"), rmcp with the workspace's
//! features.
//!
//! Both crates are built by the same Cargo in the dev profile, with `CARGO_INCREMENTAL=1` set
//! explicitly (the dev profile's default, whatever the environment says) and no rustc wrapper.
//! First, untimed, each crate is built (every dependency with it), its binary run (it must print
//! N), and checked (`cargo check`, so check's dependencies are built too). Then, timed, each
//! measurement repeated, the two crates alternating who goes first:
//!
//! 1. **clean**: `cargo clean -p <crate>` and its incremental cache removed, then `cargo build`:
//!    the crate alone from scratch, its dependencies already built;
//! 2. **edit**: the literal in the middle tool's body changed, then `cargo build`;
//! 3. **check after an edit**: after one untimed `cargo check`, the same edit, then `cargo check`.
//!
//! Each time is the wall time of the whole Cargo command, as a user waits for it. A run in which
//! Cargo printed that it waited for another process's lock (another Cargo on a shared machine
//! holding the package cache) is run again. The summary line holds the medians.

mod cargo;
mod pleach_crate;
mod rmcp_crate;

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cargo::{Cargo, Timed};

/// Tools per crate, unless `--tools` says otherwise.
const TOOLS: u32 = 200;
/// Tools per crate with `--quick`, unless `--tools` says otherwise.
const QUICK_TOOLS: u32 = 50;
/// Runs of each measurement.
const REPEATS: u32 = 3;
const QUICK_REPEATS: u32 = 1;
/// Tries of a run while Cargo keeps waiting for another process's lock.
const BLOCKED_TRIES: u32 = 3;

/// The body literal of every tool, and which tool's literal has been edited how often.
#[derive(Debug, Clone, Copy)]
struct Edit {
    /// The tool whose body the edits change.
    tool: u32,
    /// How many edits so far.
    revision: u32,
}

impl Edit {
    /// The literal in tool `index`'s body: its own index, plus a million per edit for the edited
    /// one.
    fn literal(self, index: u32) -> u64 {
        let edits = if index == self.tool { self.revision } else { 0 };
        u64::from(index) + 1_000_000 * u64::from(edits)
    }
}

/// Where and at which versions the generated crates find their dependencies.
struct Pins {
    /// This workspace's `pleach-contract` directory.
    pleach_contract: PathBuf,
    /// This workspace's `Cargo.lock`, copied into each crate.
    lockfile: String,
    rmcp: String,
    serde: String,
    schemars: String,
}

impl Pins {
    fn of_this_workspace() -> Result<Self, Box<dyn Error>> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pleach_contract = root.join("pleach-contract").canonicalize()?;
        let lockfile = std::fs::read_to_string(root.join("Cargo.lock"))?;
        let version = |package: &str| {
            locked_version(&lockfile, package)
                .ok_or_else(|| format!("no single `{package}` in the workspace's Cargo.lock"))
        };
        Ok(Pins {
            rmcp: version("rmcp")?,
            serde: version("serde")?,
            schemars: version("schemars")?,
            pleach_contract,
            lockfile,
        })
    }
}

/// The version of `package` in a `Cargo.lock` text, if it holds exactly one.
fn locked_version(lockfile: &str, package: &str) -> Option<String> {
    let name_line = format!("name = \"{package}\"");
    let mut versions = lockfile
        .split("[[package]]")
        .filter(|entry| entry.lines().any(|line| line == name_line))
        .filter_map(|entry| {
            entry
                .lines()
                .find_map(|line| line.strip_prefix("version = \""))
                .and_then(|rest| rest.strip_suffix('"'))
        });
    let first = versions.next()?;
    versions.next().is_none().then(|| first.to_owned())
}

/// What one column's crate is: its names, dependencies and source.
struct Generator {
    /// The column's name.
    label: &'static str,
    /// The generated package's name.
    package: &'static str,
    /// The `[dependencies]` table's body.
    dependencies: fn(&Pins) -> String,
    /// `src/main.rs` with this many tools, at this edit.
    source: fn(u32, Edit) -> String,
}

/// One generated crate.
struct Project {
    label: &'static str,
    package: &'static str,
    source: fn(u32, Edit) -> String,
    dir: PathBuf,
    target: PathBuf,
    tools: u32,
    edit: Edit,
}

impl Project {
    /// Writes the crate into `work/<package>`.
    fn create(
        work: &Path,
        generator: &Generator,
        tools: u32,
        pins: &Pins,
    ) -> Result<Self, Box<dyn Error>> {
        let Generator {
            label,
            package,
            dependencies,
            source,
        } = *generator;
        let dependencies = dependencies(pins);
        let dir = work.join(package);
        std::fs::create_dir_all(dir.join("src"))?;
        let manifest = format!(
            "[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[dependencies]\n{dependencies}\n\
             # Not part of any workspace above this directory.\n[workspace]\n"
        );
        std::fs::write(dir.join("Cargo.toml"), manifest)?;
        std::fs::write(dir.join("Cargo.lock"), &pins.lockfile)?;
        let project = Project {
            label,
            package,
            source,
            target: dir.join("target"),
            dir,
            tools,
            edit: Edit {
                tool: tools / 2,
                revision: 0,
            },
        };
        project.write_source()?;
        Ok(project)
    }

    fn write_source(&self) -> std::io::Result<()> {
        std::fs::write(
            self.dir.join("src/main.rs"),
            (self.source)(self.tools, self.edit),
        )
    }

    /// Changes one literal in one tool's body.
    fn edit(&mut self) -> std::io::Result<()> {
        self.edit.revision += 1;
        self.write_source()
    }

    fn cargo(&self, cargo: &Cargo, args: &[&str]) -> Result<Timed, Box<dyn Error>> {
        cargo.run(&self.dir, &self.target, args)
    }

    /// Builds and checks everything once, and runs the binary, which must print the tool count.
    fn warm_up(&self, cargo: &Cargo) -> Result<(), Box<dyn Error>> {
        let built = self.cargo(cargo, &["build"])?.elapsed;
        let (_, output) = cargo.output(&self.dir, &self.target, &["run", "--quiet"])?;
        let printed = String::from_utf8_lossy(&output.stdout);
        if printed.trim() != self.tools.to_string() {
            return Err(format!(
                "the {} crate's binary printed {:?}, not {} tools",
                self.label,
                printed.trim(),
                self.tools
            )
            .into());
        }
        let checked = self.cargo(cargo, &["check"])?.elapsed;
        println!(
            "warm-up {}: build with every dependency {:.1} s, check {:.1} s; the binary lists {} \
             tools",
            self.label,
            built.as_secs_f64(),
            checked.as_secs_f64(),
            self.tools
        );
        Ok(())
    }

    /// Removes everything built of the crate itself, its incremental caches included; its
    /// dependencies stay.
    fn clean(&self, cargo: &Cargo) -> Result<(), Box<dyn Error>> {
        self.cargo(cargo, &["clean", "--quiet", "-p", self.package])?;
        let crate_name = self.package.replace('-', "_");
        let incremental = self.target.join("debug/incremental");
        if let Ok(entries) = std::fs::read_dir(&incremental) {
            for entry in entries {
                let entry = entry?;
                let name = entry.file_name();
                if name
                    .to_str()
                    .is_some_and(|name| name.starts_with(&format!("{crate_name}-")))
                {
                    std::fs::remove_dir_all(entry.path())?;
                }
            }
        }
        Ok(())
    }
}

/// The generated crates' directory, removed on drop unless kept.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.keep {
            println!("kept the generated crates in {}", self.path.display());
        } else {
            // Best effort: a leftover temp dir is no reason to fail a finished run.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The timed runs of one measurement of one crate.
#[derive(Default)]
struct Runs(Vec<f64>);

impl Runs {
    fn push(&mut self, elapsed: Duration) {
        self.0.push(elapsed.as_secs_f64());
    }

    /// The median run (the lower of the two middle ones for an even count); `NaN` for none.
    fn median(&self) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => f64::NAN,
            len => sorted[(len - 1) / 2],
        }
    }

    fn listed(&self) -> String {
        let mut text = String::new();
        for run in &self.0 {
            let _ = write!(text, " {run:.2}");
        }
        text
    }
}

/// One measurement's runs for both crates.
#[derive(Default)]
struct Measurement {
    pleach: Runs,
    rmcp: Runs,
}

/// `repeats` rounds of `step` on both crates, which go first in turn; `step` prepares the crate
/// untimed and returns the time of the one command it times. A run in which Cargo waited for
/// another process's lock is done again (up to [`BLOCKED_TRIES`] times in all, then kept).
fn time_each(
    projects: &mut [Project; 2],
    repeats: u32,
    mut step: impl FnMut(&mut Project) -> Result<Timed, Box<dyn Error>>,
) -> Result<Measurement, Box<dyn Error>> {
    let mut measurement = Measurement::default();
    for round in 0..repeats as usize {
        for index in [round % 2, 1 - round % 2] {
            let mut timed = step(&mut projects[index])?;
            for _ in 1..BLOCKED_TRIES {
                if !timed.blocked {
                    break;
                }
                println!(
                    "  ({}: Cargo waited for another process's lock ({:.2} s); run again)",
                    projects[index].label,
                    timed.elapsed.as_secs_f64()
                );
                timed = step(&mut projects[index])?;
            }
            let elapsed = timed.elapsed;
            let runs = if index == 0 {
                &mut measurement.pleach
            } else {
                &mut measurement.rmcp
            };
            runs.push(elapsed);
        }
    }
    Ok(measurement)
}

/// Runs the `compile` measurement; prints each run and the summary line.
pub(crate) fn run(quick: bool, tools: Option<u32>, keep: bool) -> Result<(), Box<dyn Error>> {
    let tools = tools.unwrap_or(if quick { QUICK_TOOLS } else { TOOLS });
    let repeats = if quick { QUICK_REPEATS } else { REPEATS };
    let cargo = Cargo::new();
    let pins = Pins::of_this_workspace()?;
    let work = WorkDir {
        path: std::env::temp_dir().join(format!("pleach-bench-compile-{}", std::process::id())),
        keep,
    };
    std::fs::create_dir_all(&work.path)?;

    println!(
        "pleach-bench compile: {tools} tools per crate, {repeats} run(s) of each measurement, \
         crates alternating{}",
        if quick { " (--quick)" } else { "" }
    );
    println!("{}", cargo.describe()?);
    println!(
        "pleach-contract {} (as `pleach-core`); rmcp {} (features server, macros), serde {}, \
         schemars {}",
        pins.pleach_contract.display(),
        pins.rmcp,
        pins.serde,
        pins.schemars
    );
    let mut projects = [
        Project::create(&work.path, &pleach_crate::GENERATOR, tools, &pins)?,
        Project::create(&work.path, &rmcp_crate::GENERATOR, tools, &pins)?,
    ];
    for project in &projects {
        let lines = std::fs::read_to_string(project.dir.join("src/main.rs"))?
            .lines()
            .count();
        println!(
            "{}: {} ({lines} lines)",
            project.label,
            project.dir.display()
        );
    }
    for project in &projects {
        project.warm_up(&cargo)?;
    }

    let clean = time_each(&mut projects, repeats, |project| {
        project.clean(&cargo)?;
        project.cargo(&cargo, &["build"])
    })?;
    let edit = time_each(&mut projects, repeats, |project| {
        project.edit()?;
        project.cargo(&cargo, &["build"])
    })?;
    for project in &projects {
        project.cargo(&cargo, &["check"])?;
    }
    let check_edit = time_each(&mut projects, repeats, |project| {
        project.edit()?;
        project.cargo(&cargo, &["check"])
    })?;

    println!();
    println!("seconds per run, in run order (median):");
    for (name, measurement) in [
        ("clean build", &clean),
        ("edit + build", &edit),
        ("edit + check", &check_edit),
    ] {
        for (label, runs) in [("pleach", &measurement.pleach), ("rmcp", &measurement.rmcp)] {
            println!(
                "  {name:<12}  {label:<6} {} ({:.2})",
                runs.listed(),
                runs.median()
            );
        }
    }
    println!();
    println!(
        "compile tools={tools} pleach_clean_s={:.2} rmcp_clean_s={:.2} pleach_edit_s={:.2} \
         rmcp_edit_s={:.2} pleach_check_edit_s={:.2} rmcp_check_edit_s={:.2}",
        clean.pleach.median(),
        clean.rmcp.median(),
        edit.pleach.median(),
        edit.rmcp.median(),
        check_edit.pleach.median(),
        check_edit.rmcp.median(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_single_locked_version() {
        let lockfile = "version = 4\n\n[[package]]\nname = \"rmcp\"\nversion = \"3.11.0\"\n\
                        source = \"registry\"\n\n[[package]]\nname = \"rmcp-macros\"\n\
                        version = \"3.11.0\"\n\n[[package]]\nname = \"dup\"\nversion = \"1.0.0\"\n\n\
                        [[package]]\nname = \"dup\"\nversion = \"2.0.0\"\n";
        assert_eq!(locked_version(lockfile, "rmcp").as_deref(), Some("3.11.0"));
        assert_eq!(locked_version(lockfile, "dup"), None);
        assert_eq!(locked_version(lockfile, "missing"), None);
    }

    #[test]
    fn an_edit_changes_one_literal() {
        let mut edit = Edit {
            tool: 2,
            revision: 0,
        };
        let before: Vec<u64> = (0..4).map(|i| edit.literal(i)).collect();
        edit.revision = 3;
        let after: Vec<u64> = (0..4).map(|i| edit.literal(i)).collect();
        assert_eq!(before, [0, 1, 2, 3]);
        assert_eq!(after, [0, 1, 3_000_002, 3]);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_lower_middle() {
        let runs = Runs(vec![3.0, 1.0, 2.0, 10.0]);
        assert!((runs.median() - 2.0).abs() < f64::EPSILON);
        assert!(Runs::default().median().is_nan());
    }
}
