//! `glean station join URL --token T`: enrols this machine as a station of
//! the pool whose coordinator is at URL (issue 13; `docs/deploy.md`).
//!
//! 1. The join token carries the pool CA's SHA-256: the first connection
//!    trusts only a server whose chain holds that CA and whose certificate
//!    it signed for the URL's host ([`gleaner_edge::tls::pinned_client`]).
//!    `GET /v1/pool/ca` over it; the CA is checked against the pin again.
//! 2. The station makes its own key pair; the key never leaves it. A
//!    certificate request for it goes in `POST /v1/join`, with the token.
//! 3. The coordinator answers with the station's certificate, the CA,
//!    `pool.pub` and the station's own station token; the join token is
//!    spent.
//! 4. The files and the configuration are written: the key first, the
//!    configuration last, so a station is configured only once all its
//!    credentials are in place.

use crate::pool::q;
use anyhow::{Context, bail};
use clap::Args;
use gleaner_proto::enrol::{JoinReply, JoinRequest, JoinToken};
use gleaner_proto::wire::{ErrorBody, PROTOCOL_VERSION};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct JoinArgs {
    /// The coordinator's URL (https://HOST:9618, as `glean pool init` printed).
    pub url: String,
    /// The one-time join token (`glean token create --station NAME`).
    #[arg(long)]
    pub token: String,
    /// This station's name (the one the join token was made for). Default:
    /// the host name.
    #[arg(long)]
    pub name: Option<String>,
    /// Address the station listens on.
    #[arg(long, default_value = "0.0.0.0:9620")]
    pub listen: SocketAddr,
    /// The URL others reach this station at. Default: https:// and the
    /// local address this machine reaches the coordinator from.
    #[arg(long)]
    pub address: Option<String>,
    /// More names or addresses for the certificate (repeatable).
    #[arg(long = "san", value_name = "HOST")]
    pub sans: Vec<String>,
    /// Where to write the station's configuration.
    #[arg(long, default_value = "/etc/gleaner/station.toml")]
    pub config: PathBuf,
    /// Where to keep the credentials (CA, certificate, key, pool.pub,
    /// station token). Default: the configuration's directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The station's state directory (queue, spool).
    #[arg(long, default_value = "/var/lib/gleaner/station")]
    pub state_dir: PathBuf,
    /// Lines appended to the configuration before its tables (tests and
    /// `glean up` use it; administrators edit the file).
    #[arg(long, hide = true, default_value = "")]
    pub extra: String,
    /// Tables appended at the end of the configuration (`[isolation]` …).
    #[arg(long, hide = true, default_value = "")]
    pub tables: String,
    /// Rejoin: replace an existing configuration and credentials (a new
    /// key and certificate; the renewal procedure).
    #[arg(long)]
    pub force: bool,
    /// The settings of this machine that the join does not decide (owner
    /// activity, `[isolation]` …), copied into the configuration. Default:
    /// the Debian package's `/usr/share/gleaner/station.toml` where it is
    /// installed, so that the station suits its unit.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

/// The package's station settings (`packaging/templates/station.toml`).
pub const PACKAGE_TEMPLATE: &str = "/usr/share/gleaner/station.toml";

/// What a join wrote.
#[derive(Debug, Clone)]
pub struct Joined {
    pub name: String,
    pub pool: String,
    pub address: String,
    pub config: PathBuf,
    pub dir: PathBuf,
}

pub fn run(mut args: JoinArgs) -> anyhow::Result<ExitCode> {
    if args.template.is_none() && Path::new(PACKAGE_TEMPLATE).exists() {
        args.template = Some(PACKAGE_TEMPLATE.into());
    }
    let j = join(&args)?;
    println!("joined pool {:?} as station {}", j.pool, j.name);
    println!("  address     {}", j.address);
    println!(
        "  credentials {}/{{pool-ca.pem,station.crt,station.key,pool.pub,station.token}}",
        j.dir.display()
    );
    println!("  config      {}", j.config.display());
    println!(
        "next: systemctl enable --now gleaner-station   (or: glean station --config {})",
        j.config.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().split('.').next().unwrap_or("").to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "station".into())
}

/// The local address this machine reaches `url`'s host from.
fn local_address_towards(url: &str) -> Option<std::net::IpAddr> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = u.port_or_known_default()?;
    let target = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .ok()?
        .next()?;
    let bind: SocketAddr = if target.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let s = std::net::UdpSocket::bind(bind).ok()?;
    s.connect(target).ok()?;
    Some(s.local_addr().ok()?.ip())
}

