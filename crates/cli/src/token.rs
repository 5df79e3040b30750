//! `glean token create|list|revoke`: issue, list and revoke the pool's
//! tokens, where the coordinator's signing key is (DESIGN.md, Trust model;
//! the role of HTCondor's `condor_token_create|list`).

use crate::output::Output;
use anyhow::{Context, bail};
use clap::{ArgGroup, Args, Subcommand};
use gleaner_coordinator::CoordinatorConfig;
use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest, signing_key_path};
use gleaner_proto::creds::{KeyFileError, PoolSigner, Role, load_signing_key};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Create a token and print it on stdout (and nothing else there).
    Create(CreateArgs),
    /// List the tokens issued (never the tokens themselves).
    List(ListArgs),
    /// Revoke a token by id; stations learn it at their next advertisement.
    Revoke(RevokeArgs),
}

/// Where the coordinator's state directory is.
#[derive(Args, Debug)]
pub struct Place {
    /// The coordinator's state directory (holding signing.key and
    /// tokens.json).
    #[arg(long, value_name = "DIR", conflicts_with = "config")]
    state_dir: Option<PathBuf>,
    /// The coordinator's TOML configuration, for its `state_dir` and
    /// `signing_key`.
    #[arg(long, value_name = "COORDINATOR.toml")]
    config: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("who").required(true).args(["user", "admin", "station"])))]
struct CreateArgs {
    /// A user token acting as the Unix account NAME on home stations.
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// An administrator token (may act on every job and station).
    #[arg(long, value_name = "NAME")]
    admin: Option<String>,
    /// For the station named NAME: in a pool with a CA (`glean pool
    /// init`), a one-time join token for `glean station join`; the station
    /// gets its certificate and its own station token when it joins. In a
    /// pool without one, or with --direct, the station token itself.
    #[arg(long, value_name = "NAME")]
    station: Option<String>,
    /// With --station: print the station token itself, not a join token
    /// (for a station set up by hand, without TLS).
    #[arg(long, requires = "station")]
    direct: bool,
    /// With --station: how long the join token may be used, hours.
    #[arg(long, value_name = "HOURS", default_value_t = gleaner_coordinator::enrol::joins::DEFAULT_JOIN_HOURS)]
    join_hours: u64,
    /// Lifetime in days. Default 30 for user and admin tokens (which always
    /// expire), 365 for station tokens; 0 (never) for station tokens only.
    #[arg(long, value_name = "DAYS")]
    expires: Option<u64>,
    #[command(flatten)]
    place: Place,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    place: Place,
}

#[derive(Args, Debug)]
struct RevokeArgs {
    /// The token id, as `glean token list` shows it.
    id: String,
    #[command(flatten)]
    place: Place,
}

pub fn run(args: TokenArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    match args.command {
        TokenCommand::Create(a) => create(a, out),
        TokenCommand::List(a) => list(a, out),
        TokenCommand::Revoke(a) => revoke(a, out),
    }
}

/// The coordinator's state directory (for `tokens.json`) and its signing
/// key file, as the coordinator itself finds them.
pub struct Where {
    pub state_dir: PathBuf,
    pub key: PathBuf,
    /// The pool CA (pool name, certificate), when the pool has one.
    pub ca: Option<(String, PathBuf)>,
    /// The coordinator's URL, when configured.
    pub address: String,
}

impl Place {
    pub fn resolve(&self) -> anyhow::Result<Where> {
        if let Some(d) = &self.state_dir {
            let ca = d.join("ca.pem");
            return Ok(Where {
                key: signing_key_path(d),
                state_dir: d.clone(),
                ca: ca.exists().then(|| (String::new(), ca)),
                address: String::new(),
            });
        }
        let config = match &self.config {
            Some(path) => CoordinatorConfig::load(path)
                .with_context(|| format!("configuration {}", path.display()))?,
            None => CoordinatorConfig::default(),
        };
        Ok(Where {
            key: config.signing_key_path(),
            ca: config.tls_paths().map(|t| (t.pool, t.ca)),
            address: config.address.clone(),
            state_dir: config.state_dir,
        })
    }
}

