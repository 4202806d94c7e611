//! The directory side of `grep`: the files of a name-sorted walk are searched in parallel and
//! their results handed back strictly in walk order, so output and limits stay deterministic.

use crate::grep_pool::{submit, workers};
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Files walked ahead of the next one to report: from the first size, then as many as the
/// matches seen so far say the limit needs (doubling while none were seen), up to the last.
const FIRST_WINDOW: usize = 8;
const LAST_WINDOW: usize = 1024;
/// Most files handed to a worker at once: one wake-up and one hand-off per batch instead of
/// per file (on a tree of small files those cost about as much as the search). A smaller
/// window is split evenly between the workers.
const BATCH: usize = 32;

/// How many files past the `consumed` ones to have in flight: enough for the matches still
/// missing (one past `limit`, so that the limit shows as reached) at the rate seen so far,
/// with a quarter more in case the rate drops. Reading much further would only search files
/// whose results are thrown away once the limit is hit.
fn next_window(window: usize, consumed: usize, matched: usize, limit: usize) -> usize {
    if matched == 0 {
        return (window * 2).min(LAST_WINDOW);
    }
    let missing = (limit + 1).saturating_sub(matched);
    let files = missing.saturating_mul(consumed).div_ceil(matched);
    files
        .saturating_add(files / 4)
        .clamp(FIRST_WINDOW, LAST_WINDOW)
}

/// The files' matches as the search threads find them, in any order, so that a thread can
/// skip a file whose results cannot be shown: once the files before it hold more matches than
/// the limit, the output ends before it. Within the window the walk keeps ahead, that is most
/// of what would otherwise be searched in vain (in the bench's tool turn, 48 files past the
/// 141 shown: a quarter of the search).
struct Enough {
    /// Files after this index are not needed (`usize::MAX` until known).
    last_needed: AtomicUsize,
    tally: Mutex<Tally>,
    /// Matches that end the output: one past the limit (see `grep::Collector`).
    ending: usize,
}

#[derive(Default)]
struct Tally {
    /// Matches by file index, for the files searched so far that had any.
    found: BTreeMap<usize, usize>,
    /// The matches of the files in `found` up to `last_needed` (all of them until it is
    /// known); `last_needed` is moved back while they reach the ending without its own, so
    /// each file is dropped at most once (a search with a large limit over a large tree
    /// records many files).
    sum: usize,
}

impl Enough {
    fn new(limit: usize) -> Enough {
        Enough {
            last_needed: AtomicUsize::new(usize::MAX),
            tally: Mutex::new(Tally::default()),
            ending: limit.saturating_add(1),
        }
    }

    fn needed(&self, file: usize) -> bool {
        file <= self.last_needed.load(Relaxed)
    }

    /// Records that `file` had `matches` (a file's search stops one past the limit, so this
    /// never overcounts what the output takes from it). The output's last match is in the
    /// first file where the matches so far reach the ending, or earlier: files not yet
    /// searched can only move it earlier.
    fn record(&self, file: usize, matches: usize) {
        if matches == 0 {
            return;
        }
        let mut tally = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        let last = self.last_needed.load(Relaxed);
        if file > last {
            return;
        }
        tally.found.insert(file, matches);
        tally.sum += matches;
        if tally.sum < self.ending {
            return;
        }
        // From the last file counted back: drop each while the rest still reach the ending
        // (until now `last` was `usize::MAX` or the files past it were already dropped).
        let Tally { found, sum } = &mut *tally;
        let mut files = found.range(..=last).rev().peekable();
        let mut last = last;
        while let Some((&i, &n)) = files.next() {
            last = i;
            if files.peek().is_none() || *sum - n < self.ending {
                break;
            }
            *sum -= n;
        }
        self.last_needed.store(last, Relaxed);
    }
}

fn match_count(outcome: &FileOutcome) -> usize {
    match outcome {
        FileOutcome::Lines(lines) => lines.iter().filter(|(_, _, is_match)| *is_match).count(),
        FileOutcome::Failed(_) => 0,
    }
}

/// One line the search reported: number, bytes (with terminator), whether it matched.
pub(crate) type Line = (u64, Vec<u8>, bool);

/// What searching one file gave.
pub(crate) enum FileOutcome {
    Lines(Vec<Line>),
    Failed(String),
}

/// How the files are searched: the same for every file of one call.
pub(crate) struct SearchSpec {
    pub matcher: RegexMatcher,
    pub make_searcher: Box<dyn Fn() -> Searcher + Send + Sync>,
    /// A file yields at most `limit + 1` matches.
    pub limit: usize,
}