/// Does the join; writes the files. Refuses before any contact when the
/// configuration exists (unless `force`).
pub fn join(a: &JoinArgs) -> anyhow::Result<Joined> {
    let token = JoinToken::parse(&a.token).map_err(anyhow::Error::msg)?;
    let name = a.name.clone().unwrap_or_else(host_name);
    gleaner_proto::creds::check_station_name(&name)?;
    if a.config.exists() && !a.force {
        bail!(
            "{} exists: this machine has joined already (--force rejoins, with a new key \
             and certificate)",
            a.config.display()
        );
    }
    // Read before any contact: a bad template spends no join token.
    let template = match &a.template {
        Some(p) => Template::read(p)?,
        None => Template::default(),
    };
    let url = a.url.trim_end_matches('/').to_string();
    gleaner_edge::tls::check_url("coordinator", &url, false).map_err(anyhow::Error::msg)?;
    let address = match &a.address {
        Some(x) => x.trim_end_matches('/').to_string(),
        None => {
            let ip = local_address_towards(&url).with_context(|| {
                format!("cannot tell this machine's address towards {url}; pass --address")
            })?;
            let host = if ip.is_ipv6() {
                format!("[{ip}]")
            } else {
                ip.to_string()
            };
            format!("https://{host}:{}", a.listen.port())
        }
    };
    gleaner_edge::tls::check_url("address", &address, false).map_err(anyhow::Error::msg)?;
    let (csr, key) = gleaner_coordinator::enrol::pki::new_request()?;
    let mut addresses = vec![address.clone()];
    addresses.extend(a.sans.iter().cloned());
    let request = JoinRequest {
        protocol: PROTOCOL_VERSION,
        name: name.clone(),
        csr,
        addresses,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let reply = rt.block_on(exchange(&url, &token, &request))?;
    let pin = token.ca_fingerprint();
    let ca = gleaner_edge::tls::PoolCa::from_pem(
        &reply.pool,
        reply.ca.as_bytes(),
        Path::new("the join reply"),
    )?;
    if ca.fingerprint() != pin {
        bail!(
            "the coordinator's reply carries another CA ({}) than the join token's {pin}",
            ca.fingerprint()
        );
    }
    if reply.station != name {
        bail!("the coordinator enrolled {:?}, not {name:?}", reply.station);
    }
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => a
            .config
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    write_files(a, &template, &dir, &name, &address, &url, &reply, &key)?;
    Ok(Joined {
        name,
        pool: reply.pool,
        address,
        config: a.config.clone(),
        dir,
    })
}

async fn exchange(url: &str, token: &JoinToken, req: &JoinRequest) -> anyhow::Result<JoinReply> {
    let http = gleaner_edge::tls::pinned_client(
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30)),
        &token.ca_fingerprint(),
    )?;
    let ca = http
        .get(format!("{url}/v1/pool/ca"))
        .send()
        .await
        .with_context(|| {
            format!(
                "cannot reach the coordinator at {url} (or it is not the pool of this join token)"
            )
        })?;
    if !ca.status().is_success() {
        bail!(
            "{url}/v1/pool/ca answered {}: not a Gleaner coordinator with TLS?",
            ca.status()
        );
    }
    let pem = ca.text().await?;
    let got =
        gleaner_edge::tls::PoolCa::from_pem("", pem.as_bytes(), Path::new("GET /v1/pool/ca"))?;
    if got.fingerprint() != token.ca_fingerprint() {
        bail!(
            "the coordinator's CA is {}, the join token's {}: refusing to trust it",
            got.fingerprint(),
            token.ca_fingerprint()
        );
    }
    let resp = http
        .post(format!("{url}/v1/join"))
        .bearer_auth(token.to_string())
        .json(req)
        .send()
        .await
        .with_context(|| format!("POST {url}/v1/join"))?;
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        let why = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error.message)
            .unwrap_or(text);
        bail!("the coordinator refused the join ({status}): {why}");
    }
    resp.json::<JoinReply>()
        .await
        .context("reading the join reply")
}

