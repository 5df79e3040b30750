//! Versioned HTTP/JSON messages between Gleaner's daemons and the CLI.
//!
//! The message flow follows Mutka 1988 §5 (and the thesis summary §1.2):
//!
//! 1. Every station periodically sends a [`StationAd`] to the coordinator
//!    (`POST /v1/advertise`): its availability (AV/NA), resources, and its
//!    demand (waiting background jobs). This doubles as the coordinator's
//!    poll; the coordinator keeps no durable state about stations.
//! 2. The coordinator answers with an [`AdvertiseReply`]: hosts granted to
//!    this station and preemptions (give a host back). It never picks jobs.
//! 3. The home station picks one of its idle jobs and sends a
//!    [`PlacementRequest`] to the granted host (`POST /v1/place`); the host
//!    answers with a [`PlacementResponse`].
//! 4. The host reports job progress to the home station's shadow endpoint
//!    with [`JobStatusReport`]s (`POST /v1/jobs/{id}/status`).
//!
//! Every request body carries [`PROTOCOL_VERSION`]; a receiver rejects other
//! major versions with [`ErrorCode::VersionMismatch`]. Fields added later
//! must be optional (`#[serde(default)]`) so that minor additions stay
//! compatible. Errors are returned as [`ErrorBody`] with an HTTP status from
//! [`ErrorCode::http_status`]. Authentication travels separately as an
//! `Authorization: Bearer` token (see [`crate::creds`]).

use crate::creds::Revocations;
use crate::guest_key::GuestKey;
use crate::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_core::detector::OwnerState;
use gleaner_core::time::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version this build speaks. Bumped on incompatible changes.
pub const PROTOCOL_VERSION: u32 = 1;

/// Checks the version field of a received message.
pub fn check_version(received: u32) -> Result<(), ErrorBody> {
    if received == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(ErrorBody::new(
            ErrorCode::VersionMismatch,
            format!(
                "protocol version {received} is not supported (this side speaks {PROTOCOL_VERSION})"
            ),
        )
        .with_field("protocol"))
    }
}

fn current_version() -> u32 {
    PROTOCOL_VERSION
}

/// A guest job running on the advertising station.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestInfo {
    pub job: JobId,
    /// The guest's home station.
    pub home: String,
    pub owner: String,
    /// When it started on this host (wall clock, UNIX epoch).
    pub since: Time,
    /// Frozen because the owner came back.
    #[serde(default)]
    pub suspended: bool,
    /// The guest's `concurrency_limits` (floating licences it holds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrency_limits: Vec<String>,
    /// The guest's job as the matchmaker sees it (requirements, requests,
    /// licences), so that the coordinator can tell the host whether another
    /// host would take it ([`AdvertiseReply::destinations`]). `None` from
    /// older hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<crate::matchmaking::JobClass>,
}

impl GuestInfo {
    /// Which guest this is: its home and its job there.
    pub fn key(&self) -> GuestKey {
        GuestKey::new(self.home.clone(), self.job)
    }
}

/// The station's demand for remote capacity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Demand {
    /// Idle jobs in the station's queue that want a host.
    pub idle_jobs: u32,
    /// Jobs of this station currently running elsewhere (hosts it holds).
    pub remote_jobs: u32,
}

