//! Passes on events: a capacity event (Mutka 1988 L643–645, resolution
//! A4) or, with `pass_on_demand`, new work while a node is free runs an
//! allocation pass at once, but at most one per `event_pass_gap_secs`: an
//! event inside the gap waits for one pass at its end, which the caller
//! runs when [`Pool::pass_due`] says ([`Pool::run_due`]). So a burst of ads
//! costs one pass per gap, and the simulator (gap 0) passes on every event.

use super::Pool;
use super::effects::Outbox;
use gleaner_core::time::Time;

impl Pool {
    /// A pass for a capacity or demand event, unless one ran less than the
    /// event gap ago: then the event waits for [`Pool::run_due`] at
    /// [`Pool::pass_due`], so a burst of ads costs one pass per gap.
    pub(super) fn event_pass(&mut self, now: Time, out: &mut Outbox) {
        if self
            .last_event_pass
            .is_some_and(|t| now < t + self.timing.event_gap)
        {
            self.event_waiting = true;
            return;
        }
        self.event_waiting = false;
        self.last_event_pass = Some(now);
        self.allocate_pass(now, out);
    }

    /// When an event that arrived within the gap is to be served, if any.
    pub fn pass_due(&self) -> Option<Time> {
        match (self.event_waiting, self.last_event_pass) {
            (true, Some(t)) => Some(t + self.timing.event_gap),
            _ => None,
        }
    }

    /// Runs the pass of a waiting event once its time has come.
    pub fn run_due(&mut self, now: Time, out: &mut Outbox) {
        if self.pass_due().is_some_and(|t| t <= now) {
            self.event_pass(now, out);
            self.seal_claims(out);
        }
    }
}
