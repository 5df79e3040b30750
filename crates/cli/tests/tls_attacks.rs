//! Attacks on the pool's TLS and enrolment (issue 13), against real
//! `glean` daemons on loopback with TLS on: each is refused, and nothing
//! changes (the token registry byte for byte, the pool's stations, the
//! queues).
//!
//! - a plain-text client against a TLS daemon;
//! - a client with a certificate from another pool's CA;
//! - a station presenting its own certificate with another station's
//!   credential (its name is not the one the credential speaks for);
//! - a join token used twice; a join token for one name used for another;
//! - a server impersonating a station (another station's certificate at
//!   its address, or another pool's): the caller refuses it;
//! - plain HTTP refused off loopback: a station listening on 0.0.0.0
//!   without `[tls]`, a client given `http://` to a remote address.

mod common;

use common::{Daemons, free_port, glean_bin, spawn};
use gleaner_edge::tls::{Expect, Identity, PeerClients, PoolCa, client_config};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

fn glean(args: &[&str]) -> Output {
    Command::new(glean_bin()).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = glean(args);
    assert!(
        o.status.success(),
        "glean {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A pool on loopback with TLS: coordinator and the stations `names`.
struct Pool {
    dir: PathBuf,
    pool: String,
    cport: u16,
    ports: Vec<(String, u16)>,
    _daemons: Daemons,
}

impl Pool {
    fn coordinator_config(&self) -> String {
        s(&self.dir.join("coordinator.toml"))
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.cport)
    }

    fn port(&self, name: &str) -> u16 {
        self.ports.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn join_token(&self, name: &str) -> String {
        ok(&[
            "token",
            "create",
            "--config",
            &self.coordinator_config(),
            "--station",
            name,
        ])
    }

    fn join(&self, token: &str, name: &str, port: u16) -> Output {
        let sdir = self.dir.join(name);
        glean(&[
            "station",
            "join",
            &self.url(),
            "--token",
            token,
            "--name",
            name,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--address",
            &format!("https://127.0.0.1:{port}"),
            "--config",
            &s(&sdir.join("station.toml")),
            "--state-dir",
            &s(&sdir.join("state")),
            "--extra",
            &format!(
                "user_socket = \"{}\"\nadvertise_secs = 1\n",
                s(&sdir.join("user.sock"))
            ),
            "--tables",
            &common::isolation_toml(),
        ])
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for f in std::fs::read_dir(&self.dir).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "log") {
                out.push_str(&format!("--- {}\n", f.path().display()));
                out.push_str(&std::fs::read_to_string(f.path()).unwrap_or_default());
            }
        }
        out
    }

    fn registry(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("coord").join("tokens.json")).unwrap_or_default()
    }

    fn ca(&self) -> PoolCa {
        PoolCa::load(&self.pool, &self.dir.join("coord").join("ca.pem")).unwrap()
    }

    fn identity(&self, name: &str) -> Identity {
        let d = self.dir.join(name);
        Identity::load(&d.join("station.crt"), &d.join("station.key")).unwrap()
    }

    fn start(dir: &Path, pool: &str, names: &[&str]) -> Pool {
        use std::os::unix::fs::PermissionsExt;
        // Guests (slot accounts) must reach the stations' sandboxes below.
        std::fs::create_dir_all(dir).unwrap();
        for d in [dir, dir.parent().unwrap()] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let cport = free_port();
        let cfg = dir.join("coordinator.toml");
        ok(&[
            "pool",
            "init",
            "--name",
            pool,
            "--address",
            "127.0.0.1",
            "--listen",
            &format!("127.0.0.1:{cport}"),
            "--state-dir",
            &s(&dir.join("coord")),
            "--config",
            &s(&cfg),
        ]);
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(
            &cfg,
            format!("advertise_period_secs = 1\nscheduling_interval_secs = 0.5\n{text}"),
        )
        .unwrap();
        let mut daemons = Daemons(vec![spawn(
            "coordinator",
            &cfg,
            &dir.join("coord.log"),
            cport,
        )]);
        let mut pool = Pool {
            dir: dir.to_path_buf(),
            pool: pool.into(),
            cport,
            ports: Vec::new(),
            _daemons: Daemons(Vec::new()),
        };
        for n in names {
            let port = free_port();
            let t = pool.join_token(n);
            let o = pool.join(&t, n, port);
            assert!(
                o.status.success(),
                "join {n}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            daemons.0.push(spawn(
                "station",
                &dir.join(n).join("station.toml"),
                &dir.join(format!("{n}.log")),
                port,
            ));
            pool.ports.push((n.to_string(), port));
        }
        pool._daemons = daemons;
        pool
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A raw plain-text request; the whole answer.
fn plain_text(pool: &Pool, port: u16, req: &str) -> String {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("port {port}: {e}\n{}", pool.logs()));
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

