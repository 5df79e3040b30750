//! The guests on this host: the starter's entry for each, and the listing
//! served at `GET /v1/guests`.

use super::slot::SlotHold;
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::run::RunId;
use gleaner_proto::wire::GuestInfo;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, watch};

/// One guest as listed by `GET /v1/guests`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestListing {
    #[serde(flatten)]
    pub info: GuestInfo,
    pub guest_id: String,
    /// Ladder state: `running`, `lingering`, `suspended`, … (`starting`
    /// while the sandbox is transferred).
    pub state: String,
    #[serde(default)]
    pub pid: Option<u32>,
    /// The slot account the guest runs as (none in a personal pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// Its uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
}

/// What the starter asks of a running guest's task.
pub(crate) enum Command {
    /// Leave the host, and why.
    Vacate(String, VacateKind),
    /// Suspend (true) or release (false) a parallel job's member with its
    /// gang, as its home asks; the reply, if any, says whether the member
    /// is then stopped by its own owner's ladder (dropped: not known, the
    /// program is not running).
    GangHold(bool, Option<tokio::sync::oneshot::Sender<bool>>),
}

/// Why a guest is asked to leave, which decides the signal it gets
/// (HTCondor's `kill_sig`, `hold_kill_sig`, `remove_kill_sig`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VacateKind {
    /// The owner, a preemption, the job's policy: the job goes back to
    /// its queue.
    #[default]
    Vacate,
    /// `glean hold`.
    Hold,
    /// `glean rm`.
    Remove,
}

impl VacateKind {
    /// From the vacate request's `kind=` (`hold`, `remove`; anything else
    /// is a plain vacate).
    pub fn parse(s: Option<&str>) -> VacateKind {
        match s {
            Some("hold") => VacateKind::Hold,
            Some("remove") => VacateKind::Remove,
            _ => VacateKind::Vacate,
        }
    }
}

/// A guest as the starter keeps it, from acceptance until its slot is
/// freed.
pub(crate) struct GuestEntry {
    /// Its sandbox's name: its run's ([`RunId::dir_name`]).
    pub(crate) guest_id: String,
    /// The run it is: named by the home, or here for an older home's.
    pub(crate) run: RunId,
    pub(crate) info: GuestInfo,
    pub(crate) cpus: u32,
    pub(crate) memory_mb: u64,
    /// The GPUs given to it (their ids), none to another guest meanwhile.
    pub(crate) gpus: Vec<String>,
    /// Ladder state name and the guest's process group.
    pub(crate) state: Mutex<(String, Option<u32>)>,
    pub(crate) cmd: mpsc::UnboundedSender<Command>,
    /// The slot account it runs as, until every process of it is gone.
    pub(crate) slot: SlotHold,
    /// Whether a free node elsewhere would take it, as the coordinator last
    /// said (`None`: not said yet); its eviction ladder follows it.
    pub(crate) destination: watch::Sender<Option<bool>>,
    /// The nonce of the claim that placed it: only that claim (or a token)
    /// speaks for its home here afterwards.
    pub(crate) claim_nonce: Option<String>,
    /// Its program completed and its node went back to its claim, held
    /// for the home's next job: no longer in the ad while it is cleaned
    /// up, and its CPUs and memory are the claim's.
    pub(crate) handed_back: AtomicBool,
}

impl GuestEntry {
    /// Which guest it is: its home and its job there.
    pub(crate) fn key(&self) -> GuestKey {
        self.info.key()
    }

    pub(crate) fn handed_back(&self) -> bool {
        self.handed_back.load(Ordering::SeqCst)
    }

    pub(crate) fn hand_back(&self) {
        self.handed_back.store(true, Ordering::SeqCst);
    }

    pub(crate) fn set_state(&self, s: &str, pid: Option<u32>) {
        if let Ok(mut g) = self.state.lock() {
            g.0 = s.to_string();
            if pid.is_some() {
                g.1 = pid;
            }
        }
    }

    pub(crate) fn listing(&self) -> GuestListing {
        let (state, pid) = self
            .state
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        let mut info = self.info.clone();
        info.suspended = state == "suspended";
        GuestListing {
            info,
            guest_id: self.guest_id.clone(),
            state,
            pid,
            slot: self.slot.name(),
            uid: self.slot.user().map(|u| u.uid),
        }
    }
}
