//! The directory side of `grep`: the files of a name-sorted walk are searched in parallel and
//! their results handed back strictly in walk order, so output and limits stay deterministic.

use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::channel;
use tokio_util::sync::CancellationToken;

/// Files walked ahead of the next one to report: from the first size, doubled per result, up
/// to the last.
const FIRST_WINDOW: usize = 8;
const LAST_WINDOW: usize = 1024;
/// Files handed to a worker at once: one wake-up and one hand-off per batch instead of per
/// file (on a tree of small files those cost about as much as the search).
const BATCH: usize = 32;

/// One line the search reported: number, bytes (with terminator), whether it matched.
pub(crate) type Line = (u64, Vec<u8>, bool);

/// What searching one file gave.
pub(crate) enum FileOutcome {
    Lines(Vec<Line>),
    Failed(String),
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Searches the files `walk` yields (in its name-sorted order) on worker threads while this
/// thread walks, calling `consume(path, outcome)` in walk order until it returns false (limit
/// reached) or `cancel` fires. Walk errors go to `on_error` in order. A file yields at most
/// `limit + 1` matches. The walk runs ahead of consumption by a window that starts small and
/// doubles, so a search that hits its limit early reads little more than it shows.
pub(crate) fn search_in_order(
    walk: impl Iterator<Item = Result<PathBuf, String>>,
    matcher: &RegexMatcher,
    make_searcher: &(dyn Fn() -> Searcher + Sync),
    limit: usize,
    cancel: &CancellationToken,
    on_error: &mut dyn FnMut(String),
    mut consume: impl FnMut(&PathBuf, FileOutcome) -> bool,
) {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let mut walk = walk;
    let (job_tx, job_rx) = channel::<(usize, Vec<PathBuf>)>();
    let job_rx = Mutex::new(job_rx);
    std::thread::scope(|scope| {
        // Owned by this closure: leaving it (early on a limit or cancel) ends the workers.
        let job_tx = job_tx;
        let (done_tx, done_rx) = channel::<Vec<(usize, PathBuf, FileOutcome)>>();
        for _ in 0..workers {
            let (job_rx, done_tx) = (&job_rx, done_tx.clone());
            scope.spawn(move || {
                let mut searcher = make_searcher();
                loop {
                    let job = lock(job_rx).recv();
                    let Ok((first, paths)) = job else { break };
                    let results = (first..)
                        .zip(paths)
                        .map(|(i, path)| {
                            let outcome = if cancel.is_cancelled() {
                                FileOutcome::Lines(Vec::new())
                            } else {
                                search_file(&mut searcher, matcher, &path, limit)
                            };
                            (i, path, outcome)
                        })
                        .collect();
                    if done_tx.send(results).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let mut window = FIRST_WINDOW;
        let (mut sent, mut consumed) = (0usize, 0usize);
        let mut walk_done = false;
        let mut parked: BTreeMap<usize, (PathBuf, FileOutcome)> = BTreeMap::new();
        let mut batch: Vec<PathBuf> = Vec::with_capacity(BATCH);
        loop {
            while !walk_done && sent - consumed < window {
                match walk.next() {
                    Some(Ok(path)) => {
                        batch.push(path);
                        sent += 1;
                        if batch.len() == BATCH
                            && job_tx
                                .send((sent - BATCH, std::mem::take(&mut batch)))
                                .is_err()
                        {
                            return;
                        }
                    }
                    Some(Err(e)) => on_error(e),
                    None => walk_done = true,
                }
            }
            if !batch.is_empty() {
                let first = sent - batch.len();
                if job_tx.send((first, std::mem::take(&mut batch))).is_err() {
                    return;
                }
            }
            if consumed == sent || cancel.is_cancelled() {
                return;
            }
            let Ok(results) = done_rx.recv() else {
                return;
            };
            for (i, path, outcome) in results {
                parked.insert(i, (path, outcome));
            }
            while let Some((path, outcome)) = parked.remove(&consumed) {
                consumed += 1;
                if !consume(&path, outcome) {
                    // Dropping the job sender ends the workers after their current file.
                    return;
                }
            }
            window = (window * 2).min(LAST_WINDOW);
        }
    });
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

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &PathBuf,
    limit: usize,
) -> FileOutcome {
    let mut sink = Collect {
        lines: Vec::new(),
        matches: 0,
        limit,
    };
    match searcher.search_path(matcher, path, &mut sink) {
        Ok(()) => FileOutcome::Lines(sink.lines),
        Err(err) => FileOutcome::Failed(err.to_string()),
    }
}
