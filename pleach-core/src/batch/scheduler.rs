//! The scheduler: one step's items started by their lanes (serial, parallel with a limit, chunked
//! by key) under the global cap, their outputs in item order.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::future::Future;

use super::{BatchingConfig, Lane};

/// After this many items that finished as they started, the step's loop yields to other tasks.
const YIELD_EVERY: u32 = 128;

/// How an item started: already finished (its output), or a future to drive.
pub(crate) enum Step<T, Fut> {
    /// The item ran to its end as it started.
    Done(T),
    /// The item's future.
    Later(Fut),
}

/// Runs items under `lanes`: the loop behind [`ToolBatchExecutor::run`] and every session turn.
///
/// `start(index)` starts an item when its lane lets it: an item that finishes right there frees
/// its place at once, and no future is made for it (the runtime's cooperative budget still
/// applies, so a long run of such items yields to other tasks now and then). Once `stop` fires, nothing
/// more starts: `never(index)` gives the output of each item that had not started (at once), and
/// the running ones are awaited (they watch `stop` themselves). A future that panics leaves
/// `None`.
///
/// `start` and `pause` share `held`, what a run of starts keeps between them (a session's turn:
/// one runtime-wide slot for its calls that run in place, one after another). `pause(held)` runs
/// whenever the loop stops starting items: before it yields to other tasks (every
/// [`YIELD_EVERY`] items that finished at start) and before it waits for running ones.
pub(crate) async fn run_scheduled<T, H, F, Fut, N, P>(
    lanes: &[Lane],
    config: BatchingConfig,
    stop: Option<&tokio_util::sync::CancellationToken>,
    held: &mut H,
    mut start: F,
    mut never: N,
    mut pause: P,
) -> Vec<Option<T>>
where
    T: Send + 'static,
    F: FnMut(&mut H, usize) -> Step<T, Fut>,
    Fut: Future<Output = T> + Send + 'static,
    N: FnMut(usize) -> Option<T>,
    P: FnMut(&mut H),
{
    let mut schedule = Schedule::new(lanes, config);
    let mut outputs: Vec<Option<T>> = (0..lanes.len()).map(|_| None).collect();
    let mut running = Running::new();
    let mut stopped = false;
    let mut finished_at_start = 0_u32;
    // Made once: a wait on a token registers with it, and one per finished item would cost a
    // lock to register and another to leave.
    let mut stop_fired = std::pin::pin!(async {
        match stop {
            Some(stop) => stop.cancelled().await,
            None => std::future::pending().await,
        }
    });
    loop {
        if !stopped && stop.is_some_and(tokio_util::sync::CancellationToken::is_cancelled) {
            stopped = true;
            for index in schedule.unstarted() {
                outputs[index] = never(index);
            }
        }
        if !stopped {
            let mut noticed_stop = false;
            while let Some(index) = schedule.next() {
                match start(held, index) {
                    Step::Later(future) => running.push(index, future),
                    Step::Done(output) => {
                        outputs[index] = Some(output);
                        schedule.finish(index);
                        // Finished items never wait, so a long run of them gives other tasks
                        // (the events' reader, say) their turn now and then; and the step's token
                        // is looked at now and then, as it is not awaited here.
                        finished_at_start = finished_at_start.wrapping_add(1);
                        if finished_at_start.is_multiple_of(YIELD_EVERY) {
                            pause(held);
                            tokio::task::yield_now().await;
                        }
                        if finished_at_start.is_multiple_of(32)
                            && stop.is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
                        {
                            noticed_stop = true;
                            break;
                        }
                    }
                }
            }
            // Nothing more starts now: what the starts hold is let go before anything else of
            // the step runs (or waits).
            pause(held);
            if noticed_stop {
                // The top of the loop ends the items that will not start now.
                continue;
            }
        }
        let finished = if stopped {
            running.next().await
        } else {
            // Once it fires, the next round sees the token cancelled and never polls it again.
            tokio::select! {
                biased;
                finished = running.next() => finished,
                () = &mut stop_fired => continue,
            }
        };
        let Some((index, output)) = finished else {
            // Nothing running: either every item is done, or the step was stopped and the
            // unstarted ones have their outputs already.
            break;
        };
        schedule.finish(index);
        outputs[index] = output;
    }
    outputs
}