/// A station's periodic advertisement to the coordinator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StationAd {
    #[serde(default = "current_version")]
    pub protocol: u32,
    /// Unique station name (normally the host name).
    pub name: String,
    /// Base URL of the station's HTTP endpoint, e.g. `https://ws12:9618`.
    pub address: String,
    /// Owner availability from the station's detector.
    pub state: OwnerState,
    pub cpus: u32,
    /// Memory available to guests, MiB.
    pub memory_mb: u64,
    /// Free disk in the execute directory, KiB (a full disk prevents
    /// placement, Mutka 1988 §5.3).
    pub disk_free_kb: u64,
    /// `X86_64`, `AARCH64`, … as HTCondor's `Arch`.
    pub arch: String,
    /// `LINUX`, as HTCondor's `OpSys`.
    pub opsys: String,
    /// Relative speed (HTCondor's `Mips`/`KFlops` role); larger is faster.
    #[serde(default)]
    pub speed: f64,
    #[serde(default)]
    pub running_guests: Vec<GuestInfo>,
    /// Administrator-defined attributes: name → ClassAd expression text.
    #[serde(default)]
    pub attrs: BTreeMap<String, String>,
    #[serde(default)]
    pub demand: Demand,
    /// The owner's rules for guests (windows, users, `START`, guest limit).
    #[serde(default)]
    pub policy: crate::matchmaking::PolicyAd,
    /// The idle jobs of `demand`, grouped for matchmaking; empty from
    /// stations that do not group (then any host fits any job).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<crate::matchmaking::JobClass>,
    /// Never hosts guests (e.g. a laptop that only submits).
    #[serde(default)]
    pub submit_only: bool,
    /// Never submits (a donated machine without users).
    #[serde(default)]
    pub execute_only: bool,
    /// Increases with every ad, so the coordinator can drop stale ones.
    #[serde(default)]
    pub sequence: u64,
    /// Sender's clock when the ad was built.
    pub sent_at: Time,
    /// For a host: the nonces of the claims it accepted placements with
    /// lately, or refused a placement of for lack of room (each for a few
    /// minutes), so the coordinator settles each grant by its id the moment
    /// it was used or given back, even when the guest started and ended
    /// between two ads. Empty from older stations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims_used: Vec<String>,
    /// For a host: the claims it holds for their homes to place one job
    /// after another on (claim reuse): with a guest now, or idle for a
    /// moment between two of them. Each is one node held by its home, as a
    /// guest is; the coordinator may preempt it like one. Empty from
    /// stations that hold no claim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims_held: Vec<HeldClaim>,
    /// A bounded summary for the coordinator's dashboard: as a home,
    /// per-user counts and waits, recent evictions and holds, DAG
    /// progress; as a host, each guest's ladder state. `None` from older
    /// stations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<crate::summary::StationSummary>,
}

impl StationAd {
    /// Whether `newer` says the same as this ad apart from what changes in
    /// ads that report nothing new: the sequence number, the send time,
    /// the free disk and the dashboard's summary. The coordinator then
    /// keeps what it derived from this ad (`gleaner_coordinator`'s pool).
    pub fn same_apart_from_progress(&self, newer: &StationAd) -> bool {
        // Destructured whole, so a new field must be placed on one side.
        let StationAd {
            protocol,
            name,
            address,
            state,
            cpus,
            memory_mb,
            disk_free_kb: _,
            arch,
            opsys,
            speed,
            running_guests,
            attrs,
            demand,
            policy,
            classes,
            submit_only,
            execute_only,
            sequence: _,
            sent_at: _,
            claims_used,
            claims_held,
            summary: _,
        } = newer;
        self.protocol == *protocol
            && self.state == *state
            && self.cpus == *cpus
            && self.memory_mb == *memory_mb
            && self.speed.to_bits() == speed.to_bits()
            && self.demand == *demand
            && self.submit_only == *submit_only
            && self.execute_only == *execute_only
            && self.name == *name
            && self.address == *address
            && self.arch == *arch
            && self.opsys == *opsys
            && self.running_guests == *running_guests
            && self.claims_used == *claims_used
            && self.claims_held == *claims_held
            && self.policy == *policy
            && self.attrs == *attrs
            && self.classes == *classes
    }

    /// The nonce of the claim `home`'s job `job` runs on here, if the host
    /// holds it for reuse (a job id alone names no guest: two homes'
    /// jobs may share it).
    pub fn claim_for(&self, home: &str, job: JobId) -> Option<&str> {
        self.claims_held
            .iter()
            .find(|c| c.running && c.job == job && c.home == home)
            .map(|c| c.claim.as_str())
    }

    /// Claims held idle between two jobs of their homes: each a node held.
    pub fn idle_claims(&self) -> impl Iterator<Item = &HeldClaim> {
        self.claims_held.iter().filter(|c| !c.running)
    }

    /// Nodes occupied: one per guest and one per idle held claim.
    pub fn occupied(&self) -> u32 {
        let idle = self.idle_claims().count();
        u32::try_from(self.running_guests.len() + idle).unwrap_or(u32::MAX)
    }
}

/// A claim a host holds for its home between placements (see
/// [`StationAd::claims_held`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldClaim {
    /// The claim's nonce.
    pub claim: String,
    /// Its home station.
    pub home: String,
    /// The job placed on it last: running now if `running`, else finished.
    pub job: JobId,
    pub running: bool,
    /// The last job's `concurrency_limits`: an idle claim keeps holding
    /// them, as its next job of the same class will.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrency_limits: Vec<String>,
}

impl HeldClaim {
    /// The guest placed on the claim last.
    pub fn key(&self) -> GuestKey {
        GuestKey::new(self.home.clone(), self.job)
    }
}

