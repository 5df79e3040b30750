//! What the pool tells the guests' eviction ladders: whether a free node
//! would take each guest, and the transfer rate behind `T_migr`.
//!
//! Linger-Longer migrates a lingering guest once the episode is `T_lingr`
//! old *and* an idle node is available (Ryu & Hollingsworth,
//! seeds/002_34f613b0a80e1e58.txt L85–93); Pause-and-Migrate, Condor and
//! Immediate-Eviction move to one when it exists. The host cannot see the
//! pool: the coordinator answers each of its ads with a
//! [`Destination`] per guest, which reaches the guest's ladder at once and
//! whenever it changes (`run/supervise.rs`). `T_lingr` follows Eq. 4
//! (L83) from `T_migr` of Eq. 5 (L87): the checkpoint or image size over
//! the transfer rate this host measured, else the pool's
//! (`host::transfer_rate`); a running guest's ladder is told when the rate
//! changes.

use super::Starter;
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::wire::Destination;

impl Starter {
    /// The coordinator's destinations for this host's guests (from an
    /// advertise reply). Guests it did not name keep what they knew.
    pub fn on_destinations(&self, destinations: &[Destination]) {
        let guests = self.lock_guests();
        for d in destinations {
            let Some(g) = guests.get(&GuestKey::new(d.home.clone(), d.job)) else {
                continue;
            };
            let changed = g.destination.send_if_modified(|v| {
                let changed = *v != Some(d.available);
                *v = Some(d.available);
                changed
            });
            if changed {
                tracing::info!(job = %d.job, home = %d.home, available = d.available, "destination for guest");
            }
        }
    }

    /// The pool's checkpoint transfer rate from an advertise reply: the
    /// fallback for `T_migr` until this host has measured its own. Running
    /// guests hear of the rate they use when it changes.
    pub fn on_pool_transfer_rate(&self, rate: Option<f64>) {
        self.rate.set_pool(rate);
        let now = self.rate.get();
        self.rate_news.send_if_modified(|v| {
            let changed = *v != now;
            *v = now;
            changed
        });
    }
}
