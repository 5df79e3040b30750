//! Reservations in a real pool (issue 17, Mutka 1988 ch. 6): a
//! `glean coordinator` with a `[reservations]` section (30-second slots, so
//! the test need not wait an hour) and four `glean station` processes on
//! loopback, driven through `glean reserve`, `glean submit` and the
//! coordinator's API:
//!
//! - a user reserves 2 of 4 stations for the next slot (and a request for
//!   more machines than the pool has is reported refused); once the slot
//!   begins their jobs run on those two and nowhere else, and another
//!   user's jobs get the other two;
//! - an owner returns on a reserved station: the coordinator replaces it
//!   with the unreserved AV station free the longest (Longest-Free), and
//!   the reserving user's job moves there;
//! - a coordinator SIGKILL and restart keeps every reservation, every
//!   balance and the binding.

mod common;

use common::{
    TestKeys, TestOwner, free_port, glean_in, kill9, socket_line, start_daemon, stop_term,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

const SLOT_SECS: u64 = 30;

struct Daemon {
    what: &'static str,
    config: PathBuf,
    log: PathBuf,
    addr: SocketAddr,
    child: Option<Child>,
}

impl Daemon {
    fn start(&mut self) {
        let child = start_daemon(self.what, &self.config, &self.log, self.addr);
        self.child = Some(child);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_term(&mut c);
        }
    }
}

struct User {
    name: String,
    home: PathBuf,
    work: PathBuf,
    _owner: TestOwner,
}

