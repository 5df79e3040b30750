//! The placement decision: may this guest start here now? Besides the fit
//! check (`admission.rs`), what is not about fit: draining, the claim, file
//! names, a free slot account. On acceptance the guest gets its entry (its
//! CPUs, memory and slot account) and a task of its own (`run/`).

use super::claims::Granted;
use super::guests::{Command, GuestEntry};
use super::held_claims::Placed;
use super::run::guest_task;
use super::sandbox::local_name;
use super::slot::SlotHold;
use super::{Starter, StarterError};
use gleaner_proto::guest_key::GuestKey;
use gleaner_proto::job::JobDescription;
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::run::RunId;
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
        // Plain HTTP only to a loopback home, in a pool without TLS.
        if let Err(why) = self.check_shadow_url(&req.shadow) {
            return self.given_back(&granted, reject(RejectReason::RequirementsUnmet, why));
        }
        if let Some(refused) = self.refusal(&req) {
            return self.given_back(&granted, refused);
        }
        // Match-time values from this host; matching avoided hosts without
        // them (`JobClass::of`), so a refusal here is rare and no failed
        // start.
        if let Err(msg) = self.fill_match_time(req.job_id, &mut req.description) {
            return self.given_back(&granted, reject(RejectReason::RequirementsUnmet, msg));
        }
        // Requests written as expressions, evaluated here: the amounts the
        // guest gets (slot, cgroup, GPUs).
        if let Err(msg) = self.settle_requests(&mut req.description) {
            return self.given_back(&granted, reject(RejectReason::RequirementsUnmet, msg));
        }
        // The run this placement starts, named by the home (an older home
        // names none: `take_slot` names it then, for the sandbox's sake).
        if let Some(r) = &req.run
            && (r.job != req.job_id || r.home != req.home)
        {
            let msg = format!("run {r} is not a run of job {} of {}", req.job_id, req.home);
            return reject(RejectReason::RequirementsUnmet, msg);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let entry = match self.take_slot(&req, &granted, tx) {
            Ok(e) => e,
            Err(answer) => return self.given_back(&granted, answer),
        };
        req.run = Some(entry.run.clone());
        tracing::info!(job = %req.job_id, home = %req.home, guest = %entry.guest_id, "placement accepted");
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
        // The host does not trust the home to have checked: what no exec
        // could take (NUL bytes, oversize arguments) is refused here too.
        if let Some(p) = gleaner_proto::limits::check_description(&req.description).first() {
            return Some(reject(RejectReason::Unrunnable, p.to_string()));
        }
        if let Err(msg) = validate_names(&req.description) {
            // The job's own fault, the same on every host: the home counts
            // it as a failed start (and holds the job after a few).
            return Some(reject(RejectReason::Unrunnable, msg));
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
        // The guest is its home's job: `req.home` is the caller's own
        // name (`routes.rs` refuses a placement for another home), and the
        // claim was granted to it (`claims.rs`). Another home's job of the
        // same id is another guest.
        let key = GuestKey::new(req.home.clone(), req.job_id);
        if let Some(g) = guests.get(&key) {
            // Its run completed (its node went back to its claim): that
            // placement is over and cannot be made again.
            if g.handed_back() {
                return Err(reject(
                    RejectReason::BadClaim,
                    "this placement is over: its job completed here",
                ));
            }
            // A retried placement of the run already here: same answer. A
            // new run while an earlier one still finishes is refused (the
            // home tries again): answering with the old guest would make
            // the home take a run that is over for the new one.
            if req.run.as_ref().is_none_or(|r| r.dir_name() == g.guest_id) {
                return Err(PlacementResponse::Accepted {
                    guest_id: g.guest_id.clone(),
                });
            }
            return Err(reject(
                RejectReason::NoResources,
                "an earlier run of the job is still finishing here",
            ));
        }
        // A later placement under a claim this host holds (claim reuse,
        // `held_claims.rs`): fresh, for its home, while the claim is idle
        // and unexpired; its node is the claim's.
        let reusing = match (req.claim_seq, granted.nonce()) {
            (0, _) => None,
            (seq, Some(nonce)) => {
                self.held
                    .check_reuse(nonce, &req.home, seq)
                    .map_err(|e| reject(RejectReason::BadClaim, e))?;
                Some(nonce)
            }
            (_, None) => {
                return Err(reject(
                    RejectReason::BadClaim,
                    "this claim cannot be reused here",
                ));
            }
        };
        // The one fit check, as the matchmaker made it, with this host's
        // numbers of the moment (owner, guests, resources, policy; the
        // job's CRIU requirement is one of its requirements).
        if let Err((reason, message)) = self.fit(&guests, &req.description, reusing) {
            return Err(reject(reason, message));
        }
        let gpus = self
            .choose_gpus(&guests, &req.description, reusing)
            .map_err(|(reason, message)| reject(reason, message))?;
        // Unique and durable (issue 14): home, job, run and the run's
        // nonce, so neither a restart of this station nor two homes' jobs
        // of the same id can ever share a sandbox.
        let run = match &req.run {
            Some(r) => r.clone(),
            None => {
                RunId::new(&req.home, req.job_id, req.run_count.saturating_add(1)).map_err(|e| {
                    reject(
                        RejectReason::NoResources,
                        format!("cannot name the run: {e}"),
                    )
                })?
            }
        };
        let guest_id = run.dir_name();
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
        // refusal here drops the slot lease again. A reuse spent it with
        // its first placement.
        if reusing.is_none() {
            self.verifier
                .spend(granted)
                .map_err(|e| reject(RejectReason::BadClaim, e.0))?;
        }
        if let Some(nonce) = granted.nonce() {
            let placed = Placed {
                nonce,
                guest: &key,
                cpus,
                memory_mb: mem,
                concurrency_limits: &req.description.concurrency_limits,
            };
            match (reusing, granted.expires_at()) {
                (Some(_), _) => self.held.reuse(&placed, req.claim_seq),
                (None, Some(expires_at)) => self.held.hold(&placed, expires_at),
                (None, None) => {}
            }
        }
        let entry = Arc::new(GuestEntry {
            guest_id,
            run,
            info: GuestInfo {
                job: req.job_id,
                home: req.home.clone(),
                owner: req.description.owner.clone(),
                // Wall clock (UNIX epoch): the ad and the owner's page show it.
                since: crate::clock::now(),
                suspended: false,
                concurrency_limits: req.description.concurrency_limits.clone(),
                // What the coordinator needs to find it a destination.
                class: Some(JobClass::of(&req.description)),
            },
            cpus,
            memory_mb: mem,
            gpus,
            state: Mutex::new(("starting".to_string(), None)),
            cmd,
            slot: SlotHold::new(lease),
            destination: watch::channel(None).0,
            claim_nonce: granted.nonce().map(str::to_string),
            handed_back: Default::default(),
        });
        guests.insert(key, entry.clone());
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
    if let Some(i) = &d.input
        && !d.untransferred.input
    {
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