/// GET `path` at `port` with `client`: status, or the error's text.
fn get(client: &reqwest::Client, port: u16, path: &str, token: &str) -> Result<u16, String> {
    rt().block_on(async {
        client
            .get(format!("https://127.0.0.1:{port}{path}"))
            .bearer_auth(token)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| format!("{e:?}"))
    })
}

fn client(ca: &PoolCa, me: Option<&Identity>, expect: Expect) -> reqwest::Client {
    reqwest::Client::builder()
        .use_preconfigured_tls(client_config(ca, me, expect).unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn station_token(pool: &Pool, name: &str) -> String {
    std::fs::read_to_string(pool.dir.join(name).join("station.token"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn tls_and_enrolment_attacks_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pool = Pool::start(&dir.path().join("lab"), "lab", &["s1", "s2"]);
    let other = Pool::start(&dir.path().join("other"), "other", &["evil"]);
    let ca = pool.ca();
    let (s1, s2) = (pool.port("s1"), pool.port("s2"));
    let registry = pool.registry();
    let tok1 = station_token(&pool, "s1");

    // The honest path works: s1's own certificate and token at the
    // coordinator (the station's own ads prove it too).
    let me1 = pool.identity("s1");
    let honest = client(
        &ca,
        Some(&me1),
        Expect::Named(gleaner_edge::tls::coordinator_dns("lab")),
    );
    assert_eq!(get(&honest, pool.cport, "/v1/pool", &tok1), Ok(200));

    // 1. Plain text against TLS daemons: a plain 400 naming HTTPS, no
    //    handler reached.
    for port in [pool.cport, s1] {
        let answer = plain_text(
            &pool,
            port,
            "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        );
        assert!(
            answer.starts_with("HTTP/1.1 400") && answer.contains("HTTPS only"),
            "{answer}"
        );
    }

    // 2. A client certificate from another pool's CA: the handshake fails.
    let evil = other.identity("evil");
    let foreign = client(&ca, Some(&evil), Expect::UrlHost);
    let e = get(&foreign, s1, "/v1/whoami", &tok1).unwrap_err();
    assert!(
        e.contains("UnknownCA") || e.to_lowercase().contains("certificate"),
        "{e}"
    );
    let e = get(&foreign, pool.cport, "/v1/pool", &tok1).unwrap_err();
    assert!(!e.is_empty());

    // 3. A station showing its own certificate (s2) with s1's credential:
    //    401 at the coordinator and at a station; s1's ad unchanged.
    let me2 = pool.identity("s2");
    let liar = client(&ca, Some(&me2), Expect::UrlHost);
    assert_eq!(get(&liar, pool.cport, "/v1/pool", &tok1), Ok(401));
    assert_eq!(get(&liar, s2, "/v1/guests", &tok1), Ok(401));
    // With no certificate at all: no station credential either.
    let bare = client(&ca, None, Expect::UrlHost);
    assert_eq!(get(&bare, pool.cport, "/v1/pool", &tok1), Ok(401));
    let ad = rt().block_on(async {
        let r = liar
            .post(format!("https://127.0.0.1:{}/v1/advertise", pool.cport))
            .bearer_auth(&tok1)
            .header("content-type", "application/json")
            .body(r#"{"protocol":1}"#)
            .send()
            .await
            .unwrap();
        r.status().as_u16()
    });
    assert_eq!(ad, 401);

    // 4. A join token used twice: the second refused, nothing written.
    let t3 = pool.join_token("s3");
    let o = pool.join(&t3, "s3", free_port());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = pool.registry();
    let again = pool.join(&t3, "s3b", free_port());
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("401") && err.contains("used already"), "{err}");
    assert_eq!(pool.registry(), before);
    assert!(!pool.dir.join("s3b").join("station.toml").exists());

    // 5. A join token for s4 used as s5: 403, nothing written, and the
    //    token still good for s4.
    let t4 = pool.join_token("s4");
    let before = pool.registry();
    let wrong = pool.join(&t4, "s5", free_port());
    assert!(!wrong.status.success());
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("403") && err.contains("for station \"s4\""),
        "{err}"
    );
    assert_eq!(pool.registry(), before);
    assert!(!pool.dir.join("s5").join("station.toml").exists());
    let right = pool.join(&t4, "s4", free_port());
    assert!(
        right.status.success(),
        "{}",
        String::from_utf8_lossy(&right.stderr)
    );
    // A join token is no bearer token anywhere else.
    let t6 = pool.join_token("s6");
    assert_eq!(get(&bare, pool.cport, "/v1/pool", &t6), Ok(401));
    // A join token pinning another CA: the joining side refuses the
    // coordinator before sending anything.
    let forged = {
        let mut parts: Vec<String> = t6.split('.').map(String::from).collect();
        parts[3] = "0".repeat(64);
        parts.join(".")
    };
    let before = pool.registry();
    let pinned = pool.join(&forged, "s6", free_port());
    assert!(!pinned.status.success());
    assert_eq!(pool.registry(), before);

    // 6. A server impersonating a station: calling s1, a host accepts only
    //    s1's certificate. s2 answering at s1's address is refused, and so
    //    is another pool's station; s1 itself is accepted.
    let base: gleaner_edge::tls::client::BaseBuilder =
        Arc::new(|| reqwest::Client::builder().timeout(Duration::from_secs(10)));
    let peers = PeerClients::tls(base, ca.clone(), Some(pool.identity("s2"))).unwrap();
    let to_s1 = peers.station("s1");
    let at = |port: u16| {
        rt().block_on(async {
            to_s1
                .get(format!("https://127.0.0.1:{port}/v1/guests"))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| format!("{e:?}"))
        })
    };
    let e = at(s2).unwrap_err();
    assert!(
        e.contains("NotValidForName") || e.contains("not valid for"),
        "{e}"
    );
    assert!(at(other.port("evil")).is_err());
    // The real s1 answers (401: no credential sent, but the handshake
    // with the right name went through).
    assert_eq!(at(s1), Ok(401));

    // Nothing the attacks did changed the registry but the honest joins.
    assert_ne!(pool.registry(), registry);
}

#[test]
fn plain_http_is_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("s.toml");
    std::fs::write(
        &cfg,
        format!(
            "name = \"x\"\nlisten = \"0.0.0.0:0\"\nstate_dir = \"{}\"\n",
            s(&dir.path().join("state"))
        ),
    )
    .unwrap();
    let o = glean(&["station", "--config", &s(&cfg)]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("listen") && err.contains("only on loopback"),
        "{err}"
    );
    assert!(!dir.path().join("state").join("queue.db").exists());

    let c = dir.path().join("c.toml");
    std::fs::write(&c, "listen = \"0.0.0.0:0\"\n").unwrap();
    let o = glean(&[
        "coordinator",
        "--config",
        &s(&c),
        "--state-dir",
        &s(&dir.path().join("cs")),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("only on loopback"));

    let tok = dir.path().join("token");
    std::fs::write(&tok, "x.y").unwrap();
    let o = glean(&[
        "q",
        "--station",
        "http://192.0.2.1:9620",
        "--token",
        &s(&tok),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("only on loopback"));
}
