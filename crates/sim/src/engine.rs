//! The deterministic discrete-event engine.
//!
//! A binary heap of `(time, sequence)` keys: events at the same instant pop
//! in the order they were scheduled, so a run depends only on its seed and
//! never on heap internals. Cancellation is lazy: a cancelled event stays in
//! the heap and is skipped when popped, which keeps `cancel` O(1).

use gleaner_core::time::{Dur, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

/// Handle to a scheduled event, for cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(u64);

/// A queue of events of type `E` ordered by time, then by scheduling order.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(Time, u64)>>,
    payload: std::collections::HashMap<u64, E>,
    cancelled: HashSet<u64>,
    next_seq: u64,
    now: Time,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            payload: std::collections::HashMap::new(),
            cancelled: HashSet::new(),
            next_seq: 0,
            now: Time::ZERO,
            popped: 0,
        }
    }

    /// The time of the event popped last (the simulation clock).
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of events delivered so far (for events-per-second reports).
    pub fn delivered(&self) -> u64 {
        self.popped
    }

    /// Events still pending (including lazily cancelled ones).
    pub fn len(&self) -> usize {
        self.payload.len()
    }

    pub fn is_empty(&self) -> bool {
        self.payload.is_empty()
    }

    /// Schedules `ev` at `at`. Scheduling in the past delivers it at the
    /// current time instead, so the clock never runs backwards.
    pub fn schedule(&mut self, at: Time, ev: E) -> EventId {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse((at, seq)));
        self.payload.insert(seq, ev);
        EventId(seq)
    }

    /// Schedules `ev` after `d` from now.
    pub fn schedule_in(&mut self, d: Dur, ev: E) -> EventId {
        let at = self.now + d;
        self.schedule(at, ev)
    }

    /// Cancels a pending event; returns false if it already fired or was cancelled.
    pub fn cancel(&mut self, id: EventId) -> bool {
        if self.payload.remove(&id.0).is_some() {
            self.cancelled.insert(id.0);
            true
        } else {
            false
        }
    }

    /// The time of the next pending event, if any.
    pub fn peek_time(&mut self) -> Option<Time> {
        while let Some(Reverse((t, seq))) = self.heap.peek().copied() {
            if self.cancelled.remove(&seq) {
                self.heap.pop();
                continue;
            }
            return Some(t);
        }
        None
    }

    /// Pops the next event and advances the clock to it.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        while let Some(Reverse((t, seq))) = self.heap.pop() {
            if self.cancelled.remove(&seq) {
                continue;
            }
            if let Some(ev) = self.payload.remove(&seq) {
                self.now = t;
                self.popped += 1;
                return Some((t, ev));
            }
        }
        None
    }

    /// Pops the next event if it is due at or before `until`.
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, E)> {
        match self.peek_time() {
            Some(t) if t <= until => self.pop(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_pop_in_schedule_order() {
        let mut q = EventQueue::new();
        q.schedule(Time::from_secs(5), "b");
        q.schedule(Time::from_secs(1), "a");
        q.schedule(Time::from_secs(5), "c");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "b", "c"]);
        assert_eq!(q.now(), Time::from_secs(5));
        assert_eq!(q.delivered(), 3);
    }

    #[test]
    fn cancelled_events_are_skipped() {
        let mut q = EventQueue::new();
        let a = q.schedule(Time::from_secs(1), 1);
        q.schedule(Time::from_secs(2), 2);
        assert!(q.cancel(a));
        assert!(!q.cancel(a));
        assert_eq!(q.peek_time(), Some(Time::from_secs(2)));
        assert_eq!(q.pop(), Some((Time::from_secs(2), 2)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn past_events_fire_now() {
        let mut q = EventQueue::new();
        q.schedule(Time::from_secs(10), 0);
        q.pop();
        q.schedule(Time::from_secs(3), 1);
        assert_eq!(q.pop(), Some((Time::from_secs(10), 1)));
    }
}
