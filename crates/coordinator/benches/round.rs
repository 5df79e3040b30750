//! The coordinator's cost per scheduling round with 10 000 advertising
//! stations (issue #4), calling the pool code directly (no HTTP): every
//! station's ad goes through `Pool::advertise`, then `Pool::tick` runs the
//! periodic pass (expire claims, Up-Down index update of Mutka 1988
//! Table 4.3, allocation of Table 4.2, grants signed as claim tickets).
//!
//! The pool: 10 000 one-CPU stations; 10 % have 1–5 idle jobs; 50 % are AV
//! and host a guest of one of the wanting stations (so Up-Down has
//! preemptions to weigh); 10 % are AV and free; 30 % are NA (owner back).
//! Virtual time advances one 10 s interval per round, so claims and
//! reservations expire and are issued again as in a running pool.
//!
//! Every ad of a round carries a new sequence number and a new free-disk
//! figure, as a real station's does. In `round_ads_and_tick` nothing else
//! changes (the coordinator keeps what it derived from the last ad); in
//! `round_with_churn` one station in ten also reports a change of owner
//! state (a station flips for one round, then flips back), so one ad in
//! ten is new and capacity events start passes between ticks.
//!
//! Run: `cargo bench -p gleaner-coordinator --bench round`
//! (`bench/pool/run.sh` runs it too).

use criterion::{Criterion, criterion_group, criterion_main};
use gleaner_coordinator::{CoordinatorConfig, Outbox, Pool};
use gleaner_core::detector::OwnerState;
use gleaner_core::rng::{Rng, seeded};
use gleaner_core::time::{Dur, Time};
use gleaner_proto::creds::PoolSigner;
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::matchmaking::JobClass;
use gleaner_proto::wire::{Demand, GuestInfo, PROTOCOL_VERSION, StationAd};
use std::hint::black_box;
use std::time::{Duration, Instant};

const STATIONS: usize = 10_000;
const INTERVAL: u64 = 10;
/// Ads made (untimed) and given to the pool (timed) at a time.
const BATCH: usize = 100;

struct Bench {
    pool: Pool,
    ads: Vec<StationAd>,
    now: Time,
    /// Rounds advertised so far.
    round: u64,
    /// The pool's effects, dropped after each round as a server delivers
    /// them.
    out: Outbox,
    /// The last round's emptied buffer of ads.
    spare: Vec<StationAd>,
}

fn ads(n: usize) -> Vec<StationAd> {
    let mut rng = seeded(42);
    let name = |i: usize| format!("ws{i:05}");
    let wanting: Vec<usize> = (0..n).filter(|_| rng.random_bool(0.10)).collect();
    let mut out = Vec::with_capacity(n);
    let mut next_job = 1u64;
    for i in 0..n {
        let idle = if wanting.binary_search(&i).is_ok() {
            rng.random_range(1..=5u32)
        } else {
            0
        };
        let r: f64 = rng.random();
        let (state, guests) = if r < 0.5 && !wanting.is_empty() {
            let home = wanting[rng.random_range(0..wanting.len())];
            next_job += 1;
            let g = GuestInfo {
                job: JobId::new(next_job, 0),
                home: name(home),
                owner: "user".into(),
                since: Time::ZERO,
                suspended: false,
                concurrency_limits: Vec::new(),
                class: None,
            };
            (OwnerState::Av, vec![g])
        } else if r < 0.6 {
            (OwnerState::Av, vec![])
        } else {
            (OwnerState::Na, vec![])
        };
        // Stations with waiting jobs advertise them as one job class with a
        // typical requirement, so the round includes matchmaking.
        let classes = if idle > 0 {
            let mut d = JobDescription::new("user", "/bin/true");
            d.requirements = Some("TARGET.Memory >= 1024 && TARGET.Arch == \"X86_64\"".into());
            d.request_memory_mb = Some(512);
            let mut c = JobClass::of(&d);
            c.count = idle;
            vec![c]
        } else {
            Vec::new()
        };
        out.push(StationAd {
            protocol: PROTOCOL_VERSION,
            name: name(i),
            address: format!("http://10.0.{}.{}:9620", i / 250, i % 250),
            state,
            cpus: 1,
            memory_mb: 4096,
            disk_free_kb: 1 << 20,
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            speed: 1.0,
            running_guests: guests,
            attrs: Default::default(),
            demand: Demand {
                idle_jobs: idle,
                remote_jobs: 0,
            },
            policy: Default::default(),
            classes,
            submit_only: false,
            execute_only: false,
            sequence: 0,
            sent_at: Time::ZERO,
            claims_used: Vec::new(),
            claims_held: Vec::new(),
            summary: None,
        });
    }
    // Remote jobs of each home = its guests in the pool.
    let mut remote = std::collections::HashMap::<String, u32>::new();
    for a in &out {
        for g in &a.running_guests {
            *remote.entry(g.home.clone()).or_default() += 1;
        }
    }
    for a in &mut out {
        a.demand.remote_jobs = remote.get(&a.name).copied().unwrap_or(0);
    }
    out
}

