//! libFuzzer target: arbitrary stdin bytes through the RPC framing (whole and cut into reads),
//! `JSON.parse` and the command decoder, with the invariants of `tests/fuzz/input.rs`.

#![no_main]

#[path = "../../crates/pi-coding-agent/src/modes/rpc/framing.rs"]
#[allow(dead_code)]
mod framing;
#[path = "../../crates/pi-coding-agent/tests/fuzz/input.rs"]
#[allow(dead_code)]
mod input;

use framing::{Frame, LineSplitter};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The first byte sets the read size, so the same lines are also framed across reads.
    let Some((&step, bytes)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let mut whole = Vec::new();
    let mut s = LineSplitter::new();
    s.push(bytes, &mut whole);
    whole.extend(s.finish());
    let mut pieces = Vec::new();
    let mut s = LineSplitter::new();
    for chunk in bytes.chunks(step) {
        s.push(chunk, &mut pieces);
    }
    pieces.extend(s.finish());
    assert_eq!(whole, pieces, "framing depends on read boundaries");
    for frame in whole {
        if let Frame::Line(line) = frame {
            input::check_line(&line);
        }
    }
});