impl User {
    fn glean(&self, args: &[&str]) -> Output {
        glean_in(&self.home, &self.work, args)
    }
    fn json(&self, args: &[&str]) -> (bool, serde_json::Value) {
        let out = self.glean(args);
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&out.stderr).into_owned())
        });
        (out.status.success(), v)
    }
    fn submit(&self, text: &str) {
        std::fs::write(self.work.join("j.sub"), text).unwrap();
        let out = self.glean(&["submit", "j.sub"]);
        assert!(
            out.status.success(),
            "{} submit: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

struct Pool {
    keys: TestKeys,
    coordinator: Daemon,
    stations: Vec<Daemon>,
    owners: Vec<PathBuf>,
    _tmp: tempfile::TempDir,
}

impl Pool {
    fn logs(&self) -> String {
        std::iter::once(&self.coordinator)
            .chain(&self.stations)
            .map(|d| {
                format!(
                    "==== {} ====\n{}\n",
                    d.log.display(),
                    std::fs::read_to_string(&d.log).unwrap_or_default()
                )
            })
            .collect()
    }

    /// `GET path` on the coordinator as an admin.
    fn admin_get(&self, path: &str) -> Option<serde_json::Value> {
        let client = gleaner_station::client::StationClient::new(
            format!("http://{}", self.coordinator.addr),
            self.keys.admin("root"),
        )
        .ok()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(client.get_json(path)).ok()
    }

    fn view(&self) -> Option<serde_json::Value> {
        self.admin_get("/v1/reservations")
    }

    /// Station → owners of the guests it runs, for AV stations only (a
    /// station whose owner is back holds its guests suspended until it
    /// vacates them).
    fn guests(&self) -> Option<BTreeMap<String, Vec<String>>> {
        let ads = self.admin_get("/v1/ads")?;
        let mut m = BTreeMap::new();
        for e in ads["stations"].as_array()? {
            let ad = &e["ad"];
            if !ad["state"].as_str()?.eq_ignore_ascii_case("av") {
                continue;
            }
            let owners = ad["running_guests"]
                .as_array()?
                .iter()
                .filter_map(|g| g["owner"].as_str().map(str::to_string))
                .collect();
            m.insert(ad["name"].as_str()?.to_string(), owners);
        }
        Some(m)
    }

    fn wait<T>(&self, secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = f() {
                return v;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {secs} s waiting for {what}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn bound(view: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = view["bound"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|b| b["station"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// What a crash must keep: reservations, every account, the bank, the
/// binding.
fn durable(view: &serde_json::Value) -> serde_json::Value {
    let accounts: Vec<serde_json::Value> = view["tables"]["stations"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| serde_json::json!([e[0], e[1]["accounts"]]))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!([
        view["reservations"],
        accounts,
        view["tables"]["bank"],
        bound(view)
    ])
}

fn setup() -> (Pool, User, User) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let keys = TestKeys::in_dir(&dir.join("keys")).unwrap();
    let q = |p: &Path| format!("{:?}", p.display().to_string());
    let alice_owner = TestOwner::new("rsva").unwrap();
    let bob_owner = TestOwner::new("rsvb").unwrap();
    let cdir = dir.join("coordinator");
    std::fs::create_dir_all(&cdir).unwrap();
    let caddr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let ccfg = cdir.join("coordinator.toml");
    std::fs::write(
        &ccfg,
        format!(
            "listen = \"{caddr}\"\nstate_dir = {}\n{}scheduling_interval_secs = 0.5\n\
             advertise_period_secs = 1\nseed = 7\n\
             [reservations]\nslot_secs = {SLOT_SECS}\nreservable_share = 1.0\n\
             initial_p_money = {{ per_workstation = 10.0 }}\n\
             [reservations.accounts]\n{} = \"station0\"\n{} = \"station1\"\n",
            q(&cdir.join("state")),
            common::coordinator_key(&keys),
            alice_owner.name(),
            bob_owner.name(),
        ),
    )
    .unwrap();
    let mut coordinator = Daemon {
        what: "coordinator",
        config: ccfg,
        log: cdir.join("coordinator.log"),
        addr: caddr,
        child: None,
    };
    coordinator.start();
    let mut stations = Vec::new();
    let mut owners = Vec::new();
    for k in 0..4 {
        let sdir = dir.join(format!("station{k}"));
        std::fs::create_dir_all(&sdir).unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let owner = sdir.join("owner");
        std::fs::write(&owner, "idle\n").unwrap();
        let cfg = sdir.join("station.toml");
        std::fs::write(
            &cfg,
            format!(
                "name = \"station{k}\"\nlisten = \"{addr}\"\nstate_dir = {}\n\
                 coordinator = \"http://{caddr}\"\n{}advertise_secs = 1\n\
                 placement_interval_secs = 0\ncpus = 1\n\
                 activity = {{ source = \"file\", path = {} }}\n{}{}",
                q(&sdir.join("state")),
                common::station_creds(&keys, &format!("station{k}"), &sdir),
                q(&owner),
                socket_line(&sdir.join("state")),
                common::isolation_toml(),
            ),
        )
        .unwrap();
        let mut d = Daemon {
            what: "station",
            config: cfg,
            log: sdir.join("station.log"),
            addr,
            child: None,
        };
        d.start();
        stations.push(d);
        owners.push(owner);
    }
    let pool = Pool {
        keys,
        coordinator,
        stations,
        owners,
        _tmp: tmp,
    };
    let user = |owner: TestOwner, home: usize| {
        let ghome = dir.join(format!("home-{}", owner.name()));
        let work = dir.join(format!("work-{}", owner.name()));
        std::fs::create_dir_all(&ghome).unwrap();
        owner.dir(&work).unwrap();
        std::fs::write(
            ghome.join("pool.toml"),
            format!(
                "station = \"http://{}\"\ncoordinator = \"http://{}\"\n",
                pool.stations[home].addr, pool.coordinator.addr
            ),
        )
        .unwrap();
        std::fs::write(ghome.join("token"), pool.keys.user(owner.name())).unwrap();
        User {
            name: owner.name().to_string(),
            home: ghome,
            work,
            _owner: owner,
        }
    };
    let alice = user(alice_owner, 0);
    let bob = user(bob_owner, 1);
    (pool, alice, bob)
}

/// Long jobs: none ends by itself while the test looks.
fn long_jobs(n: u32) -> String {
    format!("executable = /bin/sleep\narguments = 600\nqueue {n}\n")
}

/// Alice's jobs only on `mine`, Bob's only elsewhere, and each has
/// `want` running.
fn partition_holds(
    g: &BTreeMap<String, Vec<String>>,
    mine: &[String],
    alice: &str,
    bob: &str,
) -> Result<(usize, usize), String> {
    let (mut a, mut b) = (0, 0);
    for (station, owners) in g {
        for o in owners {
            let reserved = mine.contains(station);
            if o == alice {
                a += 1;
                if !reserved {
                    return Err(format!("alice's job on unreserved {station}: {g:?}"));
                }
            } else if o == bob {
                b += 1;
                if reserved {
                    return Err(format!("bob's job on alice's {station}: {g:?}"));
                }
            }
        }
    }
    Ok((a, b))
}

#[test]
fn reserved_stations_run_only_the_reservers_jobs_and_survive_owner_return_and_crash() {
    let started = Instant::now();
    let (mut pool, alice, bob) = setup();
    pool.wait(60, "four stations in the System Table", || {
        let v = pool.view()?;
        (v["tables"]["av_since"].as_object()?.len() == 4).then_some(())
    });

    // Not too close to a slot boundary: the session computes "next" when
    // it opens, and the sync must come before that slot has begun.
    pool.wait(SLOT_SECS, "the early part of a slot", || {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        (secs % SLOT_SECS < SLOT_SECS / 2).then_some(())
    });
    // The local handler: a session, two requests, one refused.
    let (ok, v) = alice.json(&["reserve", "--json", "display"]);
    assert!(ok, "{v}");
    assert_eq!(v["view"]["user"], alice.name.as_str());
    assert_eq!(v["view"]["account"]["station"], "station0");
    let (ok, v) = alice.json(&[
        "reserve",
        "--json",
        "reserve",
        "--start",
        "next",
        "--slots",
        "8",
        "--machines",
        "2",
    ]);
    assert!(ok, "{v}");
    let (ok, v) = alice.json(&[
        "reserve",
        "--json",
        "reserve",
        "--start",
        "next",
        "--machines",
        "5",
    ]);
    assert!(ok, "{v}");
    assert_eq!(v["pending"], 2);
    let (ok, v) = alice.json(&["reserve", "--json", "sync"]);
    assert!(!ok, "a refused row makes sync exit 1: {v}");
    assert_eq!(v["acks"][0]["accepted"], true, "{v}");
    assert_eq!(v["acks"][0]["machines"], 2, "{v}");
    assert_eq!(v["acks"][1]["accepted"], false, "{v}");
    assert!(
        v["acks"][1]["error"]
            .as_str()
            .unwrap_or("")
            .contains("upper"),
        "{v}"
    );
    // For people: the tables.
    let out = alice.glean(&["reserve", "display"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Free machines by slot"),
        "{text}"
    );
    let (ok, v) = alice.json(&["reserve", "--json", "check"]);
    assert!(ok, "{v}");
    assert_eq!(v["reservations"].as_array().map(Vec::len), Some(1), "{v}");
    let (ok, v) = alice.json(&["reserve", "--json", "close"]);
    assert!(ok && v["closed"] == true, "{v}");
    // Bob's session cannot touch Alice's reservation.
    let id = pool.view().unwrap()["reservations"][0]["id"]
        .as_u64()
        .unwrap();
    let (ok, v) = bob.json(&["reserve", "--json", "unreserve", &id.to_string()]);
    assert!(ok, "{v}");
    let (ok, v) = bob.json(&["reserve", "--json", "close"]);
    assert!(!ok && v["closed"] == false, "{v}");
    assert_eq!(
        pool.view().unwrap()["reservations"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    // The slot begins: two stations serve Alice.
    let mine = pool.wait(SLOT_SECS + 20, "the reserved slot to begin", || {
        let b = bound(&pool.view()?);
        (b.len() == 2).then_some(b)
    });
    eprintln!(
        "reserved slot began after {:.1} s: {mine:?}",
        started.elapsed().as_secs_f64()
    );
    alice.submit(&long_jobs(4));
    bob.submit(&long_jobs(4));
    pool.wait(90, "2 jobs of each user running", || {
        let g = pool.guests()?;
        match partition_holds(&g, &mine, &alice.name, &bob.name) {
            Err(e) => panic!("{e}\n{}", pool.logs()),
            Ok((2, 2)) => Some(()),
            Ok(_) => None,
        }
    });
    // It stays so.
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(300));
        let g = pool.guests().unwrap();
        partition_holds(&g, &mine, &alice.name, &bob.name).unwrap();
    }

    // An owner returns on a reserved station: Longest-Free picks the
    // unreserved AV station free the longest.
    let v = pool.view().unwrap();
    let since: BTreeMap<String, u64> = v["tables"]["av_since"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, t)| (k.clone(), t.as_u64().unwrap()))
        .collect();
    let expected = since
        .iter()
        .filter(|(k, _)| !mine.contains(k))
        .min_by_key(|(k, t)| (**t, (*k).clone()))
        .map(|(k, _)| k.clone())
        .unwrap();
    let back = mine[0].clone();
    let idx: usize = back.trim_start_matches("station").parse().unwrap();
    std::fs::write(&pool.owners[idx], "active\n").unwrap();
    let now_mine = pool.wait(30, "the replacement", || {
        let b = bound(&pool.view()?);
        (!b.contains(&back)).then_some(b)
    });
    assert!(
        now_mine.contains(&expected),
        "Longest-Free should pick {expected}: {now_mine:?}"
    );
    let stats = pool.view().unwrap()["tables"]["stats"].clone();
    assert_eq!(stats["replaced"], 1, "{stats}");
    assert_eq!(stats["errors"], 0, "{stats}");
    // Bob's guest leaves the replacement, Alice's job runs there.
    pool.wait(90, "alice's job on the replacement", || {
        let g = pool.guests()?;
        partition_holds(&g, &now_mine, &alice.name, &bob.name).ok()?;
        g.get(&expected)?.contains(&alice.name).then_some(())
    });
    eprintln!(
        "replacement {expected} serving after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // SIGKILL the coordinator and start it again.
    let before = durable(&pool.view().unwrap());
    if let Some(mut c) = pool.coordinator.child.take() {
        kill9(&mut c);
    }
    pool.coordinator.start();
    let after = pool.wait(30, "the restarted coordinator", || pool.view());
    assert_eq!(
        durable(&after),
        before,
        "reservations, balances and binding kept"
    );
    // The partition still holds once the stations have advertised again.
    pool.wait(60, "the partition after the restart", || {
        let g = pool.guests()?;
        let (a, _) = partition_holds(&g, &now_mine, &alice.name, &bob.name)
            .map_err(|e| panic!("{e}"))
            .ok()?;
        (a >= 1 && g.len() >= 3).then_some(())
    });
    eprintln!("whole test {:.1} s", started.elapsed().as_secs_f64());
}