impl Bench {
    fn new() -> Bench {
        let config = CoordinatorConfig {
            scheduling_interval_secs: INTERVAL as f64,
            advertise_period_secs: INTERVAL,
            startup_grace_secs: Some(0.0),
            seed: Some(7),
            ..CoordinatorConfig::default()
        };
        let now = Time::from_secs(1_800_000_000);
        // Claims are signed with the pool's signing key, as the daemon does.
        let pool = Pool::from_config(&config, Box::new(PoolSigner::from_seed(&[7; 32])), 7, now)
            .unwrap_or_else(|e| panic!("bench pool: {e}"));
        let mut b = Bench {
            pool,
            ads: ads(STATIONS),
            now,
            round: 0,
            out: Outbox::default(),
            spare: Vec::new(),
        };
        // Warm up: every station known, indices spread by a few passes.
        for _ in 0..5 {
            b.advertise_all(false);
            b.tick();
        }
        // What rounds produce, for the reader of the numbers.
        for r in 0..12 {
            let churn = r >= 6;
            b.send_ads(churn);
            b.pass();
            let grants = b
                .out
                .messages
                .iter()
                .filter(|m| matches!(m, gleaner_coordinator::pool::Message::Grant { .. }))
                .count();
            eprintln!(
                "round{}: {grants} grants, {} preemptions",
                if churn { " with churn" } else { "" },
                b.out.messages.len() - grants
            );
            b.out = Outbox::default();
        }
        b
    }

    /// Station `i`'s ad of this round, as if just decoded.
    fn ad(&self, i: usize, churn: bool) -> StationAd {
        let mut ad = self.ads[i].clone();
        ad.sequence = self.round;
        ad.disk_free_kb -= self.round % 64;
        // Stations i ≡ round (mod 20) flip this round and flip back in the
        // next: one ad in ten differs from its station's last.
        if churn && (i as u64 + self.round).is_multiple_of(20) {
            ad.state = match ad.state {
                OwnerState::Av => OwnerState::Na,
                OwnerState::Na => OwnerState::Av,
            };
        }
        ad
    }

    /// Ads `from..to` of the next round (started by [`Bench::next_round`]),
    /// as if just decoded.
    fn ads_of(&mut self, from: usize, to: usize, churn: bool) -> Vec<StationAd> {
        let mut ads = std::mem::take(&mut self.spare);
        ads.extend((from..to).map(|i| self.ad(i, churn)));
        ads
    }

    fn next_round(&mut self) {
        self.round += 1;
    }

    /// Ads given to the pool, their effects left in `out`. The emptied
    /// buffer is kept for the next ones.
    fn advertise(&mut self, mut ads: Vec<StationAd>) {
        for ad in ads.drain(..) {
            black_box(self.pool.advertise(ad, self.now, &mut self.out));
        }
        self.spare = ads;
    }

    /// One round's ads, their effects left in `out`.
    fn send_ads(&mut self, churn: bool) {
        self.next_round();
        let ads = self.ads_of(0, self.ads.len(), churn);
        self.advertise(ads);
    }

    /// Rounds of `churn` ads and ticks, timed apart from making the ads.
    /// A server decodes each ad just before it hands it to the pool, so the
    /// ad is in the CPU's caches then; the bench makes them [`BATCH`] at a
    /// time, untimed, and times the pool's work on each batch (making all
    /// 10 000 first, 10 MB, left every ad out of the caches by its turn).
    fn timed_rounds(&mut self, iters: u64, churn: bool) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.next_round();
            for from in (0..self.ads.len()).step_by(BATCH) {
                let ads = self.ads_of(from, (from + BATCH).min(self.ads.len()), churn);
                let t = Instant::now();
                self.advertise(ads);
                total += t.elapsed();
            }
            let t = Instant::now();
            self.out = Outbox::default();
            self.tick();
            total += t.elapsed();
        }
        total
    }

    /// The next interval's periodic pass, its effects left in `out`.
    fn pass(&mut self) {
        self.now += Dur::from_secs(INTERVAL);
        self.pool.tick(self.now, &mut self.out);
    }

    fn advertise_all(&mut self, churn: bool) {
        self.send_ads(churn);
        self.out = Outbox::default();
    }

    fn tick(&mut self) {
        self.pass();
        self.out = Outbox::default();
    }
}

fn round(c: &mut Criterion) {
    let mut g = c.benchmark_group("coordinator_10000_stations");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    // glibc's fastbins off, as `glean coordinator` runs
    // (crates/cli/src/daemon_memory.rs, `no_fastbins`).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
    let mut b = Bench::new();
    // The periodic pass alone (ads applied untimed before each).
    g.bench_function("tick", |bench| {
        bench.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                b.advertise_all(false);
                let t = Instant::now();
                b.tick();
                total += t.elapsed();
            }
            total
        })
    });
    // A whole round: 10 000 ads, as if just decoded, given to the pool +
    // tick.
    g.bench_function("round_ads_and_tick", |bench| {
        bench.iter_custom(|iters| b.timed_rounds(iters, false))
    });
    // The same with one ad in ten reporting an owner's arrival or leaving.
    g.bench_function("round_with_churn", |bench| {
        bench.iter_custom(|iters| b.timed_rounds(iters, true))
    });
    g.finish();
}

criterion_group!(benches, round);
criterion_main!(benches);
