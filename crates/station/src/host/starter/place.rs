//! The placement decision: may this guest start here now? On acceptance
//! the guest gets its entry (its CPUs, memory and slot account) and a task
//! of its own (`run/`).

use super::claims::Granted;
use super::guests::{Command, GuestEntry};
use super::run::guest_task;
use super::sandbox::local_name;
use super::slot::SlotHold;
use super::{Starter, StarterError};
use gleaner_core::detector::OwnerState;
use gleaner_proto::job::{CheckpointMethod, JobDescription};
use gleaner_proto::wire::{GuestInfo, PlacementRequest, PlacementResponse, RejectReason};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

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
            return refused;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let entry = match self.take_slot(&req, &granted, tx) {
            Ok(e) => e,
            Err(answer) => return answer,
        };
        tracing::info!(job = %req.job_id, guest = %entry.guest_id, home = %req.home, "placement accepted");
        let guest_id = entry.guest_id.clone();
        let me = self.clone();
        tokio::spawn(async move { guest_task(me, entry, req, rx).await });
        PlacementResponse::Accepted { guest_id }
    }

    /// Everything that refuses a placement before the guest table is
    /// looked at (the claim is verified before): draining, the owner, file
    /// names, CRIU, the station policy, disk.
    fn refusal(&self, req: &PlacementRequest) -> Option<PlacementResponse> {
        if self.draining.load(Ordering::SeqCst) {
            return Some(reject(RejectReason::Draining, "station is draining"));
        }
        // Only lingering policies use a host whose owner is active (Ryu &
        // Hollingsworth L238, "semi-available" nodes); the others would
        // evict the guest at once (Mutka 1988 L583).
        let owner = *self.owner.borrow();
        if owner == OwnerState::Na && !self.config.policy.lingers() {
            return Some(reject(
                RejectReason::OwnerActive,
                "the owner is using this station",
            ));
        }
        if let Err(msg) = validate_names(&req.description) {
            return Some(reject(RejectReason::RequirementsUnmet, msg));
        }
        if req.description.checkpoint_method == CheckpointMethod::Criu
            && !crate::checkpoint::criu_status().available()
        {
            return Some(reject(
                RejectReason::RequirementsUnmet,
                "the job is checkpointed with CRIU and this host has no working CRIU",
            ));
        }
        if let Some(check) = self.admission.get()
            && let Err(msg) = check(&req.description)
        {
            return Some(reject(RejectReason::RequirementsUnmet, msg));
        }
        if let Some(kb) = req.description.request_disk_kb {
            let free = disk_free_kb(&self.config.execute_dir);
            if free < kb.saturating_add(self.config.reserved_disk_kb) {
                return Some(reject(
                    RejectReason::NoResources,
                    format!("{kb} KiB of disk requested, {free} KiB free"),
                ));
            }
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
        let used_cpus: u32 = guests.values().map(|g| g.cpus).sum();
        let used_mem: u64 = guests.values().map(|g| g.memory_mb).sum();
        if used_cpus + cpus > self.config.cpus {
            return Err(reject(
                RejectReason::NoResources,
                format!(
                    "{cpus} CPUs requested, {} free",
                    self.config.cpus.saturating_sub(used_cpus)
                ),
            ));
        }
        if used_mem + mem > self.config.memory_mb {
            return Err(reject(
                RejectReason::NoResources,
                format!(
                    "{mem} MiB requested, {} MiB free",
                    self.config.memory_mb.saturating_sub(used_mem)
                ),
            ));
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
            },
            cpus,
            memory_mb: mem,
            state: Mutex::new(("starting".to_string(), None)),
            cmd,
            slot: SlotHold::new(lease),
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

fn disk_free_kb(dir: &Path) -> u64 {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()) / 1024,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "statvfs failed");
            0
        }
    }
}