/// Why there is no signing key here, said so that the user knows where to
/// go instead.
fn no_key_here(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "no signing key at {}: tokens are created, listed and revoked where the \
         coordinator's signing key is. Run `glean token` on the coordinator's \
         machine, or give its state directory with --state-dir or --config",
        path.display()
    )
}

pub fn signer_at(place: &Where) -> anyhow::Result<PoolSigner> {
    let path = &place.key;
    match load_signing_key(path) {
        Ok(s) => Ok(s),
        Err(KeyFileError::Missing { .. }) => Err(no_key_here(path)),
        Err(KeyFileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            bail!(
                "cannot read the signing key {}: permission denied; run as root or \
                 as the coordinator's user",
                path.display()
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// The registry of the coordinator whose state directory this is: listing
/// and revoking also happen where the signing key is, never elsewhere.
fn registry_at(place: &Where) -> anyhow::Result<TokenRegistry> {
    let key = &place.key;
    match std::fs::symlink_metadata(key) {
        Ok(_) => Ok(TokenRegistry::in_state_dir(&place.state_dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(no_key_here(key)),
        Err(e) => Err(anyhow::Error::new(e).context(format!("{}", key.display()))),
    }
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn create(a: CreateArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let (role, subject) = match (a.user.clone(), a.admin.clone(), a.station.clone()) {
        (Some(n), None, None) => (Role::User, n),
        (None, Some(n), None) => (Role::Admin, n),
        (None, None, Some(n)) => (Role::Station, n),
        // clap's group makes exactly one present.
        _ => bail!("give exactly one of --user, --admin, --station"),
    };
    let place = a.place.resolve()?;
    let signer = signer_at(&place)?;
    let registry = TokenRegistry::in_state_dir(&place.state_dir);
    if role == Role::Station
        && !a.direct
        && let Some((pool, ca)) = &place.ca
    {
        return create_join(&registry, &place, pool, ca, &subject, &a, out);
    }
    let request = TokenRequest {
        role,
        subject,
        expires_days: a.expires,
    };
    out.token_issued(&registry.create(&signer, &request, now_secs())?);
    Ok(ExitCode::SUCCESS)
}

/// A one-time join token for station `name`, pinning the pool CA.
fn create_join(
    registry: &TokenRegistry,
    place: &Where,
    pool: &str,
    ca: &Path,
    name: &str,
    a: &CreateArgs,
    out: &dyn Output,
) -> anyhow::Result<ExitCode> {
    let ca = gleaner_edge::tls::PoolCa::load(pool, ca)?;
    let (token, record) = gleaner_coordinator::enrol::joins::create(
        registry,
        name,
        a.join_hours,
        a.expires,
        &ca.fingerprint(),
        now_secs(),
    )?;
    let url = if place.address.is_empty() {
        "https://COORDINATOR:9618"
    } else {
        place.address.as_str()
    };
    eprintln!(
        "one-time join token for station {name}, usable for {} h; on {name}, as root:
           glean station join {url} --name {name} --token TOKEN",
        a.join_hours
    );
    out.token_issued(&gleaner_coordinator::tokens::IssuedToken {
        token: token.to_string(),
        record,
    });
    Ok(ExitCode::SUCCESS)
}

fn list(a: ListArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let registry = registry_at(&a.place.resolve()?)?;
    out.tokens(&registry.list()?, now_secs());
    Ok(ExitCode::SUCCESS)
}

fn revoke(a: RevokeArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let registry = registry_at(&a.place.resolve()?)?;
    out.token_revoked(&registry.revoke(a.id.trim(), now_secs())?);
    Ok(ExitCode::SUCCESS)
}
