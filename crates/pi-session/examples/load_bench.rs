//! Measures opening a session file and answering from it, with peak memory:
//!
//!     cargo run --release -p pi-session --example load_bench -- <session.jsonl>
//!
//! The file is opened in place (a file that needs repair or migration is modified).

use pi_js::json::to_js_string;
use pi_session::SessionStore;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes, to tell the data's own size from allocator overhead in the RSS.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);
/// Counting costs time (two parser threads contend on the counters): only with
/// `LOAD_BENCH_COUNT=1`.
static COUNT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

// SAFETY: forwards to the system allocator unchanged; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNT.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNT.load(Ordering::Relaxed) {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's; forwarding keeps glibc's in-place growth.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNT.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            BLOCKS.fetch_sub(1, Ordering::Relaxed);
        }
        // SAFETY: ptr came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak resident set size in bytes (Linux), or 0.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// User + system CPU time of this process so far, in seconds (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: load_bench <session.jsonl>");
        std::process::exit(2);
    };
    COUNT.store(
        std::env::var_os("LOAD_BENCH_COUNT").is_some(),
        Ordering::Relaxed,
    );
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let base = peak_rss();
    let cpu = cpu_seconds();
    let t = Instant::now();
    let store = match SessionStore::open(Path::new(&path), None, None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let open = t.elapsed();
    let open_cpu = cpu_seconds() - cpu;
    println!(
        "after open: live heap {:.1} MB in {} blocks, peak RSS {:.1} MB",
        LIVE.load(Ordering::Relaxed) as f64 / 1_048_576.0,
        BLOCKS.load(Ordering::Relaxed),
        peak_rss() as f64 / 1_048_576.0
    );
    if std::env::var_os("LOAD_BENCH_MALLOC_STATS").is_some() {
        // SAFETY: glibc's report of its arenas, printed to stderr.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_stats()
        };
    }
    if std::env::var_os("LOAD_BENCH_TRIM").is_some() {
        // SAFETY: returns free heap pages to the system; no pointers are affected.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0)
        };
        let rss = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let line = rss.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("");
        println!("after trim: {line}");
    }
    if std::env::var_os("LOAD_BENCH_OPEN_ONLY").is_some() {
        println!("open {open:?} (CPU {open_cpu:.2} s)");
        return;
    }
    let t = Instant::now();
    let ctx = store.build_context();
    let context = t.elapsed();
    let after_context = peak_rss();
    let t = Instant::now();
    let messages_json = to_js_string(&ctx.messages).map(|s| s.len()).unwrap_or(0);
    let messages = t.elapsed();
    drop(ctx);
    let t = Instant::now();
    let entries_json = to_js_string(store.entries()).map(|s| s.len()).unwrap_or(0);
    let entries = t.elapsed();
    let t = Instant::now();
    let tree_json = store.tree().to_json().map(|s| s.len()).unwrap_or(0);
    let tree = t.elapsed();
    let mb = |b: u64| b as f64 / 1_048_576.0;
    println!(
        "file {:.1} MB, {} entries\nopen {:?} (CPU {:.2} s)\nbuild_context {:?} (peak RSS so far {:.1} MB = {:.2}x file, baseline {:.1} MB)\nget_messages JSON {:?} ({:.1} MB)\nget_entries JSON {:?} ({:.1} MB)\nget_tree JSON {:?} ({:.1} MB)\npeak RSS {:.1} MB",
        mb(size),
        store.entry_count(),
        open,
        open_cpu,
        context,
        mb(after_context),
        after_context as f64 / size.max(1) as f64,
        mb(base),
        messages,
        mb(messages_json as u64),
        entries,
        mb(entries_json as u64),
        tree,
        mb(tree_json as u64),
        mb(peak_rss()),
    );
}