#[allow(clippy::too_many_arguments)]
fn write_files(
    a: &JoinArgs,
    template: &Template,
    dir: &Path,
    name: &str,
    address: &str,
    url: &str,
    reply: &JoinReply,
    key: &str,
) -> anyhow::Result<()> {
    use gleaner_proto::creds::write_atomic;
    let [key_p, ca_p, cert_p, pub_p, tok_p] = [
        "station.key",
        "pool-ca.pem",
        "station.crt",
        "pool.pub",
        "station.token",
    ]
    .map(|f| dir.join(f));
    let text = format!(
        "# Written by `glean station join` (docs/deploy.md, docs/configuration.md).\n\
         name = {}\nlisten = {}\naddress = {}\nstate_dir = {}\ncoordinator = {}\n\
         public_key = {}\ntoken_file = {}\n{}{}\n[tls]\npool = {}\nca = {}\ncert = {}\nkey = {}\n{}{}",
        q(name),
        q(&a.listen.to_string()),
        q(address),
        q(&a.state_dir.display().to_string()),
        q(url),
        q(&pub_p.display().to_string()),
        q(&tok_p.display().to_string()),
        a.extra,
        template.top,
        q(&reply.pool),
        q(&ca_p.display().to_string()),
        q(&cert_p.display().to_string()),
        q(&key_p.display().to_string()),
        template.tables,
        a.tables,
    );
    // Checked before anything is written: a template whose tables clash
    // with the join's leaves the machine as it was.
    if let Err(e) = text.parse::<toml::Table>() {
        bail!(
            "the configuration made with {} would not be valid TOML: {}",
            a.template
                .as_deref()
                .map_or_else(|| "no template".into(), |p| p.display().to_string()),
            e.message()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let w = |p: &Path, text: &str, mode: u32| {
        write_atomic(p, text.as_bytes(), mode).with_context(|| format!("writing {}", p.display()))
    };
    w(&key_p, key, 0o600)?;
    w(&ca_p, &reply.ca, 0o644)?;
    // The chain with the CA, as the coordinator's.
    w(
        &cert_p,
        &format!("{}{}", reply.certificate, reply.ca),
        0o644,
    )?;
    w(&pub_p, &reply.public_key, 0o644)?;
    w(&tok_p, &format!("{}\n", reply.station_token), 0o600)?;
    if let Some(d) = a.config.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    w(&a.config, &text, 0o644)
}

/// A station template split where TOML wants it: its top-level keys go
/// before `[tls]`, its tables after.
#[derive(Debug, Default)]
struct Template {
    top: String,
    tables: String,
}

impl Template {
    /// Keys the join itself writes: a template must leave them out.
    const JOIN_KEYS: [&'static str; 7] = [
        "name",
        "listen",
        "address",
        "state_dir",
        "coordinator",
        "public_key",
        "token_file",
    ];

    fn read(path: &Path) -> anyhow::Result<Template> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the template {}", path.display()))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| anyhow::anyhow!("{}: {}", path.display(), e.message()))?;
        if let Some(k) = Self::JOIN_KEYS.iter().find(|k| table.contains_key(**k)) {
            bail!(
                "{}: sets `{k}`, which `glean station join` writes itself",
                path.display()
            );
        }
        if table.contains_key("tls") {
            bail!("{}: has a [tls] table; the join writes it", path.display());
        }
        // The first line that opens a table ends the top level.
        let mut at = text.len();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            if line.trim_start().starts_with('[') {
                at = offset;
                break;
            }
            offset += line.len();
        }
        let (top, tables) = text.split_at(at);
        Ok(Template {
            top: format!("\n# From {}:\n{top}", path.display()),
            tables: tables.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_splits_at_its_first_table_and_may_not_set_the_joins_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("station.toml");
        std::fs::write(
            &p,
            "# comment\nrole = \"both\"\n\n[isolation]\ndelegated = true\n",
        )
        .unwrap();
        let t = Template::read(&p).unwrap();
        assert!(t.top.contains("role = \"both\"") && !t.top.contains("[isolation]"));
        assert_eq!(t.tables, "[isolation]\ndelegated = true\n");
        // The package's own template is one.
        let shipped = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../packaging/templates/station.toml"
        );
        let t = Template::read(Path::new(shipped)).unwrap();
        assert!(t.tables.contains("create_slot_users = false"), "{t:?}");
        for bad in [
            "name = \"x\"\n",
            "listen = \"0.0.0.0:1\"\n",
            "[tls]\npool = \"p\"\n",
        ] {
            std::fs::write(&p, bad).unwrap();
            let e = format!("{:#}", Template::read(&p).unwrap_err());
            assert!(e.contains("station.toml"), "{e}");
        }
        std::fs::write(&p, "role = \n").unwrap();
        assert!(Template::read(&p).is_err());
    }
}
