//! The station's edit endpoint under attack (`POST /v1/jobs/{id}/edit`,
//! behind `condor_qedit`): who is asking is checked before the body is
//! parsed; another user's jobs, protected attributes, oversized and
//! malformed requests are refused and nothing changes; a cluster is edited
//! whole or not at all.

use crate::common::{TestKeys, TestOwner};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::spawn_for_test;
use serde_json::{Value, json};
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn glean(home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(crate::common::glean_bin())
        .args(args)
        .env("GLEAN_HOME", home)
        .env_remove("GLEAN_LOG")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn edits_are_the_owners_alone_and_protected_attributes_stay() {
    if gleaner_testkit::skip_unless_root("needs two real accounts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&dir.path().join("keys")).unwrap();
    let cfg = StationConfig {
        name: "home".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: dir.path().join("state"),
        public_key: keys.public_key(),
        token_file: keys
            .station_token_file("home", &dir.path().join("home.token"))
            .unwrap(),
        // No hosts: the jobs stay queued.
        role: StationRole::SubmitOnly,
        ..Default::default()
    };
    let (addr, running) = spawn_for_test(cfg).await.unwrap();
    let alice = TestOwner::new("qea").unwrap();
    let bob = TestOwner::new("qeb").unwrap();
    let home = dir.path().join("glean");
    let work = dir.path().join("work");
    alice.dir(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("pool.toml"),
        format!("station = \"http://{addr}\"\n"),
    )
    .unwrap();
    std::fs::write(home.join("token"), keys.user(alice.name())).unwrap();
    alice
        .write(
            &work.join("j.sub"),
            "executable = /bin/sleep\narguments = 60\nqueue 2\n",
        )
        .unwrap();
    let sub = work.join("j.sub");
    let home2 = home.clone();
    let out =
        tokio::task::spawn_blocking(move || glean(&home2, &["submit", sub.to_str().unwrap()]))
            .await
            .unwrap();
    assert!(out.status.success(), "{out:?}");

    let http = reqwest::Client::new();
    let url = |id: &str| format!("http://{addr}/v1/jobs/{id}/edit");
    let post = |who: &str, id: &str, body: Vec<u8>| {
        http.post(url(id))
            .bearer_auth(keys.user(who))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let detail = |id: &str| {
        http.get(format!("http://{addr}/v1/jobs/{id}"))
            .bearer_auth(keys.user(alice.name()))
            .send()
    };
    let desc = |v: Value| v["description"].clone();
    let before = desc(detail("1.0").await.unwrap().json::<Value>().await.unwrap());

    // Another user: refused before the body is parsed (garbage gets 403,
    // not 400), and with a valid body too.
    let r = post(bob.name(), "1.0", b"\x00not json".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403, "{:?}", r.text().await);
    let body = json!({ "attrs": [["JobPrio", "99"]] })
        .to_string()
        .into_bytes();
    let r = post(bob.name(), "1", body.clone()).await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // The owner's malformed request: the body's fault, named.
    let r = post(alice.name(), "1.0", b"{\"attrs\": 5}".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Protected attributes: refused, nothing changed.
    for (name, value) in [
        ("Owner", "\"root\""),
        ("ClusterId", "7"),
        ("JobStatus", "4"),
        ("Cmd", "\"/bin/sh\""),
        ("Iwd", "\"/etc\""),
        ("Out", "\"/etc/passwd\""),
        ("TransferInput", "\"/etc/shadow\""),
        ("AcctGroup", "\"vip\""),
        ("x509UserProxySubject", "\"x\""),
    ] {
        // A valid edit first in the same request: all or nothing.
        let b = json!({ "attrs": [["JobPrio", "5"], [name, value]] }).to_string();
        let r = post(alice.name(), "1", b.into_bytes()).await.unwrap();
        assert_eq!(r.status().as_u16(), 403, "{name}");
        let msg = r.text().await.unwrap();
        assert!(
            msg.contains(&format!("attribute \\\"{name}\\\" is not allowed")),
            "{msg}"
        );
    }
    // Bad names and values, too many attributes, too large a body.
    for attrs in [
        json!([["bad-name", "1"]]),
        json!([["RequestCpus", "0"]]),
        json!([["Foo", "1 +"]]),
        json!(
            (0..65)
                .map(|i| [format!("A{i}"), "1".to_string()])
                .collect::<Vec<_>>()
        ),
        json!([]),
    ] {
        let r = post(
            alice.name(),
            "1.0",
            json!({ "attrs": attrs }).to_string().into_bytes(),
        )
        .await
        .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{attrs}");
    }
    // Too large a body, on a connection of its own that the test then
    // closes: the server stops reading over its limit, and a client still
    // writing would hold the connection (and the server's graceful stop).
    {
        let huge = json!({ "attrs": [["Foo", format!("\"{}\"", "x".repeat(4 << 20))]] })
            .to_string()
            .into_bytes();
        let head = format!(
            "POST /v1/jobs/1.0/edit HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            keys.user(alice.name()),
            huge.len()
        );
        let (mut rd, mut wr) = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap()
            .into_split();
        let writer = tokio::spawn(async move {
            let _ = wr.write_all(head.as_bytes()).await;
            let _ = wr.write_all(&huge).await;
        });
        // Refused with a 4xx, or the connection closed (a reset may
        // discard the answer): either way nothing is set (checked below).
        let mut answer = Vec::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            rd.read_to_end(&mut answer),
        )
        .await;
        assert!(read.is_ok(), "the server kept the oversized request open");
        writer.abort();
        let _ = writer.await;
        let line = String::from_utf8_lossy(&answer[..answer.len().min(12)]).into_owned();
        assert!(
            answer.is_empty() || line.starts_with("HTTP/1.1 4"),
            "{line}"
        );
    }
    // A dry run changes nothing either.
    let b = json!({ "attrs": [["JobPrio", "5"]], "dry_run": true }).to_string();
    let r = post(alice.name(), "1", b.into_bytes()).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    for id in ["1.0", "1.1"] {
        let now = desc(detail(id).await.unwrap().json::<Value>().await.unwrap());
        assert_eq!(now["priority"], before["priority"], "{id}");
        assert_eq!(now["custom_attrs"], before["custom_attrs"], "{id}");
        assert_eq!(now["executable"], before["executable"], "{id}");
    }

    // The owner's edit of the cluster: both jobs, in one answer.
    let b =
        json!({ "attrs": [["JobPrio", "5"], ["RequestMemory", "64"], ["Project", "\"blue\""]] });
    let r = post(alice.name(), "1", b.to_string().into_bytes())
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["jobs"], json!(["1.0", "1.1"]));
    for id in ["1.0", "1.1"] {
        let d = desc(detail(id).await.unwrap().json::<Value>().await.unwrap());
        assert_eq!(d["priority"], 5);
        assert_eq!(d["request_memory_mb"], 64);
        assert_eq!(d["custom_attrs"]["Project"], "\"blue\"");
    }
    // A finished job is not edited.
    let home3 = home.clone();
    let out = tokio::task::spawn_blocking(move || glean(&home3, &["rm", "1.1"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let b = json!({ "attrs": [["JobPrio", "1"]] }).to_string();
    let r = post(alice.name(), "1.1", b.into_bytes()).await.unwrap();
    assert_eq!(r.status().as_u16(), 409);
    running.stop().await;
}
