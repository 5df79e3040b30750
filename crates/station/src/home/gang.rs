//! Parallel jobs at their home (docs/jobs.md, "Parallel jobs"): the home is
//! the one place that sees every member of a gang, so it starts them
//! together, hears one member's owner come back and tells the other
//! members' hosts, and stops the gang when rank 0 ends.
//!
//! - **Gang start** ([`start`]): the coordinator grants a gang its nodes
//!   in one grant (`Grant::gang`, rank order): k for LL-k, the shape's
//!   floor of the idle hosts (at least `gang_min`) for reconfiguration.
//!   The home takes the first parallel job of the grant's class whose
//!   members are all idle and whose policy runs on that many
//!   (`GangPolicy::runs_on`); ranks 0..n-1 take the n nodes, with n peers
//!   in their environment (`start::member_env`), and the run (n of k) is
//!   recorded before any placement is sent. Members beyond n wait in the
//!   queue with the job: never demand of their own, never placed alone
//!   ([`parked`]). A member a host refuses stops the members already
//!   started: the gang goes back to idle whole.
//! - **While it runs** ([`apply`]): after every report of a member, at
//!   start and every few seconds, `gleaner_core::gang::settle` says what
//!   to do from the queue's states and the members the home suspended
//!   itself (both durable, `queue::gang`): a member whose own owner's
//!   ladder suspended it makes the gang do what `GangPolicy::member_left`
//!   says — hold every other member (`suspend`) until that owner leaves,
//!   vacate every member (`vacate`), or, under reconfiguration, vacate and
//!   be placed again on the idle hosts; a member back in the queue takes
//!   the gang with it. A run that ends without rank 0's exit (vacated, or
//!   held and released) sends the members that exited before rank 0 back
//!   to the queue too, so that the job runs again whole from the start
//!   (HTCondor's parallel universe requeues the whole job). A home killed
//!   at any moment finds its holds in its queue and sends again what may
//!   not have arrived.
//! - **Gang stop** ([`stop`]): the job ends when rank 0 exits (HTCondor's
//!   default): the members still running are removed from their hosts and
//!   complete with rank 0's exit code, with the output they streamed so
//!   far; the members a reconfigured run did not use complete with it too.
//!   A user's `rm`, `hold` or `release` of any member acts on them all
//!   ([`whole_job`]): a parallel job is one job.

mod apply;
mod start;
mod stop;

pub(crate) use apply::{after_release, after_report, watch};
pub(crate) use start::place_gang;
pub(crate) use stop::{parked, whole_job};

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What the home keeps in memory of its gangs: when it last vacated each,
/// so that the reports of the members leaving do not send the same
/// vacates again, and the gangs whose run just ended, which wait
/// [`REGROUP`] before they ask for nodes again (everything that must
/// survive a restart is in the queue).
#[derive(Default)]
pub struct GangBook {
    vacated: Mutex<HashMap<u64, Instant>>,
    /// Cluster → (when its run ended, machine_count).
    ended: Mutex<HashMap<u64, (Instant, u32)>>,
}

/// How long a gang's vacate is not sent again.
const VACATE_AGAIN: Duration = Duration::from_secs(30);

/// How long a gang whose members all left their hosts waits before it
/// asks for nodes again: the hosts it left advertise themselves free at
/// once, and a reconfigurable gang placed before they do would start on
/// fewer of them than are idle.
pub(crate) const REGROUP: Duration = Duration::from_secs(3);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl GangBook {
    /// True when `cluster`'s gang was not vacated lately (and now is).
    fn vacate_now(&self, cluster: u64) -> bool {
        let mut m = lock(&self.vacated);
        m.retain(|_, t| t.elapsed() < VACATE_AGAIN);
        m.insert(cluster, Instant::now()).is_none()
    }

    fn forget(&self, cluster: u64) {
        lock(&self.vacated).remove(&cluster);
        lock(&self.ended).remove(&cluster);
    }

    /// `cluster`'s run (of `machine_count` members) ended just now.
    fn run_ended(&self, cluster: u64, machine_count: u32) {
        lock(&self.vacated).remove(&cluster);
        lock(&self.ended).insert(cluster, (Instant::now(), machine_count));
    }

    /// The gangs whose run ended less than [`REGROUP`] ago, with their
    /// member counts.
    fn regrouping(&self) -> Vec<(u64, u32)> {
        let mut m = lock(&self.ended);
        m.retain(|_, (t, _)| t.elapsed() < REGROUP);
        m.iter().map(|(c, (_, k))| (*c, *k)).collect()
    }
}