/// The started items of a step: polled in place (a current-thread runtime, where a task per item
/// buys nothing), or spawned (a multi-thread runtime, so they use every worker).
enum Running<T, Fut> {
    Inline(futures_util::stream::FuturesUnordered<Indexed<Fut>>),
    Spawned {
        tasks: tokio::task::JoinSet<T>,
        index_of: HashMap<tokio::task::Id, usize>,
    },
}

/// Whether the current runtime runs tasks on several threads (so a step spawns what it starts,
/// and CPU-heavy calls use every worker).
pub(crate) fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
}

impl<T: Send + 'static, Fut: Future<Output = T> + Send + 'static> Running<T, Fut> {
    fn new() -> Self {
        if on_multi_thread_runtime() {
            Running::Spawned {
                tasks: tokio::task::JoinSet::new(),
                index_of: HashMap::new(),
            }
        } else {
            Running::Inline(futures_util::stream::FuturesUnordered::new())
        }
    }

    fn push(&mut self, index: usize, future: Fut) {
        match self {
            Running::Inline(running) => running.push(Indexed { index, future }),
            Running::Spawned { tasks, index_of } => {
                // In the turn's span, as an inline call is.
                let id = tasks
                    .spawn(tracing::Instrument::in_current_span(future))
                    .id();
                index_of.insert(id, index);
            }
        }
    }

    /// The next item to finish and its output (`None` for a panic), or `None` when none runs.
    async fn next(&mut self) -> Option<(usize, Option<T>)> {
        use futures_util::StreamExt;
        match self {
            Running::Inline(running) => running.next().await,
            Running::Spawned { tasks, index_of } => loop {
                let joined = tasks.join_next_with_id().await?;
                let (id, output) = match joined {
                    Ok((id, output)) => (id, Some(output)),
                    Err(error) => (error.id(), None),
                };
                // Every spawned id was recorded; a missing one would be a bug, not a reason to
                // stop waiting for the others.
                if let Some(index) = index_of.remove(&id) {
                    return Some((index, output));
                }
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// An item's future with its index; a panic while polling it ends the item with `None`.
    struct Indexed<Fut> {
        index: usize,
        #[pin]
        future: Fut,
    }
}

impl<Fut: Future> Future for Indexed<Fut> {
    type Output = (usize, Option<Fut::Output>);

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let index = *this.index;
        let future = this.future;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx))) {
            Ok(std::task::Poll::Ready(output)) => std::task::Poll::Ready((index, Some(output))),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready((index, None)),
        }
    }
}

/// Which items of a step may start, as items finish: plain bookkeeping, owned by the one task
/// that drives the step, so starting or finishing an item takes no lock and no wake-up. A few
/// bytes per item (a step can hold many thousands): counters are `u32`, and the dependency graph
/// is stored as one array of edges grouped by item.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// For each item, how many of the items it waits for have not finished.
    remaining: Vec<u32>,
    /// The items waiting for item `i` are `waiting_for[edges_at[i]..edges_at[i + 1]]`; both are
    /// empty when no item waits for another.
    edges_at: Vec<u32>,
    waiting_for: Vec<u32>,
    /// For each item, its per-tool limit group ([`NO_GROUP`] for none); empty when no item has
    /// one.
    group_of: Vec<u32>,
    /// For each limit group, its free places.
    group_room: Vec<usize>,
    /// For each limit group, its ready items waiting for a free place, in item order.
    group_waiting: Vec<VecDeque<u32>>,
    /// Items whose dependencies are done, smallest index first: those ready from the start in
    /// a queue (they come in index order, so taking one costs nothing), the ones made ready
    /// since in a heap.
    ready: Ready,
    /// Free places under the global cap.
    room: usize,
    started: Vec<bool>,
}

/// `group_of` for an item in no limit group.
const NO_GROUP: u32 = u32::MAX;

