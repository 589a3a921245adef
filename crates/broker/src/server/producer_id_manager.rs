//! Producer id blocks from the controller (Kafka's `RPCProducerIdManager`).
//!
//! Producer ids must be unique across the cluster, so brokers do not pick them: the active
//! controller hands out blocks (AllocateProducerIds, [`PRODUCER_ID_BLOCK_SIZE`] ids each,
//! recorded in the metadata log so no block is given twice) and the broker takes ids from
//! its current block. The next block is fetched in the background as soon as a block is
//! taken into use, so InitProducerId waits on the controller only for a broker's first block
//! (or when a whole block goes within one AllocateProducerIds round trip); at most one
//! request is in flight, and after a failed one the next waits [`PRODUCER_ID_RETRY_BACKOFF`].
//!
//! Kafka's `RPCProducerIdManager` prefetches once 90% of a block is used
//! (`PidPrefetchThreshold`). That leaves 100 ids to cover the round trip, whose controller
//! commit waits `controller.quorum.append.linger.ms` (25 ms) plus a flush: enough at Kafka's
//! ~200 µs per InitProducerId, not at this broker's ~40-60 µs, where every 1,000th
//! InitProducerId waited 16-27 ms for the next block (measured: `cargo xtask bench clients`,
//! issue 33). Holding a spare block costs at most 1,000 ids per broker, lost on a restart as
//! Kafka's unused ids are.
//!
//! Kafka answers at once with COORDINATOR_LOAD_IN_PROGRESS when no block is at hand (older
//! clients treat REQUEST_TIMED_OUT as fatal, this one as retriable). Here [`generate`]
//! first waits up to the caller's deadline for the block on its way, and only then answers
//! COORDINATOR_LOAD_IN_PROGRESS: a broker's first InitProducerId then costs one round trip
//! rather than a client retry.
//!
//! A block that does not start past every id handed out so far (a controller bug, or a
//! replayed answer) is refused, so ids never repeat within the process.
//!
//! [`PRODUCER_ID_BLOCK_SIZE`]: kraftd_controller::control::producer_ids::PRODUCER_ID_BLOCK_SIZE
//! [`generate`]: ProducerIdManager::generate

use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kraftd_protocol::messages::AllocateProducerIdsRequest;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::controller_channel::ControllerChannel;

/// Kafka's `RPCProducerIdManager.RetryBackoffMs`: the pause after a failed request before
/// the next may go.
pub const PRODUCER_ID_RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// How long one AllocateProducerIds may take, NOT_CONTROLLER retries included (Kafka's
/// `request.timeout.ms` default).
pub const PRODUCER_ID_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A block of ids from the controller, `first..end`, of which `next..end` are still free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    first: i64,
    end: i64,
    next: i64,
}

impl Block {
    fn claim(&mut self) -> Option<i64> {
        (self.next < self.end).then(|| {
            self.next += 1;
            self.next - 1
        })
    }
}

#[derive(Debug)]
struct State {
    current: Option<Block>,
    /// The prefetched block, used once `current` runs out.
    next_block: Option<Block>,
    in_flight: bool,
    /// No request before this, after a failure.
    retry_at: Option<Instant>,
    /// The end of the last block accepted: the next must start at or after it.
    floor: i64,
}

impl State {
    /// The next id, moving to the prefetched block when the current one is used up.
    fn claim(&mut self) -> Option<i64> {
        loop {
            if let Some(id) = self.current.as_mut().and_then(Block::claim) {
                return Some(id);
            }
            self.current = Some(self.next_block.take()?);
        }
    }

    /// Whether the next block should be fetched: none is waiting behind the current one.
    fn needs_prefetch(&self) -> bool {
        self.next_block.is_none()
    }
}

#[derive(Debug)]
struct Inner {
    broker_id: i32,
    broker_epoch: watch::Receiver<i64>,
    channel: ControllerChannel,
    state: Mutex<State>,
    /// Woken when a request completes (a block arrived, or the backoff started).
    changed: Notify,
}

/// Hands out producer ids from blocks the controller allocates.
#[derive(Debug, Clone)]
pub struct ProducerIdManager {
    inner: Arc<Inner>,
}

impl ProducerIdManager {
    /// Fetches nothing yet: the first block is asked for by the first [`generate`]
    /// (Kafka's broker does the same, through its transaction coordinator).
    ///
    /// [`generate`]: ProducerIdManager::generate
    pub fn new(
        broker_id: i32,
        broker_epoch: watch::Receiver<i64>,
        channel: ControllerChannel,
    ) -> Self {
        ProducerIdManager {
            inner: Arc::new(Inner {
                broker_id,
                broker_epoch,
                channel,
                state: Mutex::new(State {
                    current: None,
                    next_block: None,
                    in_flight: false,
                    retry_at: None,
                    floor: 0,
                }),
                changed: Notify::new(),
            }),
        }
    }