/// A host given to a station by the coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub host: String,
    /// The host's base URL for [`PlacementRequest`]s.
    pub host_address: String,
    /// Opaque claim the host checks, so that only the grantee can place.
    pub claim_id: String,
    /// The [`crate::matchmaking::JobClass::key`] the host was matched for; the
    /// home station places a job of that class. `None`: any idle job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The claim's nonce: how the host names it in its ads and the
    /// coordinator in a preemption of it (claim reuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// For a parallel job's class: every member's node, in rank order (the
    /// first is the grant's own `host`). The coordinator grants a gang all
    /// at once or not at all; the home starts the members together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gang: Vec<GangNode>,
}

/// One node of a gang's [`Grant`]: a host and the claim on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GangNode {
    pub host: String,
    pub host_address: String,
    pub claim_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

/// A request to give back a host (Up-Down preemption).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    pub host: String,
    /// The job to vacate, when the coordinator knows it.
    #[serde(default)]
    pub job: Option<JobId>,
    pub reason: String,
    /// The nonce of the claim the node is held by, when its host holds it
    /// for reuse ([`StationAd::claims_held`]): the home gives up the claim
    /// and vacates whatever job runs on it now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
}

/// The coordinator's answer to a [`StationAd`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvertiseReply {
    #[serde(default = "current_version")]
    pub protocol: u32,
    #[serde(default)]
    pub grants: Vec<Grant>,
    #[serde(default)]
    pub preemptions: Vec<Preemption>,
    /// When to advertise next (the thesis's 2-minute poll by default).
    pub next_advertise_secs: u64,
    /// For a host: the claims currently valid on it, so it can expect the
    /// placements (each claim id also verifies on its own with the pool key).
    #[serde(default)]
    pub claims: Vec<ClaimNotice>,
    /// The pool's checkpoint transfer rate, bytes/s: the median of the
    /// [`CHECKPOINT_TRANSFER_RATE_ATTR`] of the ads the coordinator holds;
    /// `None` while no station has measured one. A station that has not
    /// measured its own uses it for Linger-Longer's `T_migr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_transfer_rate: Option<u64>,
    /// For a host: per guest it runs, whether a free AV node that would
    /// take the guest exists in the pool now (Linger-Longer's "idle node
    /// available", Ryu & Hollingsworth L85–93), for the guest's eviction
    /// ladder. Empty from older coordinators.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<Destination>,
    /// Tokens revoked at the coordinator (`glean token revoke`), each until
    /// it would have expired anyway: every station merges them into the
    /// set it persists and refuses them from then on (DESIGN.md, Trust
    /// model). Empty from older coordinators.
    #[serde(default, skip_serializing_if = "Revocations::is_empty")]
    pub revoked: Revocations,
    /// For a host: an administrator drained it (`glean drain`). It then
    /// keeps no claim for its homes' next jobs: a claim whose guest was
    /// running when the drain began ends with that guest. False from
    /// older coordinators.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drained: bool,
}

/// `GET /v1/events?after=SEQ`: the coordinator's grants and preemptions
/// for the calling station, pushed as soon as a pass decides them instead
/// of waiting for the station's next advertisement (the call waits until
/// there is mail or the wait ends). Messages stay until a later call's
/// `after` covers them, so a reply lost on the way is sent again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsReply {
    #[serde(default = "current_version")]
    pub protocol: u32,
    /// The sequence number of the last message in this reply (or the
    /// caller's `after` when there is none): the `after` of the next call.
    pub last: u64,
    #[serde(default)]
    pub grants: Vec<Grant>,
    #[serde(default)]
    pub preemptions: Vec<Preemption>,
}

/// Whether a guest of the advertising host could move elsewhere now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    pub job: JobId,
    /// The guest's home station.
    pub home: String,
    /// A free AV node that would take the guest exists now.
    pub available: bool,
}

/// Station-ad attribute (in [`StationAd::attrs`], an integer ClassAd
/// literal in bytes/s) with the station's own measured checkpoint transfer
/// rate; absent until it has measured one. Named like HTCondor's machine
/// attributes, so jobs' `Requirements` and `Rank` may use it too.
pub const CHECKPOINT_TRANSFER_RATE_ATTR: &str = "CheckpointTransferRate";

/// One claim that a home station holds on the advertising host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimNotice {
    pub claim_id: String,
    /// The station allowed to place with this claim.
    pub home: String,
    /// Seconds since the UNIX epoch.
    pub expires_at: u64,
}

/// Coordinator → CLI: `GET /v1/pool`, the stations the coordinator knows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    #[serde(default)]
    pub stations: Vec<StationStatus>,
}

