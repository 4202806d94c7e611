//! Replays every conformance scenario (`conformance/scenarios/`) against our `pi` binary and
//! compares with the goldens recorded from Pi 1.6.0. Scenarios listed in
//! `conformance/expected-failures.txt` must fail (the list only shrinks); all others must match.
//! Re-record goldens with `conformance/record` (needs Node; CI does not).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::io::Write;
use std::path::PathBuf;

use pi_test_support::conformance::Target;
use pi_test_support::conformance::suite::{self, Layout, SuiteOptions};

/// Installs the extension host into the shared cache once, so the scenarios that start at the
/// same moment do not all unpack it (as on a user's machine, where it happens once).
#[allow(unsafe_code)]
fn prepare_extension_host(cache_dir: &std::path::Path, node22: &std::path::Path) {
    // SAFETY: this test binary has one test, which sets it before starting any thread.
    unsafe { std::env::set_var("XDG_CACHE_HOME", cache_dir) };
    let node = node22.join("node");
    let node = if node.is_file() {
        node
    } else {
        match pi_ext_host::find_node() {
            Some(n) => n,
            None => return,
        }
    };
    if let Err(e) = pi_ext_host::prepare(&node) {
        eprintln!("could not prepare the extension host: {e}");
    }
}

#[test]
fn conformance_scenarios_match_goldens() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    // Extension scenarios need Node 22 for the extension host: the one scripts/install-node
    // put next to the reference, else whatever `node` the system has.
    let node22 = root.join(".reference/node22/package/bin");
    let mut path_env = String::from("/usr/local/bin:/usr/bin:/bin");
    if node22.join("node").is_file() {
        path_env = format!("{}:{path_env}", node22.display());
    }
    let cache_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("conformance-cache");
    prepare_extension_host(&cache_dir, &node22);
    let layout = Layout::new(root);
    let target = Target {
        label: "pi (ours)".into(),
        program: PathBuf::from(env!("CARGO_BIN_EXE_pi")),
        args: Vec::new(),
        path_env,
        package_dir: None,
        cache_dir: Some(cache_dir.display().to_string()),
    };
    let mut opts = SuiteOptions::replay();
    if let Ok(names) = std::env::var("CONFORMANCE_ONLY") {
        opts.names = names.split(',').map(|s| s.trim().to_string()).collect();
    }
    let report = suite::replay_blocking(&layout, &target, &opts);
    // Written past the test harness's capture so the figure shows in every run.
    let _ = writeln!(std::io::stdout().lock(), "{}", report.summary_line());
    let problems = report.problems();
    assert!(
        problems.is_empty(),
        "{}\n\n{}",
        problems.join("\n\n"),
        report.summary_line()
    );
}
