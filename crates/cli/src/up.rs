//! `glean up --stations N`: a personal pool on this machine.
//!
//! Starts one coordinator and N stations as child processes of this one,
//! with all state under `$GLEAN_HOME` (default `~/.glean`), and keeps them
//! running until interrupted. It writes what the other commands need to
//! find the pool (`pool.toml` naming station0's user socket, the user's
//! `token` for the coordinator), so `glean submit`, `glean q` and friends
//! work against it with no flags.
//!
//! Jobs run as their owner's Unix account, never root's. Run by an
//! ordinary user, the stations run as that user and serve only them (a
//! single-user personal pool); run by root, they serve every local account
//! on their user sockets (`/run/gleaner/up-<port>.sock`), and root itself
//! submits nothing.
//!
//! Layout:
//! ```text
//! $GLEAN_HOME/token, admin.token       bearer tokens for this user (0600)
//! $GLEAN_HOME/pool.toml                station0's socket and URL, the coordinator's URL
//! $GLEAN_HOME/coordinator/             config, log
//! $GLEAN_HOME/pool-ca.pem              the pool CA, for the CLI (TLS)
//! $GLEAN_HOME/coordinator/state/       signing.key, ca.key (0600, the coordinator's
//!                                      only), pool.pub, ca.pem, coordinator.crt/.key,
//!                                      tokens.json, fairness state
//! $GLEAN_HOME/stations/stationK/       config, station.key (0600), station.crt,
//!                                      station.token (0600), queue, spool, log,
//!                                      `owner` file
//! ```
//!
//! The pool is made as any pool is (`docs/deploy.md`): `glean pool init`
//! for the pool `up` (the CA, the coordinator's certificate for 127.0.0.1),
//! then for each station a one-time join token and `glean station join`.
//! Every daemon speaks TLS on loopback; `--plain-http` keeps plain HTTP.
//! Each station's owner activity comes from its `owner` file (write
//! `active` or `idle` into it), so owner returns can be replayed by hand
//! or by scripts.

use crate::supervise::{Backoff, DaemonSpec, Supervised};
use anyhow::{Context, bail};
use clap::Args;
use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest, public_key_path};
use gleaner_proto::creds::{PoolSigner, Role, load_or_create_signing_key, write_public_key};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};
use tokio::signal::unix::SignalKind;

#[derive(Args, Debug)]
pub struct UpArgs {
    /// Number of stations to start.
    #[arg(long, default_value_t = 4)]
    pub stations: u32,
    /// Pool directory (default: $GLEAN_HOME, else ~/.glean).
    #[arg(long)]
    pub home: Option<PathBuf>,
    /// Coordinator port; stations use the following ports.
    #[arg(long, default_value_t = 9618)]
    pub port: u16,
    /// Scheduling interval of the coordinator, seconds (the thesis's Condor
    /// used 120; a personal pool reacts faster).
    #[arg(long, default_value_t = 10.0)]
    pub interval: f64,
    /// Run a demo workload (two users of different weight, owners coming
    /// back to their desks), print a summary and stop the pool.
    #[arg(long)]
    pub demo: bool,
    /// Plain HTTP on loopback instead of TLS (by default the pool is made
    /// as a real one: `glean pool init`, and each station joins with a
    /// one-time token and gets its certificate).
    #[arg(long)]
    pub plain_http: bool,
    /// A directory every guest of the pool sees besides the system's
    /// (`[isolation] expose`): `DIR` read-only, `DIR:rw` writable.
    /// Repeatable; each must exist.
    #[arg(long, value_name = "DIR[:rw]")]
    pub expose: Vec<String>,
}

/// The personal pool's name in its certificates.
const UP_POOL: &str = "up";

pub fn glean_home(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(h) = explicit {
        return Ok(h);
    }
    if let Some(h) = std::env::var_os("GLEAN_HOME") {
        return Ok(PathBuf::from(h));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".glean")),
        None => bail!("neither $GLEAN_HOME nor $HOME is set; pass --home"),
    }
}

/// Writes a credential file, mode 0600 whatever an older file had
/// (replaced atomically, never rewritten in place).
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    gleaner_proto::creds::write_atomic(path, text.as_bytes(), 0o600)
        .with_context(|| format!("writing {}", path.display()))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The personal pool's credentials, made the way an administrator makes
