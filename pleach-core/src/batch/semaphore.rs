//! [`Semaphore`], a cap tools share across calls, and the runtime's slots (its `max_in_flight`).

use std::sync::Arc;

use tokio::sync::Semaphore as TokioSemaphore;

/// A concurrency limit for code inside a tool: the TypeScript spec's `Semaphore`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::Semaphore;
/// let limit = Semaphore::new(4);
/// let answer = limit.run(async { 42 }).await;
/// assert_eq!(answer, 42);
/// assert_eq!(limit.available(), 4);
/// # }
/// ```
///
/// The TypeScript spec's module-level `const limit = new Semaphore(4)`, shared by every call of a
/// tool, is a `static` built on first use:
///
/// ```
/// use std::sync::LazyLock;
/// use pleach_core::{tool, Semaphore};
///
/// static UPSTREAM: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(4));
///
/// /// Fetches a page from the upstream API, at most four at once across all calls.
/// #[tool]
/// async fn fetch_page(page: u32) -> u32 {
///     UPSTREAM.run(async { page }).await
/// }
/// # assert_eq!(UPSTREAM.available(), 4);
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    inner: Arc<TokioSemaphore>,
}

impl Semaphore {
    /// A limit of `permits` concurrent runs (at least 1).
    ///
    /// ```
    /// let limit = pleach_core::Semaphore::new(2);
    /// assert_eq!(limit.available(), 2);
    /// ```
    pub fn new(permits: usize) -> Self {
        Semaphore {
            inner: Arc::new(TokioSemaphore::new(permits.max(1))),
        }
    }

    /// Runs `future` once a permit is free, holding it until the future completes.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::LazyLock;
    /// use pleach_core::Semaphore;
    ///
    /// // At most 3 requests to the upstream at once, across every call of the tool.
    /// static UPSTREAM: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(3));
    ///
    /// let body = UPSTREAM.run(async { "response" }).await;
    /// assert_eq!(body, "response");
    /// assert_eq!(UPSTREAM.available(), 3); // the permit is back
    /// # }
    /// ```
    pub async fn run<F: Future>(&self, future: F) -> F::Output {
        // The semaphore is never closed, so acquiring cannot fail; if it ever did, running
        // without the limit beats failing the tool.
        let _permit = self.inner.acquire().await.ok();
        future.await
    }

    /// How many permits are free now.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limit = pleach_core::Semaphore::new(1);
    /// limit.run(async { assert_eq!(limit.available(), 0) }).await;
    /// assert_eq!(limit.available(), 1);
    /// # }
    /// ```
    pub fn available(&self) -> usize {
        self.inner.available_permits()
    }
}

/// The runtime-wide cap on running calls (backpressure across sessions). Taking and returning a
/// slot is one atomic operation each when nobody waits, which a general-purpose semaphore cannot
/// offer (returning a permit takes its waiters' lock). Waiters are woken in arrival order by a
/// [`tokio::sync::Notify`]; a call arriving as a slot frees up may take it first, which only
/// changes who runs, never how many.
#[derive(Debug)]
pub(crate) struct Slots {
    used: std::sync::atomic::AtomicUsize,
    waiting: std::sync::atomic::AtomicUsize,
    max: usize,
    freed: tokio::sync::Notify,
}

/// One taken slot, returned on drop.
#[derive(Debug)]
pub(crate) struct Slot<'a>(&'a Slots);

impl Slots {
    pub(crate) fn new(max: usize) -> Self {
        Slots {
            used: std::sync::atomic::AtomicUsize::new(0),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            max: max.max(1),
            freed: tokio::sync::Notify::new(),
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A slot if one is free now.
    pub(crate) fn try_take(&self) -> Option<Slot<'_>> {
        // Made only once claimed: a `Slot` dropped gives a slot back.
        self.try_claim().then(|| Slot(self))
    }

    /// Takes a slot if one is free now, for an owner that gives it back with
    /// [`release`](Slots::release) (a slot taken ahead of its call: `CallSlot`).
    pub(crate) fn try_claim(&self) -> bool {
        use std::sync::atomic::Ordering::{Relaxed, SeqCst};
        let mut used = self.used.load(Relaxed);
        loop {
            if used >= self.max {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(used, used + 1, SeqCst, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Gives back a slot taken by [`try_claim`](Slots::try_claim).
    pub(crate) fn release(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.used.fetch_sub(1, SeqCst);
        if self.waiting.load(SeqCst) > 0 {
            self.freed.notify_one();
        }
    }

    /// A slot, once one is free.
    pub(crate) async fn take(&self) -> Slot<'_> {
        use std::sync::atomic::Ordering::SeqCst;
        loop {
            if let Some(slot) = self.try_take() {
                return slot;
            }
            // Announce the wait before the last check: a slot returned after that check sees
            // `waiting` and notifies, and `Notify` keeps the permit if we are not parked yet.
            self.waiting.fetch_add(1, SeqCst);
            let freed = self.freed.notified();
            let slot = self.try_take();
            if slot.is_none() {
                freed.await;
            }
            self.waiting.fetch_sub(1, SeqCst);
            if let Some(slot) = slot {
                return slot;
            }
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}
