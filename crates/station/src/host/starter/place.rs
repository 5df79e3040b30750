//! The placement decision: may this guest start here now? Besides the fit
//! check (`admission.rs`), what is not about fit: draining, the claim, file
//! names, a free slot account. On acceptance the guest gets its entry (its
//! CPUs, memory and slot account) and a task of its own (`run/`).

use super::claims::Granted;
use super::guests::{Command, GuestEntry};
use super::run::guest_task;
use super::sandbox::local_name;
use super::slot::SlotHold;
use super::{Starter, StarterError};
use gleaner_proto::job::JobDescription;
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{GuestInfo, PlacementRequest, PlacementResponse, RejectReason};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

impl Starter {
    /// Decide a placement; on acceptance the guest starts in the background
    /// (needs a Tokio runtime).
    pub fn place(self: &Arc<Self>, mut req: PlacementRequest) -> PlacementResponse {
        let granted = match self.verifier.verify(&req, &self.config.host) {
            Ok(g) => g,
            Err(e) => return reject(RejectReason::BadClaim, e.0),
        };
        // Every call to the shadow goes to the claim's home address, the
        // one the coordinator has on record, never to one a placement names.
        req.shadow = granted.home_address.clone();
        if let Some(refused) = self.refusal(&req) {
            return self.given_back(&granted, refused);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let entry = match self.take_slot(&req, &granted, tx) {
            Ok(e) => e,
            Err(answer) => return self.given_back(&granted, answer),
        };
        tracing::info!(job = %req.job_id, guest = %entry.guest_id, home = %req.home, "placement accepted");
        let guest_id = entry.guest_id.clone();
        let me = self.clone();
        tokio::spawn(async move { guest_task(me, entry, req, rx).await });
        PlacementResponse::Accepted { guest_id }
    }

    /// A refusal of a valid claim (not for the claim itself): the claim is
    /// named in the next ad, advertised at once, so the coordinator frees
    /// the node it holds for it instead of waiting for the claim to expire.
    fn given_back(&self, granted: &Granted, answer: PlacementResponse) -> PlacementResponse {
        let bad_claim = matches!(
            answer,
            PlacementResponse::Rejected {
                reason: RejectReason::BadClaim,
                ..
            }
        );
        if matches!(answer, PlacementResponse::Rejected { .. }) && !bad_claim {
            self.verifier.give_back(granted);
            self.guest_ended.notify_one();
        }
        answer
    }

    /// Everything that refuses a placement before the guest table is
    /// looked at (the claim is verified before): draining, file names.
    fn refusal(&self, req: &PlacementRequest) -> Option<PlacementResponse> {
        if self.draining.load(Ordering::SeqCst) {
            return Some(reject(RejectReason::Draining, "station is draining"));
        }
        if let Err(msg) = validate_names(&req.description) {
            return Some(reject(RejectReason::RequirementsUnmet, msg));
        }
        None
    }

    /// Takes the guest's slot (CPUs and memory) in the guest table. `Err`
    /// is the answer already decided: a refusal, or the same acceptance
    /// to a retried placement.
    fn take_slot(
        &self,
        req: &PlacementRequest,
        granted: &Granted,
        cmd: mpsc::UnboundedSender<Command>,
    ) -> Result<Arc<GuestEntry>, PlacementResponse> {
        let cpus = req.description.request_cpus.max(1);
        let mem = req.description.request_memory_mb.unwrap_or(0);
        let mut guests = self.lock_guests();
        if let Some(g) = guests.get(&req.job_id) {
            // A retried placement of a job already here: same answer.
            if g.info.home == req.home {
                return Err(PlacementResponse::Accepted {
                    guest_id: g.guest_id.clone(),
                });
            }
            return Err(reject(RejectReason::NoResources, "job already runs here"));
        }
        // The one fit check, as the matchmaker made it, with this host's
        // numbers of the moment (owner, guests, resources, policy; the
        // job's CRIU requirement is one of its requirements).
        if let Err((reason, message)) = self.fit(&guests, &req.description) {
            return Err(reject(reason, message));
        }
        let seq = self.seq.fetch_add(1, Ordering::SeqCst);
        let guest_id = format!("{}-r{}-{seq}", req.job_id, req.run_count);
        // A slot account of its own: none free (all leased, or one still
        // holds an escapee of an earlier guest) is a full host. A CRIU job
        // may swap it for the uid it was dumped as once its checkpoint is
        // here (`run/restore.rs`).
        let lease = self
            .pool
            .lease(&guest_id)
            .map_err(|e| reject(RejectReason::NoResources, e.to_string()))?;
        // Single use: the claim is spent last, under the guest lock, so a
        // claim is accepted once (`nonces.json`: after a restart too). A
        // refusal here drops the slot lease again.
        self.verifier
            .spend(granted)
            .map_err(|e| reject(RejectReason::BadClaim, e.0))?;
        let entry = Arc::new(GuestEntry {
            guest_id,
            info: GuestInfo {
                job: req.job_id,
                home: req.home.clone(),
                owner: req.description.owner.clone(),
                since: self.now(),
                suspended: false,
                concurrency_limits: req.description.concurrency_limits.clone(),
                // What the coordinator needs to find it a destination.
                class: Some(JobClass::of(&req.description)),
            },
            cpus,
            memory_mb: mem,
            state: Mutex::new(("starting".to_string(), None)),
            cmd,
            slot: SlotHold::new(lease),
            destination: watch::channel(None).0,
        });
        guests.insert(req.job_id, entry.clone());
        Ok(entry)
    }
}

fn reject(reason: RejectReason, message: impl Into<String>) -> PlacementResponse {
    let message = message.into();
    tracing::info!(?reason, %message, "placement rejected");
    PlacementResponse::Rejected { reason, message }
}

/// Refuses file names that could leave the sandbox.
fn validate_names(d: &JobDescription) -> Result<(), String> {
    let mut names: Vec<&str> = d.transfer_input_files.iter().map(String::as_str).collect();
    if let Some(i) = &d.input {
        names.push(i);
    }
    if let Some(o) = &d.transfer_output_files {
        names.extend(o.iter().map(String::as_str));
    }
    if d.transfer_executable {
        names.push(&d.executable);
    }
    for n in names {
        local_name(n).map_err(|e: StarterError| e.to_string())?;
    }
    Ok(())
}