/// them (`glean token create`): the coordinator's signing key in its state
/// directory, and every token recorded in its registry, so `glean token
/// list` shows them and `glean token revoke` works on them.
struct PoolCreds {
    signer: PoolSigner,
    registry: TokenRegistry,
    public_key: PathBuf,
}

impl PoolCreds {
    /// Loads or creates the signing key in `state_dir` (0700) and writes
    /// `pool.pub` beside it, as the coordinator does when it starts.
    fn open(state_dir: &Path) -> anyhow::Result<Self> {
        gleaner_proto::creds::create_private_dir(state_dir)
            .with_context(|| format!("creating {}", state_dir.display()))?;
        let signer =
            load_or_create_signing_key(&gleaner_coordinator::tokens::signing_key_path(state_dir))?;
        let public_key = public_key_path(state_dir);
        write_public_key(&public_key, &signer.verifier())?;
        Ok(PoolCreds {
            signer,
            registry: TokenRegistry::in_state_dir(state_dir),
            public_key,
        })
    }

    /// A new token for `subject` with the role's default lifetime (user
    /// and admin tokens 30 days: `glean up` writes fresh ones at every
    /// start), station tokens never expiring.
    fn token(&self, role: Role, subject: &str) -> anyhow::Result<String> {
        let request = TokenRequest {
            role,
            subject: subject.to_string(),
            expires_days: (role == Role::Station).then_some(0),
        };
        let issued = self
            .registry
            .create(&self.signer, &request, now_secs())
            .with_context(|| format!("issuing a {role} token for {subject}"))?;
        Ok(issued.token)
    }

    /// A one-time join token for station `name` (the pool has a CA).
    fn join_token(&self, name: &str) -> anyhow::Result<String> {
        let state = self
            .public_key
            .parent()
            .context("the coordinator's state directory")?;
        let ca = gleaner_edge::tls::PoolCa::load(UP_POOL, &state.join("ca.pem"))?;
        let (token, _) = gleaner_coordinator::enrol::joins::create(
            &self.registry,
            name,
            1,
            Some(0),
            &ca.fingerprint(),
            now_secs(),
        )?;
        Ok(token.to_string())
    }
}

/// A TOML string literal (paths and names may contain quotes or backslashes).
/// Why guests could not reach sandboxes under `dir`, when this runs as
/// root (guests then run as `nobody`, the station's default).
fn guest_reach_problem(dir: &Path) -> Option<String> {
    let user = gleaner_station::isolation::GuestUser::for_daemon(None).ok()??;
    gleaner_station::isolation::unreachable_by(dir, user)
        .map(|(p, mode)| format!("guests cannot reach {} (mode {mode:o})", p.display()))
}

fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn wait_listening(addr: SocketAddr, child: &mut Child, what: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("{what} exited during start-up ({status}); see its log");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{what} did not start listening on {addr} within 20 s")
}

/// The pool's daemons, and what a root pool leaves outside its GLEAN_HOME
/// (stations' sandbox directories under `/var/lib/gleaner/up-PORT`, their
/// user sockets and lock files in `/run/gleaner`): removed once the
/// daemons have stopped, a directory only if empty (a guest's leftovers
/// stay for the administrator to see).
struct Children(Vec<Supervised>, Vec<PathBuf>);

