//! The guest's network (issue 30, finding 5). The owner runs a service on
//! the host's loopback, and a "submitter" listens on the station's
//! routable address (as a scheduler whose workers call back). A guest of
//! a lending station (`network = "auto"`: its own namespace behind
//! slirp4netns) must not reach the loopback service, see the host's
//! sockets in `/proc/net`, or expose a listening port to the owner, and
//! must reach the routable address. With `network = "host"` it reaches
//! the routable address too.

use crate::harness::{Opts, Pool, json_of, routable_address, runnable, wait};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_station::isolation::NetworkMode;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// `job.py OWNER_PORT ROUTABLE ROUTABLE_PORT`.
const GUEST: &str = r#"#!/usr/bin/python3 -I
import errno, json, os, socket, sys, time
owner_port, routable, routable_port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def connect(host, port):
    try:
        s = socket.create_connection((host, port), timeout=3)
        data = s.recv(100).decode()
        s.close()
        return data
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e)) if e.errno else "timeout"

def listed(port):
    hexport = ":%04X" % port
    found = []
    for t in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(t).readlines()[1:]:
                if line.split()[1].endswith(hexport):
                    found.append(line.strip())
        except OSError:
            pass
    return found

# A port of its own, on loopback and on every address.
l1 = socket.socket(); l1.bind(("127.0.0.1", 0)); l1.listen()
l2 = socket.socket(); l2.bind(("0.0.0.0", 0)); l2.listen()
r = {
    "owner_loopback": connect("127.0.0.1", owner_port),
    "owner_via_gateway": connect("10.0.2.2", owner_port),
    "owner_in_proc_net": listed(owner_port),
    "routable": connect(routable, routable_port),
    "listen_loopback": l1.getsockname()[1],
    "listen_any": l2.getsockname()[1],
    "interfaces": sorted(n for _, n in socket.if_nameindex()),
}
with open("result.tmp", "w") as f:
    json.dump(r, f)
os.rename("result.tmp", "result.json")
t = time.time()
while not os.path.exists("end") and time.time() - t < 600:
    time.sleep(0.02)
"#;

/// Serves `banner` to every connection until dropped.
struct Server {
    port: u16,
    _thread: std::thread::JoinHandle<()>,
}

impl Server {
    fn start(ip: Ipv4Addr, banner: &'static str) -> Server {
        let l = TcpListener::bind((ip, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let mut c = c;
                let _ = c.write_all(banner.as_bytes());
            }
        });
        Server { port, _thread: t }
    }
}

/// Whether the host's own `/proc/net/tcp` lists a socket on `port`.
fn host_lists(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|t| {
        std::fs::read_to_string(t)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| a.ends_with(&hex))
            })
    })
}

/// A network namespace of the owner's, made with `ip netns` (which makes
/// `/run/netns` a shared mount): a guest's network stack must leave it
/// mounted. slirp4netns's own sandbox detached it from the host when it
/// ran in the station's mount namespace.
struct OwnersNetns(String);

impl OwnersNetns {
    fn add() -> OwnersNetns {
        let name = format!("glown-{}", std::process::id());
        let ok = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap();
        assert!(ok.success(), "ip netns add {name}");
        OwnersNetns(name)
    }

    fn assert_usable(&self) {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &self.0, "true"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the owner's namespace {} is gone: {}",
            self.0,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnersNetns {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.0])
            .status();
    }
}

async fn run_guest(pool: &Pool, job: JobId, args: &[&str]) -> serde_json::Value {
    pool.place(job, "alice", GUEST, args, |_| {}).await;
    let g = pool.running(job).await;
    let r = json_of(&pool.execute.join(&g.guest_id).join("result.json")).await;
    println!("{job}: {r:#}");
    r
}

async fn finish(pool: &Pool, job: JobId) {
    let g = pool.running(job).await;
    std::fs::write(pool.execute.join(&g.guest_id).join("end"), "").unwrap();
    let done = wait("completed", async || {
        pool.shadow.report(job, JobEventKind::Completed)
    })
    .await;
    assert_eq!(done.state, JobState::Completed { exit_code: 0 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lending_stations_guest_reaches_out_but_not_the_owners_loopback() {
    if !runnable("runs guests as slot accounts in namespaces") {
        return;
    }
    let Some(routable) = routable_address() else {
        println!("skipped: this machine has no non-loopback IPv4 address");
        return;
    };
    let _l = crate::common::serial_lock();
    let owners_ns = OwnersNetns::add();
    let owner = Server::start(Ipv4Addr::LOCALHOST, "owner's service\n");
    let submitter = Server::start(routable, "submitter\n");
    let pool = Pool::start("net", Opts::default()).await;
    let job = JobId::new(1, 0);
    let (op, rp, ra) = (
        owner.port.to_string(),
        submitter.port.to_string(),
        routable.to_string(),
    );
    let r = run_guest(&pool, job, &[&op, &ra, &rp]).await;
    // The owner's loopback service: refused on the guest's own loopback,
    // and through the stack's gateway.
    assert_eq!(r["owner_loopback"], "ECONNREFUSED");
    assert!(
        ["ENETUNREACH", "ECONNREFUSED", "EHOSTUNREACH", "timeout"]
            .contains(&r["owner_via_gateway"].as_str().unwrap_or("")),
        "{}",
        r["owner_via_gateway"]
    );
    assert_eq!(r["owner_in_proc_net"], serde_json::json!([]));
    // The submitter's routable address: reached.
    assert_eq!(r["routable"], "submitter\n");
    // The guest's listening ports: the owner cannot reach or see them.
    for k in ["listen_loopback", "listen_any"] {
        let port = r[k].as_u64().unwrap() as u16;
        let to = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        match TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
            Ok(mut s) => {
                // Something else of the host may own that port number:
                // whatever answers must not be the guest.
                let mut buf = Vec::new();
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let _ = s.read_to_end(&mut buf);
                panic!("the owner reached the guest's port {port} ({k}): {buf:?}");
            }
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{k}"),
        }
        assert!(!host_lists(port), "the host lists the guest's port {port}");
    }
    assert_eq!(
        r["interfaces"],
        serde_json::json!(["lo", "tap0"]),
        "its own interfaces"
    );
    finish(&pool, job).await;
    pool.stop().await;
    // The guest's network stack left the owner's own namespaces mounted.
    owners_ns.assert_usable();

    // The owner's choice: the host's network. The routable address as
    // before (and the loopback, which is then shared).
    let pool = Pool::start(
        "hostnet",
        Opts {
            network: NetworkMode::Host,
            ..Default::default()
        },
    )
    .await;
    let job = JobId::new(2, 0);
    let r = run_guest(&pool, job, &[&op, &ra, &rp]).await;
    assert_eq!(r["routable"], "submitter\n");
    assert_eq!(r["owner_loopback"], "owner's service\n");
    finish(&pool, job).await;
    pool.stop().await;
}