/// An item's index as the schedule stores it. A step cannot come near `u32::MAX` items: its
/// lanes alone would take 128 GiB.
fn item(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

impl Schedule {
    pub(crate) fn new(lanes: &[Lane], config: BatchingConfig) -> Self {
        let mut remaining = vec![0_u32; lanes.len()];
        // (item waited for, waiting item), in the order the waits are found.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut group_of: Vec<u32> = Vec::new();
        let mut group_room = Vec::new();
        let mut groups: HashMap<&str, usize> = HashMap::new();
        let mut last_serial: Option<usize> = None;
        let mut last_in_chunk: HashMap<&str, usize> = HashMap::new();
        let mut ready = Ready::default();
        for (index, lane) in lanes.iter().enumerate() {
            let mut wait_for = |dependency: usize| {
                remaining[index] += 1;
                edges.push((item(dependency), item(index)));
            };
            match lane {
                Lane::Serial => {
                    // The previous serial item and everything since: together, every earlier
                    // item (the previous serial item itself waited for all before it).
                    for dependency in last_serial.unwrap_or(0)..index {
                        wait_for(dependency);
                    }
                    last_serial = Some(index);
                }
                Lane::Parallel { limit } => {
                    if let Some(serial) = last_serial {
                        wait_for(serial);
                    }
                    if let Some((name, cap)) = limit {
                        let next = group_room.len();
                        let id = *groups.entry(name.as_str()).or_insert(next);
                        if id == next {
                            group_room.push((*cap).max(1));
                        }
                        if group_of.is_empty() {
                            group_of = vec![NO_GROUP; lanes.len()];
                        }
                        group_of[index] = item(id);
                    }
                }
                Lane::Chunked { group: chunk } => {
                    if let Some(serial) = last_serial {
                        wait_for(serial);
                    }
                    if let Some(previous) = last_in_chunk.insert(chunk.as_str(), index) {
                        // Only a chunk member after the last serial item is still pending.
                        if last_serial.is_none_or(|serial| previous > serial) {
                            wait_for(previous);
                        }
                    }
                }
            }
            if remaining[index] == 0 {
                ready.initial.push_back(item(index));
            }
        }
        let (edges_at, waiting_for) = group_edges(lanes.len(), &edges);
        Schedule {
            remaining,
            edges_at,
            waiting_for,
            group_of,
            group_waiting: vec![VecDeque::new(); group_room.len()],
            group_room,
            ready,
            room: config.max_concurrency.max(1),
            started: vec![false; lanes.len()],
        }
    }

    /// Item `index`'s limit group, if any.
    fn group(&self, index: usize) -> Option<usize> {
        match self.group_of.get(index) {
            Some(&group) if group != NO_GROUP => Some(group as usize),
            _ => None,
        }
    }

    /// An item that may start now (its dependencies finished, a place free under the global cap
    /// and its group's), marked started; `None` when no item may start yet.
    pub(crate) fn next(&mut self) -> Option<usize> {
        while self.room > 0 {
            let index = self.ready.pop()? as usize;
            if let Some(group) = self.group(index) {
                if self.group_room[group] == 0 {
                    self.group_waiting[group].push_back(item(index));
                    continue;
                }
                self.group_room[group] -= 1;
            }
            self.room -= 1;
            self.started[index] = true;
            return Some(index);
        }
        None
    }

    /// Marks a started item finished: its places free up, and the items waiting only for it
    /// become ready. Called once per item.
    pub(crate) fn finish(&mut self, index: usize) {
        self.room += 1;
        if let Some(group) = self.group(index) {
            self.group_room[group] += 1;
            if let Some(waiting) = self.group_waiting[group].pop_front() {
                self.ready.later.push(Reverse(waiting));
            }
        }
        if self.edges_at.is_empty() {
            return;
        }
        let (from, to) = (
            self.edges_at[index] as usize,
            self.edges_at[index + 1] as usize,
        );
        for &dependent in &self.waiting_for[from..to] {
            let count = &mut self.remaining[dependent as usize];
            *count -= 1;
            if *count == 0 {
                self.ready.later.push(Reverse(dependent));
            }
        }
    }

    /// The items that never started, each once; afterwards nothing starts.
    pub(crate) fn unstarted(&mut self) -> Vec<usize> {
        self.ready = Ready::default();
        self.group_waiting.iter_mut().for_each(VecDeque::clear);
        let unstarted = (0..self.started.len())
            .filter(|&index| !self.started[index])
            .collect();
        self.started.iter_mut().for_each(|started| *started = true);
        unstarted
    }
}

/// The edges `(item waited for, waiting item)` grouped by the item waited for (a counting sort
/// that keeps their order): offsets per item (`items + 1` of them) and the waiting items. Both
/// empty without edges.
fn group_edges(items: usize, edges: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
    if edges.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut edges_at = vec![0_u32; items + 1];
    for &(dependency, _) in edges {
        edges_at[dependency as usize + 1] += 1;
    }
    for index in 0..items {
        edges_at[index + 1] += edges_at[index];
    }
    let mut next = edges_at.clone();
    let mut waiting_for = vec![0_u32; edges.len()];
    for &(dependency, dependent) in edges {
        let slot = &mut next[dependency as usize];
        waiting_for[*slot as usize] = dependent;
        *slot += 1;
    }
    (edges_at, waiting_for)
}

/// A schedule's ready items, smallest index first.
#[derive(Debug, Default)]
struct Ready {
    /// Ready from the start, in index order.
    initial: VecDeque<u32>,
    /// Made ready as other items finished.
    later: BinaryHeap<Reverse<u32>>,
}

impl Ready {
    fn pop(&mut self) -> Option<u32> {
        match (self.initial.front(), self.later.peek()) {
            (Some(&first), Some(&Reverse(next))) if next < first => {
                self.later.pop().map(|Reverse(index)| index)
            }
            (Some(_), _) => self.initial.pop_front(),
            (None, _) => self.later.pop().map(|Reverse(index)| index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_items_come_out_smallest_index_first() {
        let mut ready = Ready::default();
        ready.initial.extend([0, 2, 7]);
        ready.later.extend([Reverse(5), Reverse(1), Reverse(9)]);
        let order: Vec<u32> = std::iter::from_fn(|| ready.pop()).collect();
        assert_eq!(order, [0, 1, 2, 5, 7, 9]);
    }

    #[test]
    fn edges_are_grouped_by_the_item_waited_for_in_order() {
        let (at, waiting) = group_edges(4, &[(0, 3), (2, 3), (0, 1), (1, 2)]);
        assert_eq!(at, [0, 2, 3, 4, 4]);
        assert_eq!(waiting, [3, 1, 2, 3]);
        assert_eq!(group_edges(3, &[]), (Vec::new(), Vec::new()));
    }

    #[test]
    fn serial_items_wait_for_everything_before_and_hold_everything_after() {
        let lanes = vec![
            Lane::Parallel { limit: None },
            Lane::Parallel { limit: None },
            Lane::Serial,
            Lane::Parallel { limit: None },
            Lane::Chunked { group: "k".into() },
        ];
        let mut schedule = Schedule::new(&lanes, BatchingConfig::new(8));
        let first: Vec<usize> = std::iter::from_fn(|| schedule.next()).collect();
        assert_eq!(first, [0, 1]);
        schedule.finish(1);
        assert_eq!(
            schedule.next(),
            None,
            "the serial item waits for item 0 too"
        );
        schedule.finish(0);
        assert_eq!(schedule.next(), Some(2));
        assert_eq!(schedule.next(), None);
        schedule.finish(2);
        let after: Vec<usize> = std::iter::from_fn(|| schedule.next()).collect();
        assert_eq!(after, [3, 4]);
    }

    #[test]
    fn a_schedule_releases_waiting_items_as_others_finish() {
        let lanes = vec![
            Lane::Parallel { limit: None },
            Lane::Parallel {
                limit: Some(("g".into(), 1)),
            },
            Lane::Parallel {
                limit: Some(("g".into(), 1)),
            },
            Lane::Serial,
            Lane::Chunked { group: "k".into() },
            Lane::Chunked { group: "k".into() },
        ];
        let mut schedule = Schedule::new(&lanes, BatchingConfig::new(8));
        let mut started = Vec::new();
        started.extend(std::iter::from_fn(|| schedule.next()));
        // Item 2 waits for its group's one place, the serial item 3 for all before it.
        assert_eq!(started, [0, 1]);
        schedule.finish(1);
        assert_eq!(schedule.next(), Some(2));
        assert_eq!(schedule.next(), None);
        schedule.finish(0);
        schedule.finish(2);
        assert_eq!(schedule.next(), Some(3));
        assert_eq!(schedule.next(), None);
        schedule.finish(3);
        // The chunk runs in order: 5 after 4.
        assert_eq!(schedule.next(), Some(4));
        assert_eq!(schedule.next(), None);
        schedule.finish(4);
        assert_eq!(schedule.next(), Some(5));
        assert!(schedule.unstarted().is_empty());
    }
}
