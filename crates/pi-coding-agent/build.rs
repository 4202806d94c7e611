//! Release builds of `pi` on Linux (all but the last point on glibc only):
//!
//! * store their relative relocations packed (`DT_RELR`): the table shrinks from ~340 KB
//!   (14,000 entries the loader reads at every start) to ~7 KB, which measured 1 MiB less
//!   resident memory after startup. It needs GNU ld ≥ 2.38 or lld and glibc ≥ 2.36 where the
//!   binary runs; `PI_NO_PACKED_RELOCS=1` turns it off.
//! * lay out the functions a start and a first prompt run next to each other
//!   (`link/symbol-order.txt`, made by `scripts/gen-symbol-order`): the kernel maps a binary's
//!   code 64 KB around every page first touched, and these ~1,500 functions (about 1 MB) are
//!   otherwise spread over all 10 MB of it (measured: 6.3 → 2.0 MB of the binary's code
//!   resident after a start, 8.4 → 2.5 MB after a tool turn). It needs lld, rustc's default
//!   linker for x86-64 Linux since 1.90, so it is used only there and only when no other
//!   linker is configured (`RUSTC_LINKER`, `-C linker…` in the flags); `PI_NO_SYMBOL_ORDER=1`
//!   turns it off. Names missing from a build (the list went stale) are skipped;
//!   `tests/link_order.rs` fails when Cargo.lock changed since the list was made. Moving
//!   functions to another module renames them too, which no test sees: regenerate after such
//!   moves (seen: idle RSS 5.33 → 5.69 MiB, a fleet's 379 → 408 MiB).
//! * take the unwinder from libgcc's static archive (`libgcc_eh.a`, as `-static-libgcc` does
//!   for C++) instead of loading `libgcc_s.so.1`: one shared object less for the loader to map
//!   and bind at every start, and its constructor, which probes the CPU with `cpuid` (a trap to
//!   the hypervisor on a VM), does not run. rustc asks for `-lgcc_s` itself, so a one-line linker
//!   script of that name in OUT_DIR, searched first, points the link at the archive; skipped
//!   when the C compiler does not know the archive. `PI_NO_STATIC_UNWIND=1` turns it off.
//! * are stripped of symbols by the linker, not by the profile (which would rename every
//!   symbol, see the workspace `Cargo.toml`); `PI_NO_STRIP=1` keeps them, for
//!   `scripts/gen-symbol-order` and profilers.

fn main() {
    println!("cargo:rerun-if-env-changed=PI_NO_PACKED_RELOCS");
    println!("cargo:rerun-if-env-changed=PI_NO_SYMBOL_ORDER");
    println!("cargo:rerun-if-env-changed=PI_NO_STRIP");
    println!("cargo:rerun-if-env-changed=PI_NO_STATIC_UNWIND");
    println!("cargo:rerun-if-changed=link/symbol-order.txt");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("PROFILE") != "release" {
        return;
    }
    if std::env::var_os("PI_NO_STRIP").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,--strip-all");
    }
    if var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    if std::env::var_os("PI_NO_PACKED_RELOCS").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if std::env::var_os("PI_NO_STATIC_UNWIND").is_none()
        && var("HOST") == var("TARGET")
        && let Some(dir) = static_unwinder_shim()
    {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("link/symbol-order.txt");
    if std::env::var_os("PI_NO_SYMBOL_ORDER").is_none()
        && order.is_file()
        && links_with_rust_lld(&var)
    {
        let order = expand_order(&order).unwrap_or(order);
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// How far an LLVM uniquing suffix may move between the build the order was recorded from and
/// this one (measured: a few; an extra copy costs nothing when it does not exist).
const SUFFIX_DRIFT: u64 = 400;

/// Local functions that several crates each carry (`#[inline]` code such as a derived
/// `clone`) get LLVM suffixes under LTO (`…E.6338`), numbered by the order the module was
/// merged in, so any code change can renumber them and the recorded names miss the copy that
/// runs. Every such name is widened to its plain name and the suffixes around the recorded one
/// (written to OUT_DIR); a start's code then stays together when the code changes.
fn expand_order(order: &std::path::Path) -> Option<std::path::PathBuf> {
    use std::fmt::Write;
    let text = std::fs::read_to_string(order).ok()?;
    let mut out = String::with_capacity(text.len() * 2);
    for name in text.lines() {
        let suffixed = name
            .rsplit_once('.')
            .and_then(|(base, n)| Some((base, n.parse::<u64>().ok()?)));
        match suffixed {
            Some((base, n)) => {
                let _ = writeln!(out, "{name}");
                let _ = writeln!(out, "{base}");
                for m in n.saturating_sub(SUFFIX_DRIFT)..n + SUFFIX_DRIFT {
                    if m != n {
                        let _ = writeln!(out, "{base}.{m}");
                    }
                }
            }
            None => {
                let _ = writeln!(out, "{name}");
            }
        }
    }
    let path = std::path::Path::new(&std::env::var("OUT_DIR").ok()?).join("symbol-order.txt");
    std::fs::write(&path, out).ok()?;
    Some(path)
}

/// A directory holding `libgcc_s.so` as a linker script that names the C compiler's
/// `libgcc_eh.a`, or None when the compiler has no such archive (it then prints the bare name).
fn static_unwinder_shim() -> Option<std::path::PathBuf> {
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let out = std::process::Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let archive = std::path::PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    if !out.status.success() || !archive.is_absolute() || !archive.is_file() {
        return None;
    }
    let dir = std::path::Path::new(&std::env::var("OUT_DIR").ok()?).join("static-unwind");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::write(
        dir.join("libgcc_s.so"),
        format!("INPUT({})\n", archive.display()),
    )
    .ok()?;
    Some(dir)
}

/// Whether the binary is linked by the rust-lld rustc uses by default for x86-64 Linux since
/// 1.90 (GNU ld does not know `--symbol-ordering-file` and would fail the link).
fn links_with_rust_lld(var: &dyn Fn(&str) -> String) -> bool {
    if var("CARGO_CFG_TARGET_ARCH") != "x86_64"
        || !var("RUSTC_LINKER").is_empty()
        || var("CARGO_ENCODED_RUSTFLAGS").contains("link")
    {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    // "release: 1.95.0"
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("release: "))
        .and_then(|v| {
            let mut parts = v.split('.');
            Some((
                parts.next()?.parse::<u32>().ok()?,
                parts.next()?.parse::<u32>().ok()?,
            ))
        });
    matches!(version, Some((major, minor)) if major > 1 || minor >= 90)
}