/// Searches the files `walk` yields (in its name-sorted order) on the search threads
/// (`grep_pool`) while this thread walks, calling `consume(path, outcome)` in walk order until it
/// returns false (limit reached) or `cancel` fires. Walk errors go to `on_error` in order. The
/// walk runs ahead of consumption by a window that starts small and then follows the matches
/// seen, so a search that hits its limit early reads little more than it shows.
pub(crate) fn search_in_order(
    walk: impl Iterator<Item = Result<PathBuf, String>>,
    spec: SearchSpec,
    cancel: &CancellationToken,
    on_error: &mut dyn FnMut(String),
    mut consume: impl FnMut(&PathBuf, FileOutcome) -> bool,
) {
    let workers = workers();
    let limit = spec.limit;
    let spec = Arc::new(spec);
    // Raised when this call is over (limit reached, cancelled, walk done): jobs still queued or
    // running for it skip their files instead of searching what nobody will read.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(stop.clone());
    let enough = Arc::new(Enough::new(limit));
    let (done_tx, done_rx) = channel::<Vec<(usize, PathBuf, FileOutcome)>>();
    let send_batch = |first: usize, paths: Vec<PathBuf>| {
        let (spec, stop, enough, cancel, done_tx) = (
            spec.clone(),
            stop.clone(),
            enough.clone(),
            cancel.clone(),
            done_tx.clone(),
        );
        submit(Box::new(move |buf: &mut Vec<u8>| {
            let mut searcher =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (spec.make_searcher)()))
                    .ok();
            let results = (first..)
                .zip(paths)
                .map(|(i, path)| {
                    // A file skipped here is past where the output ends, never consumed.
                    let outcome =
                        if cancel.is_cancelled() || stop.load(Relaxed) || !enough.needed(i) {
                            FileOutcome::Lines(Vec::new())
                        } else if let Some(searcher) = &mut searcher {
                            let outcome = search_guarded(searcher, &spec, &path, buf);
                            enough.record(i, match_count(&outcome));
                            outcome
                        } else {
                            FileOutcome::Failed(PANICKED.into())
                        };
                    (i, path, outcome)
                })
                .collect();
            let _ = done_tx.send(results);
        }));
    };
    let mut walk = walk;
    let mut window = FIRST_WINDOW;
    let (mut sent, mut consumed, mut matched) = (0usize, 0usize, 0usize);
    let mut walk_done = false;
    let mut parked: BTreeMap<usize, (PathBuf, FileOutcome)> = BTreeMap::new();
    let mut batch: Vec<PathBuf> = Vec::with_capacity(BATCH);
    loop {
        let batch_size = window.div_ceil(workers).clamp(1, BATCH);
        while !walk_done && sent - consumed < window {
            match walk.next() {
                Some(Ok(path)) => {
                    batch.push(path);
                    sent += 1;
                    if batch.len() == batch_size {
                        send_batch(sent - batch_size, std::mem::take(&mut batch));
                    }
                }
                Some(Err(e)) => on_error(e),
                None => walk_done = true,
            }
        }
        if !batch.is_empty() {
            send_batch(sent - batch.len(), std::mem::take(&mut batch));
        }
        if consumed == sent || cancel.is_cancelled() {
            return;
        }
        // Every batch sends its results (a panic is reported as failed files; this function
        // holds a sender too, so a lost batch would wait forever), so this wait ends.
        let Ok(results) = done_rx.recv() else {
            return;
        };
        for (i, path, outcome) in results {
            parked.insert(i, (path, outcome));
        }
        while let Some((path, outcome)) = parked.remove(&consumed) {
            consumed += 1;
            matched += match_count(&outcome);
            if !consume(&path, outcome) {
                return;
            }
        }
        window = next_window(window, consumed, matched, limit);
    }
}

/// A file's error when its search panicked (a bug, reported rather than losing the file).
const PANICKED: &str = "the search panicked";

/// [`search_file`], with a panic in the search reported as the file's failure.
fn search_guarded(
    searcher: &mut Searcher,
    spec: &SearchSpec,
    path: &PathBuf,
    buf: &mut Vec<u8>,
) -> FileOutcome {
    let searched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        search_file(searcher, &spec.matcher, path, spec.limit, buf)
    }));
    searched.unwrap_or_else(|_| FileOutcome::Failed(PANICKED.into()))
}

/// Raises its flag when dropped, however the search is left.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// A file's lines, up to the one match past `limit` (all the output ever needs from one file).
struct Collect {
    lines: Vec<Line>,
    matches: usize,
    limit: usize,
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.lines
            .push((m.line_number().unwrap_or(0), m.bytes().to_vec(), true));
        self.matches += 1;
        Ok(self.matches <= self.limit)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.lines
            .push((c.line_number().unwrap_or(0), c.bytes().to_vec(), false));
        Ok(true)
    }
}

/// Files up to this size are read whole and searched as a slice. It is the searcher's first
/// buffer: the reader path (ripgrep's for a walk) looks for binary data in each buffer it
/// fills, the slice path only in the first this many bytes, so within it both agree.
const WHOLE_FILE: usize = 64 * 1024;