impl Drop for Children {
    fn drop(&mut self) {
        // SIGTERM first so daemons flush their state, then make sure.
        for c in self.0.iter().filter_map(|s| s.child.as_ref()) {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for c in self.0.iter_mut().filter_map(|s| s.child.as_mut()) {
            while Instant::now() < deadline {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for p in &self.1 {
            let _ = if p.is_dir() {
                std::fs::remove_dir(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    }
}

pub fn up(args: UpArgs) -> anyhow::Result<ExitCode> {
    if args.stations == 0 {
        bail!("--stations must be at least 1");
    }
    if args.demo && args.stations < 4 {
        bail!("--demo needs --stations 4 or more");
    }
    if !(args.interval.is_finite() && args.interval > 0.0) {
        bail!("--interval must be a positive number of seconds");
    }
    // Ctrl-C (SIGINT) or SIGTERM from here on stops the pool: its daemons
    // get SIGTERM and the demo's accounts are removed, never left behind.
    let stop = interrupted()?;
    let home = glean_home(args.home.clone())?;
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    let cdir = home.join("coordinator");
    let creds = PoolCreds::open(&cdir.join("state"))?;
    // The account this runs as (not $USER, which sudo may keep).
    let user = gleaner_station::userfs::UnixUser::current()
        .map(|u| u.name)
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "user".to_string());
    let root = nix::unistd::geteuid().is_root();
    write_private(&home.join("token"), &creds.token(Role::User, &user)?)?;
    write_private(&home.join("admin.token"), &creds.token(Role::Admin, &user)?)?;

    let exe = std::env::current_exe().context("locating the glean binary")?;
    let coord_addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let scheme = if args.plain_http { "http" } else { "https" };
    let coord_url = format!("{scheme}://{coord_addr}");
    // TLS as in any pool: the CA and the coordinator's certificate as
    // `glean pool init` makes them.
    let tls = if args.plain_http {
        None
    } else {
        let out = gleaner_coordinator::enrol::init(&gleaner_coordinator::enrol::InitOptions {
            state_dir: cdir.join("state"),
            pool: UP_POOL.into(),
            addresses: vec!["127.0.0.1".into(), "localhost".into()],
            renew_certificate: false,
        })?;
        Some((gleaner_edge::tls::PoolCa::load(UP_POOL, &out.ca)?, out.ca))
    };
    let advertise = (args.interval / 2.0).clamp(1.0, 60.0).round() as u64;

    let mut children = Children(Vec::new(), Vec::new());
    let ccfg = cdir.join("coordinator.toml");
    std::fs::write(
        &ccfg,
        format!(
            "listen = {}\nstate_dir = {}\nscheduling_interval_secs = {}\n\
             advertise_period_secs = {advertise}\naddress = {}\n{}",
            q(&coord_addr.to_string()),
            q(&cdir.join("state").display().to_string()),
            args.interval,
            q(&coord_url),
            if tls.is_some() {
                format!("[tls]\npool = {}\n", q(UP_POOL))
            } else {
                String::new()
            }
        ),
    )?;
    let spec = DaemonSpec {
        name: "coordinator".into(),
        exe: exe.clone(),
        what: "coordinator",
        config: ccfg,
        log: cdir.join("coordinator.log"),
    };
    let mut coord = fresh_log(&spec)?.spawn()?;
    wait_listening(coord_addr, &mut coord, "the coordinator")?;
    children.0.push(Supervised::new(spec, coord));

    let mut stations = Vec::new();
    for k in 0..args.stations {
        if stopping(&stop) {
            println!("interrupted; stopping the pool");
            return Ok(ExitCode::from(130));
        }
        let name = format!("station{k}");
        let port = args
            .port
            .checked_add(2 + k as u16)
            .context("station port out of range")?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let sdir = home.join("stations").join(&name);
        std::fs::create_dir_all(&sdir)?;
        let owner = sdir.join("owner");
        if !owner.exists() {
            std::fs::write(&owner, "idle\n")?;
        }
        // Guests run as `nobody` when this is root: a GLEAN_HOME they
        // cannot reach (root's home is 0700) keeps their sandboxes elsewhere.
        let execute_line = match guest_reach_problem(&sdir) {
            Some(why) => {
                let dir = PathBuf::from(format!("/var/lib/gleaner/up-{port}/execute"));
                println!("  {name}: sandboxes in {} ({why})", dir.display());
                children.1.push(dir.clone());
                if let Some(parent) = dir.parent() {
                    children.1.push(parent.to_path_buf());
                }
                format!("execute_dir = {}\n", q(&dir.display().to_string()))
            }
            None => String::new(),
        };
        // Local users reach the station on this socket, no token needed.
        let socket = if root {
            let socket = PathBuf::from(format!("/run/gleaner/up-{port}.sock"));
            children.1.push(socket.clone());
            children
                .1
                .push(PathBuf::from(format!("{}.lock", socket.display())));
            socket
        } else {
            sdir.join("state").join("user.sock")
        };
        // No placement throttle: the thesis's one placement per 2 minutes
        // (Mutka 1988 L839) spared 1988 networks and owners; on one
        // machine it only leaves free nodes idle while jobs wait.
        // Each station speaks for itself only, with its own token.
        let scfg = sdir.join("station.toml");
        let extra = format!(
            "advertise_secs = {advertise}\nplacement_interval_secs = 0\ncpus = 1\n\
             user_socket = {}\nactivity = {{ source = \"file\", path = {} }}\n{execute_line}{}",
            q(&socket.display().to_string()),
            q(&owner.display().to_string()),
            if args.demo {
                let p = crate::demo::POLICIES[k as usize % crate::demo::POLICIES.len()];
                format!("eviction_policy = {}\n", q(p))
            } else {
                String::new()
            },
        );
        // Guests in real cgroups where this user may create them (root, or
        // a delegated subtree); otherwise the station warns and falls back
        // to per-task SCHED_IDLE. One parent per station port, so pools
        // side by side never share groups. Slot accounts of its own per
        // station (as on separate machines): stations of one machine
        // sharing the default accounts would leave only that many guests
        // machine-wide. The host's network: in a personal pool the owner
        // is the submitter (docs/security.md, "The guest's network").
        // What else guests see is the owner's choice (`--expose`).
        let expose: Vec<String> = args.expose.iter().map(|e| q(e)).collect();
        let tables = format!(
            "[isolation]\ncgroups = \"auto\"\nparent = \"gleaner-{port}\"\n\
             slot_prefix = \"gleaner-s{k}-\"\nnetwork = \"host\"\nexpose = [{}]\n",
            expose.join(", ")
        );
        if tls.is_some() {
            // As on any machine: a one-time join token, then `glean
            // station join` (its own key, a certificate naming it).
            let token = creds.join_token(&name)?;
            crate::join::join(&crate::join::JoinArgs {
                url: coord_url.clone(),
                token,
                name: Some(name.clone()),
                listen: addr,
                address: Some(format!("https://{addr}")),
                sans: vec!["localhost".into()],
                config: scfg.clone(),
                dir: Some(sdir.clone()),
                state_dir: sdir.join("state"),
                extra,
                tables,
                force: true,
                template: None,
            })
            .with_context(|| format!("{name} joining the pool"))?;
        } else {
            // Plain HTTP: the station token written here, as before.
            let token_file = sdir.join("station.token");
            write_private(&token_file, &creds.token(Role::Station, &name)?)?;
            std::fs::write(
                &scfg,
                format!(
                    "name = {}\nlisten = {}\nstate_dir = {}\ncoordinator = {}\npublic_key = {}\n\
                     token_file = {}\n{extra}{tables}",
                    q(&name),
                    q(&addr.to_string()),
                    q(&sdir.join("state").display().to_string()),
                    q(&coord_url),
                    q(&creds.public_key.display().to_string()),
                    q(&token_file.display().to_string()),
                ),
            )?;
        }
        let spec = DaemonSpec {
            name: name.clone(),
            exe: exe.clone(),
            what: "station",
            config: scfg,
            log: sdir.join("station.log"),
        };
        let mut child = fresh_log(&spec)?.spawn()?;
        wait_listening(addr, &mut child, &name)?;
        children.0.push(Supervised::new(spec, child));
        stations.push((name, addr, socket));
    }
    let (first, first_socket) = stations
        .first()
        .map(|(_, a, s)| (format!("{scheme}://{a}"), s.clone()))
        .context("no station")?;
    std::fs::write(
        home.join("pool.toml"),
        format!(
            "socket = {}\nstation = {}\ncoordinator = {}\n{}",
            q(&first_socket.display().to_string()),
            q(&first),
            q(&coord_url),
            match &tls {
                // The CA where users can read it (the coordinator's state
                // directory is private).
                Some((ca, _)) => {
                    gleaner_proto::creds::write_atomic(
                        &home.join("pool-ca.pem"),
                        ca.pem().as_bytes(),
                        0o644,
                    )?;
                    format!("ca = \"pool-ca.pem\"\npool = {}\n", q(UP_POOL))
                }
                None => String::new(),
            }
        ),
    )?;

    println!("Personal pool up in {}", home.display());
    println!("  coordinator  {coord_url}");
    for (name, addr, socket) in &stations {
        println!(
            "  {name:<12} {scheme}://{addr}  unix:{}  (owner activity: {})",
            socket.display(),
            home.join("stations").join(name).join("owner").display()
        );
    }
    if args.demo {
        let ca = tls.as_ref().map(|(ca, _)| ca);
        let ctx = DemoPool {
            home: &home,
            creds: &creds,
            me: &user,
            stations: &stations,
            coord_url: &coord_url,
            ca,
        };
        let result = run_demo(&ctx, &args, &stop);
        // Pool files stay for inspection (glean q/history with --station).
        println!("stopping the pool");
        drop(children);
        return Ok(if result? {
            ExitCode::SUCCESS
        } else {
            println!("the demo was interrupted");
            ExitCode::from(130)
        });
    }
    if root {
        println!(
            "Jobs never run as root: submit as an ordinary user, e.g.\n  \
             sudo -u USER glean submit FILE --station unix:{}",
            first_socket.display()
        );
    }
    println!("Submit with `glean submit FILE`, watch with `glean q` and `glean status`.");
    println!("Press Ctrl-C to stop the pool.");

    // A daemon that dies is started again (see `supervise`); the pool
    // stops only on Ctrl-C.
    let policy = Backoff::default();
    loop {
        if stopping(&stop) {
            println!("stopping the pool");
            return Ok(ExitCode::SUCCESS);
        }
        for d in &mut children.0 {
            if let Some(news) = d.tend(&policy, Instant::now()) {
                eprintln!("glean up: {news}");
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A flag raised by SIGINT (Ctrl-C) or SIGTERM, watched from a thread of
/// its own.
fn interrupted() -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The handlers are in place before this returns: a signal after it
    // never kills `glean up` with its daemons left running.
    let (mut int, mut term) = rt.block_on(async {
        anyhow::Ok((
            tokio::signal::unix::signal(SignalKind::interrupt())?,
            tokio::signal::unix::signal(SignalKind::terminate())?,
        ))
    })?;
    std::thread::spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    Ok(stop)
}

fn stopping(stop: &std::sync::atomic::AtomicBool) -> bool {
    stop.load(std::sync::atomic::Ordering::SeqCst)
}

/// The running pool, as the demo needs it.
struct DemoPool<'a> {
    home: &'a Path,
    creds: &'a PoolCreds,
    me: &'a str,
    stations: &'a [(String, SocketAddr, PathBuf)],
    coord_url: &'a str,
    ca: Option<&'a gleaner_edge::tls::PoolCa>,
}

/// The demo's users and their clients (see [`crate::demo_users`]), then
/// the demo itself; the demo accounts are removed when it ends. False
/// when SIGINT cut it short.
fn run_demo(
    pool: &DemoPool,
    args: &UpArgs,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<bool> {
    let DemoPool {
        home,
        creds,
        me,
        stations,
        coord_url,
        ca,
    } = *pool;
    let scheme = if ca.is_some() { "https" } else { "http" };
    let root = nix::unistd::geteuid().is_root();
    let base = if root {
        // Reachable by the demo accounts (root's home is not).
        crate::demo_users::root_base(args.port)
    } else {
        home.join("demo")
    };
    let accounts = crate::demo_users::prepare(&base, me)?;
    if !root {
        println!(
            "[demo] this pool runs as {me}, not as root: each station serves only {me} (a \
             single-user personal pool), so both demo users are {me}, submitting on the \
             stations' user sockets"
        );
    }
    let mut users = Vec::new();
    for (k, a) in accounts.0.iter().enumerate() {
        let (_, addr, socket) = stations.get(k).context("the demo needs two stations")?;
        // Root is no user: the demo accounts come with tokens. An ordinary
        // user is known on the socket.
        let client = if root {
            gleaner_station::client::StationClient::with_ca(
                &format!("{scheme}://{addr}"),
                creds.token(Role::User, &a.name)?,
                ca,
            )?
        } else {
            gleaner_station::client::StationClient::unix(socket)?
        };
        users.push(crate::demo::User {
            name: a.role,
            account: a.name.clone(),
            dir: a.dir.clone(),
            client,
        });
    }
    let coordinator = gleaner_station::client::StationClient::with_ca(
        coord_url,
        creds.token(Role::Admin, me)?,
        ca,
    )?;
    let light = users.pop().context("no light user")?;
    let heavy = users.pop().context("no heavy user")?;
    let result = crate::demo::run(home, heavy, light, coordinator, stop);
    drop(accounts);
    result
}

/// A new pool's daemon starts with an empty log (a restart appends).
fn fresh_log(spec: &DaemonSpec) -> anyhow::Result<&DaemonSpec> {
    std::fs::File::create(&spec.log).with_context(|| format!("log {}", spec.log.display()))?;
    Ok(spec)
}