    /// The next producer id: from the current block, prefetching the next block when none
    /// is waiting; waits (up to `deadline`) for a block when none is available; errors as
    /// ErrorCode (COORDINATOR_LOAD_IN_PROGRESS while no block could be fetched, as Kafka's
    /// InitProducerId path answers). Ids never repeat within the process.
    pub async fn generate(&self, deadline: Instant) -> Result<i64, ErrorCode> {
        loop {
            // Listen before looking, so a block arriving in between wakes us.
            let mut changed = pin!(self.inner.changed.notified());
            changed.as_mut().enable();
            let wake_at = {
                let mut state = self.inner.lock();
                let now = Instant::now();
                if let Some(id) = state.claim() {
                    if state.needs_prefetch() {
                        self.inner.maybe_request(&mut state, now);
                    }
                    return Ok(id);
                }
                self.inner.maybe_request(&mut state, now);
                if now >= deadline {
                    return Err(ErrorCode::CoordinatorLoadInProgress);
                }
                // While backing off nothing wakes us: look again when the backoff ends.
                match state.retry_at {
                    Some(at) if !state.in_flight => at.min(deadline),
                    _ => deadline,
                }
            };
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends AllocateProducerIds in the background unless one is in flight, a block is
    /// already waiting, or the backoff after a failure has not passed.
    fn maybe_request(self: &Arc<Self>, state: &mut State, now: Instant) {
        if state.in_flight
            || state.next_block.is_some()
            || state.retry_at.is_some_and(|at| now < at)
        {
            return;
        }
        state.in_flight = true;
        tokio::spawn(Arc::clone(self).fetch());
    }

    async fn fetch(self: Arc<Self>) {
        let block = self.request_block().await;
        let mut state = self.lock();
        state.in_flight = false;
        match block {
            Ok((first, len)) => match accept_block(state.floor, first, len) {
                Ok(block) => {
                    debug!(
                        broker = self.broker_id,
                        first, len, "got a producer id block"
                    );
                    state.floor = block.end;
                    state.next_block = Some(block);
                    state.retry_at = None;
                }
                Err(why) => {
                    warn!(
                        broker = self.broker_id,
                        first,
                        len,
                        floor = state.floor,
                        "refused a producer id block: {why}"
                    );
                    state.retry_at = Some(Instant::now() + PRODUCER_ID_RETRY_BACKOFF);
                }
            },
            Err(why) => {
                warn!(
                    broker = self.broker_id,
                    "AllocateProducerIds failed: {why}; retrying after a backoff"
                );
                state.retry_at = Some(Instant::now() + PRODUCER_ID_RETRY_BACKOFF);
            }
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// One AllocateProducerIds: the block's first id and length, or why there is none.
    async fn request_block(&self) -> Result<(i64, i32), String> {
        let deadline = Instant::now() + PRODUCER_ID_REQUEST_TIMEOUT;
        // Before registration the controller would answer STALE_BROKER_EPOCH to epoch -1.
        let mut epochs = self.broker_epoch.clone();
        let broker_epoch =
            match tokio::time::timeout_at(deadline, epochs.wait_for(|e| *e >= 0)).await {
                Ok(Ok(e)) => *e,
                Ok(Err(_)) => return Err("the broker epoch is no longer published".into()),
                Err(_) => return Err("the broker is not registered".into()),
            };
        let request = RequestBody::AllocateProducerIds(AllocateProducerIdsRequest {
            broker_id: self.broker_id,
            broker_epoch,
            ..Default::default()
        });
        let not_controller = |r: &ResponseBody| matches!(r, ResponseBody::AllocateProducerIds(a) if a.error_code == ErrorCode::NotController.code());
        match self
            .channel
            .send(None, request, deadline, not_controller)
            .await
        {
            Ok(ResponseBody::AllocateProducerIds(r)) if r.error_code == 0 => {
                Ok((r.producer_id_start, r.producer_id_len))
            }
            Ok(ResponseBody::AllocateProducerIds(r)) => Err(format!(
                "the controller answered {:?}",
                ErrorCode::from_code(r.error_code)
            )),
            Ok(other) => Err(format!("unexpected answer {other:?}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The block `first..first + len`, if it is well formed and starts at or after `floor`
/// (every id below `floor` may have been handed out already).
fn accept_block(floor: i64, first: i64, len: i32) -> Result<Block, &'static str> {
    if first < 0 || len <= 0 {
        return Err("invalid range");
    }
    let end = first.checked_add(i64::from(len)).ok_or("range overflows")?;
    if first < floor {
        return Err("overlaps ids already handed out");
    }
    Ok(Block {
        first,
        end,
        next: first,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_must_be_well_formed_and_past_the_floor() {
        assert!(accept_block(0, 0, 1000).is_ok());
        assert!(accept_block(1000, 999, 1000).is_err());
        assert!(accept_block(0, -1, 10).is_err());
        assert!(accept_block(0, 5, 0).is_err());
        assert!(accept_block(0, i64::MAX - 5, 10).is_err());
    }

    #[test]
    fn state_moves_to_the_prefetched_block_and_asks_for_the_next_while_none_waits() {
        let mut state = State {
            current: Some(accept_block(0, 0, 10).unwrap()),
            next_block: None,
            in_flight: false,
            retry_at: None,
            floor: 10,
        };
        let ids: Vec<i64> = (0..9).map(|_| state.claim().unwrap()).collect();
        assert_eq!(ids, (0..9).collect::<Vec<_>>());
        assert!(state.needs_prefetch());
        state.next_block = Some(accept_block(10, 20, 10).unwrap());
        assert!(!state.needs_prefetch(), "a block is waiting");
        assert_eq!(state.claim(), Some(9));
        assert_eq!(state.claim(), Some(20));
        assert!(state.next_block.is_none());
        assert!(state.needs_prefetch(), "the spare block was taken into use");
    }
}