/// Searches `path` like `Searcher::search_path`, with the same results: a file of at most
/// [`WHOLE_FILE`] bytes is read in one call into `buf` (reused between files) and searched as a
/// slice, without the reader path's BOM sniffing read and copy through its decoder (a byte
/// order mark still sends the slice to the transcoding path); a longer one continues on the
/// reader path from what was read.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &PathBuf,
    limit: usize,
    buf: &mut Vec<u8>,
) -> FileOutcome {
    let mut sink = Collect {
        lines: Vec::new(),
        matches: 0,
        limit,
    };
    let searched = match read_head(path, buf) {
        Ok(Head::Whole(len)) => searcher.search_slice(matcher, &buf[..len], &mut sink),
        Ok(Head::Longer(rest)) => {
            searcher.search_reader(matcher, std::io::Read::chain(&buf[..], rest), &mut sink)
        }
        Err(err) => Err(err),
    };
    match searched {
        Ok(()) => FileOutcome::Lines(sink.lines),
        Err(err) => FileOutcome::Failed(err.to_string()),
    }
}

/// What [`read_head`] found.
enum Head {
    /// The whole file: the first this many bytes of the buffer.
    Whole(usize),
    /// More than [`WHOLE_FILE`] bytes: the buffer is full and the file positioned after it.
    Longer(std::fs::File),
}

/// Reads `path` into `buf` up to one byte past [`WHOLE_FILE`]. The buffer keeps its length
/// between files (it is only overwritten), so no file pays for clearing it.
fn read_head(path: &PathBuf, buf: &mut Vec<u8>) -> std::io::Result<Head> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    if buf.len() != WHOLE_FILE + 1 {
        buf.resize(WHOLE_FILE + 1, 0);
    }
    let mut filled = 0;
    loop {
        match file.read(&mut buf[filled..]) {
            Ok(0) => return Ok(Head::Whole(filled)),
            Ok(n) => {
                filled += n;
                if filled == buf.len() {
                    return Ok(Head::Longer(file));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_regex::RegexMatcherBuilder;
    use grep_searcher::{BinaryDetection, SearcherBuilder};

    fn outcome_text(o: &FileOutcome) -> String {
        match o {
            FileOutcome::Lines(lines) => lines
                .iter()
                .map(|(n, t, m)| {
                    format!(
                        "{n}{}{}",
                        if *m { ':' } else { '-' },
                        String::from_utf8_lossy(t)
                    )
                })
                .collect(),
            FileOutcome::Failed(e) => format!("failed: {e}"),
        }
    }

    /// Whole-file slices and the reader path give the same lines for every case the two
    /// could part on: sizes around the cut, binary bytes before and after the first buffer,
    /// byte order marks, context lines, files without a final newline, a missing file.
    #[test]
    fn reading_whole_files_finds_what_the_reader_path_finds() {
        let dir = std::env::temp_dir().join(format!("pi-grep-walk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = b"alpha needle beta\n";
        let filler = |n: usize| -> Vec<u8> { b"x".repeat(n) };
        let mut cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("small", [&line[..], b"no\n", line].concat()),
            ("no-final-newline", b"needle".to_vec()),
            ("utf8-bom", [&b"\xEF\xBB\xBF"[..], line].concat()),
            (
                "utf16le-bom",
                [
                    &b"\xFF\xFE"[..],
                    &"needle\n"
                        .encode_utf16()
                        .flat_map(u16::to_le_bytes)
                        .collect::<Vec<u8>>(),
                ]
                .concat(),
            ),
            ("nul-early", [&line[..], b"\0\n", line].concat()),
        ];
        for size in [WHOLE_FILE - 1, WHOLE_FILE, WHOLE_FILE + 1, 3 * WHOLE_FILE] {
            let mut text = line.to_vec();
            text.extend(filler(size.saturating_sub(2 * line.len() + 1)));
            text.push(b'\n');
            text.extend_from_slice(line);
            text.truncate(size);
            cases.push(("sized", text.clone()));
            let mut late_nul = text;
            late_nul.extend(filler(2 * WHOLE_FILE));
            late_nul.extend_from_slice(b"\0\n");
            late_nul.extend_from_slice(line);
            cases.push(("nul-late", late_nul));
        }
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build("needle")
            .unwrap();
        for context in [0, 1] {
            let make = || {
                SearcherBuilder::new()
                    .line_number(true)
                    .before_context(context)
                    .after_context(context)
                    .binary_detection(BinaryDetection::quit(b'\x00'))
                    .build()
            };
            let mut buf = Vec::new();
            for (i, (name, bytes)) in cases.iter().enumerate() {
                let path = dir.join(format!("{i}-{name}"));
                std::fs::write(&path, bytes).unwrap();
                let ours = search_file(&mut make(), &matcher, &path, 100, &mut buf);
                let mut sink = Collect {
                    lines: Vec::new(),
                    matches: 0,
                    limit: 100,
                };
                let theirs = match make().search_path(&matcher, &path, &mut sink) {
                    Ok(()) => FileOutcome::Lines(sink.lines),
                    Err(e) => FileOutcome::Failed(e.to_string()),
                };
                assert_eq!(
                    outcome_text(&ours),
                    outcome_text(&theirs),
                    "{name} ({} bytes), context {context}",
                    bytes.len()
                );
            }
            let missing = dir.join("missing");
            let ours = search_file(&mut make(), &matcher, &missing, 100, &mut buf);
            assert!(
                outcome_text(&ours).starts_with("failed: "),
                "{}",
                outcome_text(&ours)
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
