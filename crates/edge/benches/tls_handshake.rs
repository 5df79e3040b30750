//! What TLS costs a request on loopback: the same small authenticated-free
//! GET against one axum server, plain HTTP and TLS (the pool's own CA,
//! a client certificate as stations present), each with a new connection
//! per request (a full handshake every time) and over one kept-alive
//! connection. Prints the median and the 90th percentile of N requests.
//!
//! `cargo bench -p gleaner-edge --bench tls_handshake` (N=500; `TLS_BENCH_N`).

use axum::Router;
use axum::routing::get;
use gleaner_edge::tls::{Bound, Expect, Identity, PoolCa, client_config, serve, server};
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, SanType,
};
use std::path::Path;
use std::time::{Duration, Instant};

fn pki(dir: &Path) -> (PoolCa, Identity, Identity) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&ca_cert.pem(), ca_key).unwrap();
    let leaf = |name: &str, file: &str| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.subject_alt_names = vec![
            SanType::DnsName(name.try_into().unwrap()),
            SanType::IpAddress("127.0.0.1".parse().unwrap()),
        ];
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = p.signed_by(&key, &issuer).unwrap();
        let (c, k) = (
            dir.join(format!("{file}.crt")),
            dir.join(format!("{file}.key")),
        );
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();

        std::fs::set_permissions(&k, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        Identity::load(&c, &k).unwrap()
    };
    let server = leaf("s1.station.bench", "server");
    let client = leaf("s2.station.bench", "client");
    let ca = PoolCa::from_pem("bench", ca_cert.pem().as_bytes(), Path::new("ca")).unwrap();
    (ca, server, client)
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(v[v.len() / 2]), us(v[v.len() * 9 / 10]))
}

async fn measure(client: &reqwest::Client, url: &str, n: usize) -> (f64, f64) {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = client.get(url).send().await.unwrap();
        assert!(r.status().is_success());
        let _ = r.bytes().await.unwrap();
        times.push(t.elapsed());
    }
    percentiles(times)
}

fn main() {
    let n: usize = std::env::var("TLS_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let dir = tempfile::tempdir().unwrap();
    let (ca, srv, cli) = pki(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let app = || Router::new().route("/v1/health", get(|| async { "ok" }));
        let plain = Bound::bind("127.0.0.1:0".parse().unwrap(), None)
            .await
            .unwrap();
        let plain_port = plain.local_addr().unwrap().port();
        tokio::spawn(serve(plain, app(), std::future::pending()));
        let sc = server::server_config(&ca, &srv).unwrap();
        let tls = Bound::bind("127.0.0.1:0".parse().unwrap(), Some((sc, "bench")))
            .await
            .unwrap();
        let tls_port = tls.local_addr().unwrap().port();
        tokio::spawn(serve(tls, app(), std::future::pending()));
        let plain_url = format!("http://127.0.0.1:{plain_port}/v1/health");
        let tls_url = format!("https://127.0.0.1:{tls_port}/v1/health");
        let fresh = |b: reqwest::ClientBuilder| b.pool_max_idle_per_host(0);
        let mk_tls = |fresh_conn: bool| {
            let b = reqwest::Client::builder().use_preconfigured_tls(
                client_config(&ca, Some(&cli), Expect::Named("s1.station.bench".into())).unwrap(),
            );
            if fresh_conn { fresh(b) } else { b }.build().unwrap()
        };
        let plain_new = fresh(reqwest::Client::builder()).build().unwrap();
        let plain_keep = reqwest::Client::new();
        let (tls_new, tls_keep) = (mk_tls(true), mk_tls(false));
        // Warm up.
        measure(&plain_keep, &plain_url, 20).await;
        measure(&tls_keep, &tls_url, 20).await;
        println!("tls_handshake: {n} requests each, loopback, median / p90 in µs");
        for (what, c, url) in [
            ("plain HTTP, new connection each", &plain_new, &plain_url),
            (
                "TLS 1.3 + client cert, new connection each",
                &tls_new,
                &tls_url,
            ),
            ("plain HTTP, kept alive", &plain_keep, &plain_url),
            ("TLS 1.3, kept alive", &tls_keep, &tls_url),
        ] {
            let (med, p90) = measure(c, url, n).await;
            println!("  {what:<45} {med:>8.0} {p90:>8.0}");
        }
    });
}