/// One station of [`PoolStatus`], from its latest advertisement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StationStatus {
    pub name: String,
    pub address: String,
    pub state: OwnerState,
    pub cpus: u32,
    pub memory_mb: u64,
    pub disk_free_kb: u64,
    /// Guests running on this station.
    #[serde(default)]
    pub guests: u32,
    #[serde(default)]
    pub idle_jobs: u32,
    #[serde(default)]
    pub remote_jobs: u32,
    #[serde(default)]
    pub submit_only: bool,
    #[serde(default)]
    pub execute_only: bool,
    /// An administrator drained it: no new guests (`glean drain`).
    #[serde(default)]
    pub drained: bool,
    /// Seconds since the coordinator last heard from the station.
    pub last_seen_secs: f64,
}

/// Coordinator → CLI: `GET /v1/userprio`, the Up-Down table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserPrio {
    /// The allocator in use (`updown`, `random`, `roundrobin`); only
    /// Up-Down has indices, the others report 0.
    pub allocator: String,
    #[serde(default)]
    pub stations: Vec<UserPrioEntry>,
    /// Every submitter's use of the pool (HTCondor's accountant), by name.
    #[serde(default)]
    pub submitters: Vec<SubmitterPrio>,
}

/// One submitter in [`UserPrio`]: `SUBMITTER@HOME` (a user, or
/// `group.user` with an accounting group, at the home station that
/// queued the jobs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitterPrio {
    pub name: String,
    pub submitter: String,
    pub home: String,
    /// Nodes its jobs hold now, pool-wide.
    pub nodes_held: u32,
    /// Decayed usage in nodes (HTCondor's real user priority without its
    /// 0.5 floor): at steady state, the nodes held.
    pub usage: f64,
}

/// One row of [`UserPrio`]: a smaller `si` means a higher priority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserPrioEntry {
    pub station: String,
    /// Schedule index SI (Mutka 1988 Table 4.3).
    pub si: f64,
    /// Remote nodes the station holds now (its guests on other hosts).
    #[serde(default)]
    pub nodes_held: u32,
    /// Idle jobs waiting for a node.
    #[serde(default)]
    pub waiting: u32,
    /// Wants nodes: waiting or running remotely (resolution A5).
    #[serde(default)]
    pub wants: bool,
    /// Whether the station currently advertises (false: only its index is
    /// remembered).
    #[serde(default)]
    pub known: bool,
}

/// Home station → host: run this job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementRequest {
    #[serde(default = "current_version")]
    pub protocol: u32,
    pub job_id: JobId,
    /// Name of the home station.
    pub home: String,
    /// Claim from the coordinator's [`Grant`].
    pub claim_id: String,
    pub description: JobDescription,
    /// Base URL of the shadow on the home station: the host fetches the
    /// sandbox from it and sends [`JobStatusReport`]s to it.
    pub shadow: String,
    /// Name of the checkpoint to restart from, if any.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// How many times this job has run before.
    #[serde(default)]
    pub run_count: u32,
    /// Lease between shadow and starter, seconds: the starter reports at
    /// least every third of it and kills the guest when it cannot reach the
    /// home for this long (`None`: no lease, the pre-lease behaviour).
    #[serde(default)]
    pub lease_secs: Option<u64>,
    /// This run's identity: the host names it in everything it sends the
    /// home about the job, and names the sandbox after it. Absent from an
    /// older home (the host then makes one up for its own names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<crate::run::RunId>,
    /// Which placement under its claim this is: 0 for the first (the claim
    /// is spent), then one more than the last the host accepted under it
    /// (claim reuse: the host refuses any other, so a replayed placement
    /// starts nothing).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub claim_seq: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why a host declined a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// The owner is active (station NA).
    OwnerActive,
    /// Not enough CPUs, memory or disk.
    NoResources,
    /// The claim is unknown, expired or for another station.
    BadClaim,
    /// The job's requirements do not match this host.
    RequirementsUnmet,
    /// The station is draining or shutting down.
    Draining,
    /// The job itself cannot start (a file name no sandbox can hold, a
    /// NUL byte): any host would refuse it, so the home counts it as a
    /// failed start ([`StartFailure`]).
    Unrunnable,
}

/// Host → home station: the answer to a [`PlacementRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum PlacementResponse {
    Accepted {
        /// The host's name for the guest (its sandbox id).
        guest_id: String,
    },
    Rejected {
        reason: RejectReason,
        message: String,
    },
}

