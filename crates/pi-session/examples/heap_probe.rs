#![allow(unsafe_code, clippy::unwrap_used)]
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
struct Counting;
static CUR: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        let c = CUR.fetch_add(l.size(), Relaxed) + l.size();
        PEAK.fetch_max(c, Relaxed);
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        CUR.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, n) };
        if n >= l.size() { let c = CUR.fetch_add(n - l.size(), Relaxed) + n - l.size(); PEAK.fetch_max(c, Relaxed); } else { CUR.fetch_sub(l.size() - n, Relaxed); }
        q
    }
}
#[global_allocator]
static A: Counting = Counting;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let s = pi_session::SessionStore::open(std::path::Path::new(&path), None, None).unwrap();
    println!("live {:.1} MB peak {:.1} MB entries {} size_of entry {}", CUR.load(Relaxed) as f64/1048576.0, PEAK.load(Relaxed) as f64/1048576.0, s.entry_count(), std::mem::size_of::<pi_protocol::SessionEntry>());
    let c = s.build_context();
    println!("with context live {:.1} MB peak {:.1} MB ({} msgs)", CUR.load(Relaxed) as f64/1048576.0, PEAK.load(Relaxed) as f64/1048576.0, c.messages.len());
}
