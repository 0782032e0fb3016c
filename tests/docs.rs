//! The reference docs held to the code where a test can read both: `docs/error-codes.md`'s table
//! against `ErrorCode`, and `ARCHITECTURE.md`'s module tables against the crates' source files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pleach_core::ErrorCode;

fn workspace_file(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Every row of `docs/error-codes.md`'s table is an `ErrorCode` with that number, name and default
/// recoverability, and every `ErrorCode` has a row.
#[test]
fn the_error_code_table_matches_error_code() {
    let doc = workspace_file("docs/error-codes.md");
    let mut rows = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| 1001 | `InputInvalid` | meaning | yes | raised by |`
        if cells.len() < 6 {
            continue;
        }
        let Ok(number) = cells[1].parse::<u16>() else {
            continue;
        };
        let name = cells[2].trim_matches('`').to_owned();
        let recoverable = match cells[4] {
            "yes" => true,
            "no" => false,
            other => panic!("code {number}: recoverable is {other:?}, not yes or no"),
        };
        rows.push((number, name, recoverable));
    }
    let code: Vec<(u16, String, bool)> = ErrorCode::ALL
        .iter()
        .map(|code| {
            (
                code.as_u16(),
                format!("{code:?}"),
                code.default_recoverable(),
            )
        })
        .collect();
    assert_eq!(
        rows, code,
        "docs/error-codes.md's table (left) and ErrorCode (right) differ"
    );
}

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every source file of the crates ARCHITECTURE.md maps module by module is named in its section
/// of that file: a module added without a line in the map fails here. A file is named by its
/// module's name in backticks (`session/`, `pipeline.rs`, `` `span` ``), the way the tables
/// write them.
#[test]
fn architecture_md_names_every_module_of_the_mapped_crates() {
    let doc = workspace_file("ARCHITECTURE.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut missing = BTreeSet::new();
    for krate in ["pleach-contract", "pleach-core", "pleach-mcp"] {
        let heading = format!("### {krate}\n");
        let start = doc
            .find(&heading)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{}` section", heading.trim()));
        let section = &doc[start + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        let src = root.join(krate).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let relative = file.strip_prefix(&src).expect("under src");
            let stem = relative
                .file_stem()
                .and_then(|stem| stem.to_str())
                .expect("a UTF-8 file name");
            // A folder module is named by its folder; `lib.rs` by the crate's section; a module's
            // unit tests (`tests.rs`) by the module they test.
            let name = match stem {
                "lib" | "tests" => continue,
                "mod" => relative
                    .parent()
                    .and_then(Path::file_name)
                    .and_then(|name| name.to_str())
                    .expect("a folder name")
                    .to_owned(),
                stem => stem.to_owned(),
            };
            // `` `name` ``, `` `name/` ``, `` `name.rs` `` or a path ending in `name.rs`.
            let named = [
                format!("`{name}`"),
                format!("`{name}/"),
                format!("`{name}."),
                format!("/{name}.rs"),
            ]
            .iter()
            .any(|form| section.contains(form.as_str()));
            if !named {
                missing.insert(format!("{krate}/src/{}", relative.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's module tables do not name these files (add a line saying what each owns):\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}