/// Resource usage of a job so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub cpu_secs: f64,
    pub wall_secs: f64,
    pub max_rss_mb: u64,
}

/// Host → home station: something happened to a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobStatusReport {
    #[serde(default = "current_version")]
    pub protocol: u32,
    pub job_id: JobId,
    pub host: String,
    pub event: JobEventKind,
    /// The state the host believes the job is now in.
    pub state: JobState,
    pub at: Time,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The run reported on; the home refuses reports of any other run than
    /// the job's current one (absent: from an older host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<crate::run::RunId>,
    /// The program could not be started (the report is then `evicted`,
    /// state idle): the home counts the failed start and holds the job
    /// after too many in a row (absent: from an older host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_failure: Option<StartFailure>,
    /// For a hold by the host: its `HoldReasonCode` (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_code: Option<u32>,
}

/// Host → home: the answer to `POST /v1/guests/{job}/gang?hold=…`, a
/// parallel job's member held (or released) with its gang.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GangHoldResponse {
    pub job: JobId,
    pub home: String,
    pub hold: bool,
    /// Whether the member's own owner's ladder keeps it stopped (its own
    /// owner is back): after a release, the home holds the gang for that
    /// owner. Absent: not known (its program is not running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_by_owner: Option<bool>,
}

/// Why a job could not be started, in HTCondor's hold terms: `code` is the
/// `HoldReasonCode` a hold for it would carry, `subcode` the
/// `HoldReasonSubCode` (the Unix errno where there is one, else 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartFailure {
    pub code: u32,
    #[serde(default)]
    pub subcode: i32,
    /// What failed, for the user: `exec "/bin/x": Argument list too long`.
    pub message: String,
}

/// HTCondor's `HoldReasonCode` values that Gleaner uses.
pub mod hold_code {
    /// `condor_hold` by a user or administrator.
    pub const USER_REQUEST: u32 = 1;
    /// The job's own policy (`on_exit_hold`, `periodic_hold`); the
    /// subcode is the job's `on_exit_hold_subcode`/`periodic_hold_subcode`.
    pub const JOB_POLICY: u32 = 3;
    /// The starter failed to execute the program; subcode = errno.
    pub const FAILED_TO_EXECUTE: u32 = 6;
    /// Transferring the job's input files failed; subcode = errno.
    pub const TRANSFER_INPUT_ERROR: u32 = 13;
    /// `hold = true` in the submit file.
    pub const SUBMITTED_ON_HOLD: u32 = 15;
    /// A deferred job that could not start within its `deferral_window`.
    pub const MISSED_DEFERRED_EXECUTION_TIME: u32 = 20;
    /// The job's output passed the home spool's bound (HTCondor's
    /// `MaxTransferOutputSizeExceeded`, for `MAX_TRANSFER_OUTPUT_MB`).
    pub const MAX_TRANSFER_OUTPUT_SIZE_EXCEEDED: u32 = 33;
    /// The job used more than it asked for (HTCondor's
    /// `JobOutOfResources`): here, all of its `request_disk`.
    pub const JOB_OUT_OF_RESOURCES: u32 = 34;
    /// The job ran longer than its `allowed_job_duration`.
    pub const JOB_DURATION_EXCEEDED: u32 = 46;
    /// The job ran longer than its `allowed_execute_duration`.
    pub const JOB_EXECUTE_EXCEEDED: u32 = 47;
}

/// CLI → station: `glean submit`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitRequest {
    #[serde(default = "current_version")]
    pub protocol: u32,
    pub submission: crate::submit::ClusterSubmission,
}

/// Station → CLI: the jobs created by a [`SubmitRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitResponse {
    pub cluster: u64,
    pub jobs: Vec<JobId>,
}

/// Machine-readable error kinds; each maps to one HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    /// E.g. an illegal job state transition.
    Conflict,
    VersionMismatch,
    Unavailable,
    Internal,
}

impl ErrorCode {
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::Conflict => 409,
            ErrorCode::VersionMismatch => 426,
            ErrorCode::Unavailable => 503,
            ErrorCode::Internal => 500,
        }
    }
}

/// The body of every error response: `{"error": {"code", "message", "field"?}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
    /// The offending request field, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            error: ErrorDetail {
                code,
                message: message.into(),
                field: None,
            },
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.error.field = Some(field.into());
        self
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.error.field {
            Some(field) => write!(f, "{:?}: {} ({field})", self.error.code, self.error.message),
            None => write!(f, "{:?}: {}", self.error.code, self.error.message),
        }
    }
}

impl std::error::Error for ErrorBody {}
