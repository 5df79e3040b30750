//! The guest's task, from acceptance until its slot is freed: the line to
//! home, the sandbox (locked for CRIU jobs), the lease, the run, and the
//! clean-up after it.

use super::super::config::StarterConfig;
use super::super::criu::claim_sandbox;
use super::super::jic::start_lease;
use super::super::sandbox::remove_stale;
use super::{Command, GuestEntry, GuestRun, Home, Starter};
use crate::checkpoint::SelfCheckpoint;
use gleaner_proto::job::{CheckpointMethod, JobEventKind, JobState};
use gleaner_proto::wire::PlacementRequest;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Runs one accepted guest to its end, then frees its slot.
pub(crate) async fn guest_task(
    starter: Arc<Starter>,
    entry: Arc<GuestEntry>,
    req: PlacementRequest,
    mut rx: mpsc::UnboundedReceiver<Command>,
) {
    // Whatever ends this task (a panic, the runtime going away), the
    // slot's processes die with it.
    let _slot_guard = ReleaseOnExit(entry.clone());
    let (home, reporter) = Home::open(&starter, &req);
    let criu_images = (req.description.checkpoint_method == CheckpointMethod::Criu).then(|| {
        starter
            .config
            .execute_dir
            .join(format!("{}.criu", entry.guest_id))
    });
    let (sandbox, _sandbox_lock) = if criu_images.is_some() {
        match claim_sandbox(&starter.config, &req.home, req.job_id).await {
            Ok((dir, lock)) => (dir, Some(lock)),
            Err(e) => {
                tracing::warn!(job = %req.job_id, error = %e, "CRIU sandbox busy");
                home.report(
                    JobEventKind::Evicted,
                    JobState::Idle,
                    format!("host error: {e}"),
                );
                drop(home);
                let _ = reporter.await;
                entry.slot.release(&entry.guest_id).await;
                starter.lock_guests().remove(&entry.key());
                if node_freed(&starter, &entry) {
                    starter.guest_ended.notify_one();
                }
                return;
            }
        }
    } else {
        (starter.config.execute_dir.join(&entry.guest_id), None)
    };
    // The lease's loss and the home's refusal of this run as stale are
    // one signal: the guest dies (`Home::stale`).
    let lease_rx = home.stale();
    let lease = start_lease(&starter, &req, &entry.guest_id, home.stale_sender());
    let run = GuestRun {
        starter: &starter,
        entry: &entry,
        req: &req,
        sandbox: sandbox.clone(),
        home,
        ckpt: SelfCheckpoint::for_job(&req.description).filter(|_| criu_images.is_none()),
        criu_images: criu_images.clone(),
        lease: lease_rx,
        base_lens: Mutex::new((0, 0)),
        cpu_secs: Mutex::new(0.0),
        gang_held: std::sync::atomic::AtomicBool::new(false),
        disk: Mutex::new(None),
    };
    let outcome = run.run(&mut rx).await;
    let cpu_secs = run.cpu_secs.lock().map_or(0.0, |c| *c);
    drop(run);
    starter
        .owner_log
        .guest_ended(crate::host::owner_log::GuestRun {
            job: req.job_id.to_string(),
            owner: entry.info.owner.clone(),
            home: req.home.clone(),
            started_ms: entry.info.since.as_micros() / 1000,
            ended_ms: crate::clock::now().as_micros() / 1000,
            cpu_secs,
            outcome: gleaner_proto::summary::cut(&outcome, 300),
        });
    if let Some(l) = lease {
        l.abort();
    }
    // Every report sent before the slot is freed, so that a new
    // placement of the same job never races its old report.
    let _ = reporter.await;
    // Every process of the slot's uid killed (escapees of a guest without
    // cgroups too) before its sandbox goes and the slot is free again.
    entry.slot.release(&entry.guest_id).await;
    remove_leftovers(&starter.config, sandbox, criu_images);
    starter.lock_guests().remove(&entry.key());
    // The node is free, unless its claim holds it for the home's next job
    // (`held_claims.rs`): the advertise loop tells the coordinator now.
    if node_freed(&starter, &entry) {
        starter.guest_ended.notify_one();
    }
    // And whatever a dead run left (a crash mid-cleanup, a failed removal).
    if !starter.config.keep_sandboxes {
        let st = starter.clone();
        let _ = tokio::task::spawn_blocking(move || {
            remove_stale(&st.config.execute_dir, || {
                st.lock_guests()
                    .values()
                    .map(|g| g.guest_id.clone())
                    .collect()
            })
        })
        .await;
    }
}

/// Whether the guest's end freed its node: always, unless the claim it
/// was placed with is held for its home's next job (or already runs it).
fn node_freed(starter: &Starter, entry: &GuestEntry) -> bool {
    entry
        .claim_nonce
        .as_ref()
        .is_none_or(|n| starter.held.guest_gone(n, &entry.key()))
}

/// Releases the guest's slot (blocking kill by uid) if the task ends
/// without doing so itself.
struct ReleaseOnExit(Arc<GuestEntry>);

impl Drop for ReleaseOnExit {
    fn drop(&mut self) {
        self.0.slot.release_now();
    }
}

/// Removes the sandbox (and a CRIU job's images) unless they are kept.
fn remove_leftovers(config: &StarterConfig, sandbox: PathBuf, criu_images: Option<PathBuf>) {
    let mut leftovers = vec![sandbox];
    leftovers.extend(criu_images);
    for dir in leftovers {
        if !config.keep_sandboxes
            && let Err(e) = std::fs::remove_dir_all(&dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %dir.display(), error = %e, "cannot remove sandbox");
        }
    }
}
