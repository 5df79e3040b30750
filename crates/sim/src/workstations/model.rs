//! The workstation-pool model: owners, background jobs, local runs, remote
//! placements and their accounting. Who gets remote capacity is left to a
//! [`Coordinator`](super::Coordinator) (the bare allocator or the
//! production coordinator); see the parent module for the model rules.

use super::{Class, PoolConfig, PoolResult};
use crate::SimError;
use crate::availability::{Interval, State};
use crate::engine::{EventId, EventQueue};
use crate::metrics::{JobRecord, StationAccount};
use crate::workload::JobSource;
use gleaner_core::alloc::{NodeId, StationDemand, StationId};
use gleaner_core::eviction::{Action, EvictionLadder, EvictionPolicy, GuestState};
use gleaner_core::time::{Dur, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loc {
    Queued,
    Local,
    Remote(u32),
    Done,
}

#[derive(Clone, Debug)]
pub(super) struct Job {
    pub(super) owner: u32,
    arrival: Time,
    demand: Dur,
    remaining: Dur,
    pub(super) loc: Loc,
    /// When execution (re)started; after a transfer this is in the future.
    exec_start: Time,
    completion: Option<EventId>,
    queued_since: Time,
    queued: Dur,
    /// Arrival to first start (local or remote), once it started.
    first_wait: Option<Dur>,
    remote_cpu: Dur,
    placements: u32,
    support: Dur,
    /// The eviction ladder of the current remote placement (with
    /// `PoolConfig::guest_eviction`; a fresh one per placement).
    ladder: Option<Box<EvictionLadder>>,
    /// When the ladder suspended the job on its host, while it is.
    suspended_since: Option<Time>,
    /// Time stopped on a host whose owner returned (T:L841's grace).
    suspended: Dur,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Ev {
    /// Station's current availability interval ends.
    Avail(u32),
    Arrival(u32, Dur),
    Complete(u32),
    /// A deadline of job `j`'s eviction ladder may have passed.
    Ladder(u32),
    Tick,
}

pub(super) struct Station {
    pub(super) state: State,
    avail: Box<dyn Iterator<Item = Interval> + Send>,
    /// Next raw interval not yet consumed (gap handling).
    pending: Option<Interval>,
    /// Normalised piece read ahead while merging equal states.
    look: Option<(State, Time)>,
    pub(super) local: Option<u32>,
    pub(super) guest: Option<u32>,
    pub(super) queue: VecDeque<u32>,
    /// Own jobs placed on other hosts.
    pub(super) remote: u32,
    jobs: JobSource,
    acct: StationAccount,
    last: Time,
}

/// A vector with O(1) insert/remove by value (for free nodes and holders).
#[derive(Default)]
pub(super) struct IndexedSet {
    pub(super) items: Vec<u32>,
    pub(super) pos: Vec<u32>,
}
pub(super) const NONE: u32 = u32::MAX;
impl IndexedSet {
    fn with_capacity(n: usize) -> Self {
        IndexedSet {
            items: Vec::with_capacity(n),
            pos: vec![NONE; n],
        }
    }
    fn insert(&mut self, x: u32) {
        if self.pos[x as usize] == NONE {
            self.pos[x as usize] = self.items.len() as u32;
            self.items.push(x);
        }
    }
    fn remove(&mut self, x: u32) {
        let p = self.pos[x as usize];
        if p != NONE {
            let last = self.items.len() - 1;
            self.items.swap(p as usize, last);
            let moved = self.items[p as usize];
            self.pos[moved as usize] = p;
            self.items.pop();
            self.pos[x as usize] = NONE;
        }
    }
}

/// The pool's state; the event handlers apply the model rules and raise
/// `capacity_event` where the thesis's coordinator would allocate.
pub(super) struct Model {
    pub(super) q: EventQueue<Ev>,
    pub(super) st: Vec<Station>,
    pub(super) jobs: Vec<Job>,
    transfer: Dur,
    sched: Dur,
    eviction: Option<EvictionPolicy>,
    pub(super) horizon: Time,
    // Incrementally maintained pool view.
    pub(super) demand: Vec<StationDemand>,
    pub(super) free: IndexedSet,
    held_hosts: IndexedSet,
    pub(super) held: Vec<(NodeId, StationId)>,
    pub(super) waiting_total: u64,
    completed: u64,
    placements: u64,
    pub(super) preemptions: u64,
    vacates: u64,
    /// A host became AV, a remote job completed, or an owner's local job
    /// ended leaving its AV host idle: allocate (T:L629, L643).
    pub(super) capacity_event: bool,
    /// Stations whose state, local job, guest, queue or remote count
    /// changed since `take_dirty` (what a station daemon re-advertises).
    dirty: IndexedSet,
    /// Since when no host has been free (every one NA or running a job),
    /// and the totals of such stretches (T:L799: "long periods that all
    /// workstations were utilized").
    full_since: Option<Time>,
    full_total: Dur,
    full_longest: Dur,
}

impl Model {
    pub(super) fn new(cfg: &PoolConfig, seed: u64) -> Result<Model, SimError> {
        let n = cfg.workloads.len();
        if n == 0 || n > (u32::MAX / 2) as usize || cfg.classes.len() != n {
            return Err(SimError::Param {
                name: "stations".into(),
                msg: "need ≥ 1 station and one class per workload".into(),
            });
        }
        if cfg.sched_interval.is_zero() {
            return Err(SimError::Param {
                name: "sched_interval".into(),
                msg: "must be positive".into(),
            });
        }
        if let Some(p) = &cfg.guest_eviction
            && matches!(
                p,
                EvictionPolicy::LingerLonger(_)
                    | EvictionPolicy::LingerForever(_)
                    | EvictionPolicy::CheckpointThenKill(_)
            )
        {
            // Lingering guests and lost work are the cluster simulator's
            // (crate::cluster); the pool model stops or moves guests only.
            return Err(SimError::Param {
                name: "guest_eviction".into(),
                msg: format!(
                    "the pool model supports immediate_eviction, pause_and_migrate and condor1988, not {}",
                    p.name()
                ),
            });
        }
        let mut st = Vec::with_capacity(n);
        for (i, w) in cfg.workloads.iter().enumerate() {
            st.push(Station {
                state: State::Na,
                avail: cfg.availability.station(seed, i as u32),
                pending: None,
                look: None,
                local: None,
                guest: None,
                queue: VecDeque::new(),
                remote: 0,
                jobs: JobSource::new(w.clone(), seed, 1_000_000 + i as u64),
                acct: StationAccount::default(),
                last: Time::ZERO,
            });
        }
        let demand = (0..n as u32)
            .map(|s| StationDemand {
                station: s,
                waiting: 0,
                remote: 0,
            })
            .collect();
        Ok(Model {
            q: EventQueue::new(),
            st,
            jobs: Vec::new(),
            transfer: cfg.transfer_cost,
            sched: cfg.sched_interval,
            eviction: cfg.guest_eviction,
            horizon: cfg.horizon,
            demand,
            free: IndexedSet::with_capacity(n),
            held_hosts: IndexedSet::with_capacity(n),
            held: Vec::new(),
            waiting_total: 0,
            completed: 0,
            placements: 0,
            preemptions: 0,
            vacates: 0,
            capacity_event: false,
            dirty: IndexedSet::with_capacity(n),
            full_since: None,
            full_total: Dur::ZERO,
            full_longest: Dur::ZERO,
        })
    }

    pub(super) fn now(&self) -> Time {
        self.q.now()
    }

    /// Accrues station `s`'s accounting up to now (call before any change
    /// of its queue or remote count).
    fn touch(&mut self, s: u32) {
        let now = self.now();
        let st = &mut self.st[s as usize];
        let dt = now.since(st.last);
        if !dt.is_zero() {
            let want = !st.queue.is_empty();
            let nodes = st.remote as f64;
            let wait = if want && st.remote == 0 { 1.0 } else { 0.0 };
            st.acct
                .accrue(dt, nodes, if want { 1.0 } else { 0.0 }, wait);
        }
        st.last = now;
    }

    fn sync_demand(&mut self, s: u32) {
        self.dirty.insert(s);
        let st = &self.st[s as usize];
        let d = &mut self.demand[s as usize];
        let w = st.queue.len() as u32;
        self.waiting_total = self.waiting_total + u64::from(w) - u64::from(d.waiting);
        d.waiting = w;
        d.remote = st.remote;
    }

    /// Recomputes whether host `h` is free capacity.
    fn sync_free(&mut self, h: u32) {
        self.dirty.insert(h);
        let st = &self.st[h as usize];
        if st.state == State::Av && st.local.is_none() && st.guest.is_none() {
            self.free.insert(h);
        } else {
            self.free.remove(h);
        }
    }

    fn set_guest(&mut self, h: u32, g: Option<u32>) {
        self.st[h as usize].guest = g;
        match g {
            Some(j) => {
                let owner = self.jobs[j as usize].owner;
                if self.held_hosts.pos[h as usize] == NONE {
                    self.held_hosts.insert(h);
                    self.held.push((h, owner));
                } else {
                    let p = self.held_hosts.pos[h as usize] as usize;
                    self.held[p] = (h, owner);
                }
            }
            None => {
                let p = self.held_hosts.pos[h as usize];
                if p != NONE {
                    self.held_hosts.remove(h);
                    self.held.swap_remove(p as usize);
                }
            }
        }
        self.sync_free(h);
    }

    fn enqueue(&mut self, j: u32, front: bool) {
        let owner = self.jobs[j as usize].owner;
        self.touch(owner);
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        job.loc = Loc::Queued;
        job.queued_since = now;
        let q = &mut self.st[owner as usize].queue;
        if front {
            q.push_front(j);
        } else {
            q.push_back(j);
        }
        self.sync_demand(owner);
    }

    fn new_job(&mut self, owner: u32, arrival: Time, demand: Dur) -> u32 {
        let id = self.jobs.len() as u32;
        self.jobs.push(Job {
            owner,
            arrival,
            demand,
            remaining: demand,
            loc: Loc::Queued,
            exec_start: arrival,
            completion: None,
            queued_since: arrival,
            queued: Dur::ZERO,
            first_wait: None,
            remote_cpu: Dur::ZERO,
            placements: 0,
            support: Dur::ZERO,
            ladder: None,
            suspended_since: None,
            suspended: Dur::ZERO,
        });
        id
    }

    /// Takes the first queued job of `s` off its queue.
    pub(super) fn dequeue(&mut self, s: u32) -> Option<u32> {
        self.touch(s);
        let j = self.st[s as usize].queue.pop_front()?;
        self.sync_demand(s);
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        job.queued += now.since(job.queued_since);
        Some(j)
    }

    fn start(&mut self, j: u32, loc: Loc, delay: Dur) {
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        job.loc = loc;
        job.first_wait.get_or_insert(job.queued);
        job.exec_start = now + delay;
        let at = job.exec_start + job.remaining;
        job.completion = Some(self.q.schedule(at, Ev::Complete(j)));
    }

    /// Stops job `j` wherever it runs, crediting the CPU it got.
    fn stop(&mut self, j: u32) {
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        if let Some(e) = job.completion.take() {
            self.q.cancel(e);
        }
        // A suspended job ran nothing since it was stopped.
        let ran = match job.suspended_since.take() {
            Some(t) => {
                job.suspended += now.since(t);
                Dur::ZERO
            }
            None => now.since(job.exec_start).min(job.remaining),
        };
        job.remaining = Dur(job.remaining.0 - ran.0);
        let owner = job.owner;
        match job.loc {
            Loc::Local => self.st[owner as usize].acct.local_cpu += ran.as_secs_f64(),
            Loc::Remote(_) => {
                job.remote_cpu += ran;
                self.st[owner as usize].acct.remote_cpu += ran.as_secs_f64();
            }
            _ => {}
        }
    }

    /// Vacates the guest of host `h` back to its owner's queue.
    pub(super) fn vacate_guest(&mut self, h: u32, work: &mut Vec<u32>) {
        if let Some(g) = self.st[h as usize].guest {
            self.stop(g);
            self.jobs[g as usize].ladder = None;
            let owner = self.jobs[g as usize].owner;
            self.touch(owner);
            self.st[owner as usize].remote -= 1;
            self.set_guest(h, None);
            self.enqueue(g, true);
            self.vacates += 1;
            work.push(owner);
        }
    }

    /// Runs the station's own jobs locally where the rules demand it, for
    /// every station in the worklist (cascades: a displaced guest may start
    /// on its own owner's host).
    pub(super) fn settle(&mut self, mut work: Vec<u32>) {
        while let Some(s) = work.pop() {
            let st = &self.st[s as usize];
            if st.state != State::Av || st.local.is_some() || st.queue.is_empty() {
                self.sync_free(s);
                continue;
            }
            // Owner's job displaces a guest (R-SIM-3).
            self.vacate_guest(s, &mut work);
            if let Some(j) = self.dequeue(s) {
                self.st[s as usize].local = Some(j);
                self.start(j, Loc::Local, Dur::ZERO);
            }
            self.sync_free(s);
        }
    }

    /// Places `j` (already dequeued) on host `h` remotely.
    pub(super) fn place_remote(&mut self, j: u32, h: u32) {
        let owner = self.jobs[j as usize].owner;
        self.touch(owner);
        self.st[owner as usize].remote += 1;
        self.sync_demand(owner);
        let job = &mut self.jobs[j as usize];
        job.placements += 1;
        job.support += self.transfer;
        self.placements += 1;
        self.start(j, Loc::Remote(h), self.transfer);
        if let Some(p) = self.eviction {
            let now = self.now();
            let mut l = Box::new(EvictionLadder::new(p, now));
            // A placement goes only to a free (AV) host: the owner is idle.
            let _ = l.on_placed(now, false);
            self.jobs[j as usize].ladder = Some(l);
        }
        self.set_guest(h, Some(j));
    }

    /// The owner of host `h` returned (AV→NA): its guest leaves at once
    /// (T:L631), or follows its eviction ladder (T:L841).
    fn guest_owner_active(&mut self, h: u32, work: &mut Vec<u32>) {
        let Some(g) = self.st[h as usize].guest else {
            return;
        };
        let now = self.now();
        match self.jobs[g as usize].ladder.as_mut() {
            Some(l) => {
                let acts = l.on_owner_active(now);
                self.apply_ladder(g, h, &acts, work);
            }
            None => self.vacate_guest(h, work),
        }
    }

    /// Carries out what a guest's eviction ladder decided, as the station's
    /// starter does with the real process.
    fn apply_ladder(&mut self, j: u32, h: u32, acts: &[Action], work: &mut Vec<u32>) {
        let now = self.now();
        for a in acts {
            match a {
                Action::Suspend => {
                    // Credit the CPU it got, then hold it on the host.
                    self.stop(j);
                    let job = &mut self.jobs[j as usize];
                    job.suspended_since = Some(now);
                    job.exec_start = now;
                    if let Some(d) = job.ladder.as_ref().and_then(|l| l.next_deadline()) {
                        self.q.schedule(d.max(now), Ev::Ladder(j));
                    }
                }
                Action::Resume | Action::RunNormal => {
                    let job = &mut self.jobs[j as usize];
                    if let Some(t) = job.suspended_since.take() {
                        job.suspended += now.since(t);
                        // Resumed in place: no transfer, no lost work.
                        self.start(j, Loc::Remote(h), Dur::ZERO);
                    }
                }
                // The pool model has no destination to report to the
                // ladder, so a move goes through the owner's queue: the
                // checkpoint goes home and the coordinator places the job
                // again (T:L841 "checkpointed and moved").
                Action::Migrate { .. } | Action::Vacate { .. } | Action::Kill => {
                    self.vacate_guest(h, work);
                    return;
                }
                Action::Checkpoint | Action::LowerPriority => {}
            }
        }
    }

    /// A deadline of job `j`'s ladder may have passed.
    fn ladder_timer(&mut self, j: u32) {
        let now = self.now();
        let Loc::Remote(h) = self.jobs[j as usize].loc else {
            return;
        };
        let Some(l) = self.jobs[j as usize].ladder.as_mut() else {
            return;
        };
        if l.state() != GuestState::Suspended || l.next_deadline().is_none_or(|d| d > now) {
            return; // stale: resumed or moved meanwhile
        }
        let acts = l.on_timer(now);
        let mut work = Vec::new();
        self.apply_ladder(j, h, &acts, &mut work);
        self.settle(work);
    }

    fn finish(&mut self, j: u32) {
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        job.completion = None;
        let ran = now.since(job.exec_start);
        job.remaining = Dur::ZERO;
        let owner = job.owner;
        let loc = job.loc;
        job.loc = Loc::Done;
        let remote = matches!(loc, Loc::Remote(_));
        if remote {
            job.remote_cpu += ran;
        }
        let rec = JobRecord {
            arrival: job.arrival,
            finish: now,
            demand: job.demand,
            finished_remote: remote,
            remote_cpu: job.remote_cpu,
            queued: job.queued,
            first_wait: job.first_wait.unwrap_or(job.queued),
            placements: job.placements,
            support: job.support,
            suspended: job.suspended,
        };
        self.completed += 1;
        let mut work = vec![owner];
        match loc {
            Loc::Local => {
                let a = &mut self.st[owner as usize];
                a.acct.local_cpu += ran.as_secs_f64();
                a.local = None;
            }
            Loc::Remote(h) => {
                self.touch(owner);
                let a = &mut self.st[owner as usize];
                a.acct.remote_cpu += ran.as_secs_f64();
                a.remote -= 1;
                self.sync_demand(owner);
                self.set_guest(h, None);
                work.push(h);
            }
            _ => {}
        }
        self.st[owner as usize].acct.jobs.push(rec);
        if let Some(nj) = self.st[owner as usize].jobs.on_completion(now) {
            let id = self.new_job(owner, nj.arrival, nj.demand);
            self.enqueue(id, false);
        }
        self.settle(work);
        // Capacity events: a remote completion frees its node; a local
        // completion that leaves the owner's host idle turns it into free
        // capacity, just as NA→AV does.
        let freed_local = loc == Loc::Local && self.free.pos[owner as usize] != NONE;
        if remote || freed_local {
            self.capacity_event = true;
        }
    }

    /// The next normalised piece of station `s` starting at `from`: gaps
    /// are NA, and after the source ends the station stays NA forever.
    fn next_piece(&mut self, s: u32, from: Time) -> (State, Time) {
        let st = &mut self.st[s as usize];
        if let Some(p) = st.look.take() {
            return p;
        }
        loop {
            let Some(iv) = st.pending.take().or_else(|| st.avail.next()) else {
                return (State::Na, Time::MAX);
            };
            if iv.end <= from {
                continue; // empty or overlapping the past
            }
            if iv.start > from {
                st.pending = Some(iv);
                return (State::Na, iv.start);
            }
            return (iv.state, iv.end);
        }
    }

    /// The segment of constant state starting at `from` (equal adjacent
    /// pieces merged), as (state, end).
    fn next_segment(&mut self, s: u32, from: Time) -> (State, Time) {
        let (state, mut end) = self.next_piece(s, from);
        while end != Time::MAX && end < self.horizon {
            let (st2, e2) = self.next_piece(s, end);
            if st2 == state {
                end = e2;
            } else {
                self.st[s as usize].look = Some((st2, e2));
                break;
            }
        }
        (state, end)
    }

    fn avail_change(&mut self, s: u32) {
        let now = self.now();
        let (state, end) = self.next_segment(s, now);
        let old = self.st[s as usize].state;
        self.st[s as usize].state = state;
        if end < self.horizon {
            self.q.schedule(end, Ev::Avail(s));
        }
        if old == state && now > Time::ZERO {
            return;
        }
        match state {
            State::Na => {
                // Vacate everything on the host (T:L631).
                let mut work = Vec::new();
                if let Some(j) = self.st[s as usize].local.take() {
                    self.stop(j);
                    self.enqueue(j, true);
                    self.vacates += 1;
                }
                self.guest_owner_active(s, &mut work);
                self.sync_free(s);
                self.settle(work);
            }
            State::Av => {
                // A guest suspended here resumes in place (T:L841).
                let now = self.now();
                if let Some(g) = self.st[s as usize].guest
                    && let Some(l) = self.jobs[g as usize].ladder.as_mut()
                {
                    let acts = l.on_owner_idle(now);
                    let mut work = Vec::new();
                    self.apply_ladder(g, s, &acts, &mut work);
                    self.settle(work);
                }
                self.settle(vec![s]);
                self.capacity_event = true;
            }
        }
    }

    fn arrival(&mut self, s: u32, demand: Dur) {
        let now = self.now();
        let id = self.new_job(s, now, demand);
        self.enqueue(id, false);
        self.schedule_arrival(s);
        self.settle(vec![s]);
    }

    fn schedule_arrival(&mut self, s: u32) {
        let now = self.now();
        if let Some(nj) = self.st[s as usize].jobs.next_arrival(now)
            && nj.arrival < self.horizon
        {
            self.q.schedule(nj.arrival, Ev::Arrival(s, nj.demand));
        }
    }

    /// Whether host `h` could take a guest now: AV, no local job, no guest.
    pub(super) fn is_free(&self, h: u32) -> bool {
        self.free.pos.get(h as usize).is_some_and(|&p| p != NONE)
    }

    /// Stations changed since the last call, in the order they changed.
    pub(super) fn take_dirty(&mut self) -> Vec<u32> {
        let out = std::mem::take(&mut self.dirty.items);
        for &s in &out {
            self.dirty.pos[s as usize] = NONE;
        }
        out
    }

    /// Counts a preemption the coordinator carried out.
    pub(super) fn count_preemption(&mut self) {
        self.preemptions += 1;
    }

    /// Schedules the next SchedInterval tick.
    fn schedule_tick(&mut self) {
        let next = self.now() + self.sched;
        if next < self.horizon {
            self.q.schedule(next, Ev::Tick);
        }
    }

    /// Opens or closes a stretch with no free host.
    fn track_full(&mut self) {
        let now = self.now();
        match (self.free.items.is_empty(), self.full_since) {
            (true, None) => self.full_since = Some(now),
            (false, Some(since)) => {
                let d = now.since(since);
                self.full_total += d;
                self.full_longest = self.full_longest.max(d);
                self.full_since = None;
            }
            _ => {}
        }
    }

    /// Runs to the horizon with `coord` deciding remote capacity.
    pub(super) fn run(
        mut self,
        coord: &mut dyn super::Coordinator,
        classes: Vec<Class>,
    ) -> PoolResult {
        let n = self.st.len() as u32;
        // Time 0: availability first, then jobs, then the first tick.
        for s in 0..n {
            self.q.schedule(Time::ZERO, Ev::Avail(s));
        }
        for s in 0..n {
            let init = self.st[s as usize].jobs.initial();
            for j in init {
                if j.arrival == Time::ZERO {
                    let id = self.new_job(s, j.arrival, j.demand);
                    self.enqueue(id, false);
                } else if j.arrival < self.horizon {
                    self.q.schedule(j.arrival, Ev::Arrival(s, j.demand));
                }
            }
            self.schedule_arrival(s);
        }
        self.q.schedule(Time::ZERO, Ev::Tick);
        while let Some((_, ev)) = self.q.pop_until(Time(self.horizon.0.saturating_sub(1))) {
            match ev {
                Ev::Avail(s) => self.avail_change(s),
                Ev::Arrival(s, d) => self.arrival(s, d),
                Ev::Complete(j) => self.finish(j),
                Ev::Ladder(j) => self.ladder_timer(j),
                Ev::Tick => {
                    coord.tick(&mut self);
                    self.schedule_tick();
                }
            }
            if std::mem::take(&mut self.capacity_event) {
                coord.capacity_event(&mut self);
            }
            coord.after_event(&mut self);
            self.track_full();
        }
        // Close the books at the horizon: credit running jobs, accrue waits.
        let events = self.q.delivered();
        self.q.schedule(self.horizon, Ev::Tick);
        let _ = self.q.pop();
        for j in 0..self.jobs.len() as u32 {
            if matches!(self.jobs[j as usize].loc, Loc::Local | Loc::Remote(_)) {
                self.stop(j);
            }
        }
        for s in 0..n {
            self.touch(s);
        }
        if let Some(since) = self.full_since.take() {
            let d = self.horizon.since(since);
            self.full_total += d;
            self.full_longest = self.full_longest.max(d);
        }
        PoolResult {
            all_busy_total: self.full_total,
            all_busy_longest: self.full_longest,
            accounts: self.st.into_iter().map(|s| s.acct).collect(),
            classes,
            horizon: self.horizon,
            events,
            allocation_passes: coord.passes(),
            unusable_grants: coord.unusable_grants(),
            completed: self.completed,
            placements: self.placements,
            preemptions: self.preemptions,
            vacates: self.vacates,
        }
    }
}
