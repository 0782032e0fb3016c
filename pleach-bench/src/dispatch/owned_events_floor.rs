//! The owned-events floor, built without pleach: the least work any runtime does for one call
//! when its lifecycle events carry the call, as owned values, to a reader that may run on another
//! thread (the shape `tool.started { toolCall }` and `tool.completed { toolCall, result }` ask
//! for), and the caller gets the call back with its result.
//!
//! One call: the call's texts joined into one `Box<str>` (one allocation, no reference count);
//! the `raw` column's call on its arguments; a single queue entry standing for both events (the
//! moved call and a copy of the result) pushed under one uncontended `std::sync::Mutex` lock; a
//! copy of the call (one more allocation) kept with the result for the caller. The queue is taken
//! every [`DRAIN_EVERY`] calls, as in the `pleach` column. No lookup, limits, validation, panic
//! guard, runtime-wide slot, waker or event enum of the public shape.
//!
//! Whatever a runtime does on top of this row is extra: if this row alone is over a target, no
//! pipeline that delivers such events can meet it. Every run measures it (the summary's
//! `floor_ns`, and `pleach_floor_ratio` against it). A second row, with `--profile`, adds one
//! thing every runtime with a cap on the calls running at once across threads pays: a slot taken
//! from an atomic counter before the call and given back after it (pleach's `Slots`, without
//! their waiters).

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::runtime::Runtime;

use super::ARGUMENTS;
use crate::measure::Contender;

/// The queue is taken (and its entries dropped) every this many calls, as in the `pleach` column.
const DRAIN_EVERY: u32 = 1_000;

/// A call: its id, name and arguments in one allocation, and where each ends.
#[derive(Clone)]
struct Call {
    text: Box<str>,
    id_end: usize,
    name_end: usize,
}

impl Call {
    fn new(id: &str, name: &str, arguments: &str) -> Self {
        let mut text = String::with_capacity(id.len() + name.len() + arguments.len());
        text.extend([id, name, arguments]);
        Call {
            text: text.into_boxed_str(),
            id_end: id.len(),
            name_end: id.len() + name.len(),
        }
    }

    fn name(&self) -> &str {
        &self.text[self.id_end..self.name_end]
    }

    fn arguments(&self) -> &str {
        &self.text[self.name_end..]
    }
}

/// One queue entry for a call's two events: it started, and it ended with this result.
struct Ran {
    call: Call,
    result: Value,
}

/// The cap the slot row's counter stands for (pleach's default).
const MAX_IN_FLIGHT: usize = 1024;

/// The floor column's label: the row the summary's `floor_ns` reports.
pub(crate) const LABEL: &str = "floor/owned events, no pleach";

/// The floor row: a mutex-guarded queue and nothing else, and with `slots`, a runtime-wide cap.
pub(super) struct OwnedEventsFloor {
    queue: Mutex<VecDeque<Ran>>,
    slots: Option<AtomicUsize>,
}

impl OwnedEventsFloor {
    /// The row; `with_slot` adds the runtime-wide slot.
    pub(super) fn new(with_slot: bool) -> Self {
        OwnedEventsFloor {
            queue: Mutex::new(VecDeque::new()),
            slots: with_slot.then(|| AtomicUsize::new(0)),
        }
    }

    async fn once(&self) -> Result<(Call, Value), String> {
        let call = Call::new("call_1", "add", black_box(ARGUMENTS));
        if let Some(used) = &self.slots {
            used.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |used| {
                (used < MAX_IN_FLIGHT).then_some(used + 1)
            })
            .map_err(|_| "no slot free".to_owned())?;
        }
        let result = super::raw_serde::call(call.arguments())
            .await
            .map_err(|error| error.to_string())?;
        if let Some(used) = &self.slots {
            used.fetch_sub(1, Ordering::SeqCst);
        }
        let kept = call.clone();
        self.queue
            .lock()
            .map_err(|_| "queue poisoned".to_owned())?
            .push_back(Ran {
                call,
                result: result.clone(),
            });
        Ok((kept, result))
    }

    /// Takes the queue, leaving one of the same capacity (as pleach's stream does), so the row
    /// pays no regrowth.
    fn drain(&self) -> VecDeque<Ran> {
        self.queue
            .lock()
            .map(|mut queue| {
                let fresh = VecDeque::with_capacity(queue.len());
                std::mem::replace(&mut *queue, fresh)
            })
            .unwrap_or_default()
    }
}

impl Contender for OwnedEventsFloor {
    fn label(&self) -> &'static str {
        if self.slots.is_some() {
            "floor/owned events + slot"
        } else {
            LABEL
        }
    }

    fn describe(&self) -> &'static str {
        if self.slots.is_some() {
            "the row above + a slot taken from an atomic counter and given back"
        } else {
            "Box<str> call + raw call + one entry for both events under one lock + a copy of the call"
        }
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        let (call, result) = runtime.block_on(self.once())?;
        let entries = self.drain();
        match entries.front() {
            Some(ran)
                if entries.len() == 1
                    && ran.result == 3
                    && result == 3
                    && call.name() == ran.call.name() =>
            {
                Ok(())
            }
            _ => Err(format!("{result} with {} entries", entries.len())),
        }
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for index in 1..=calls {
                black_box(self.once().await.ok());
                if index % DRAIN_EVERY == 0 {
                    black_box(self.drain());
                }
            }
            black_box(self.drain());
            start.elapsed()
        })
    }
}
