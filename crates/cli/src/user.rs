//! `glean user add NAME`: a user of the pool who submits from another
//! machine over TCP: a user token, and a client directory to use as that
//! user's `$GLEAN_HOME` (`pool.toml` naming their home station and the
//! coordinator, the pinned pool CA, the token). Local users of a station
//! need none of it: they use its user socket.

use crate::pool::q;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest};
use gleaner_proto::creds::{Role, write_atomic};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct UserArgs {
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// A token and a client directory for user NAME.
    Add(AddArgs),
}

#[derive(Args, Debug)]
struct AddArgs {
    /// The user's Unix account name (on their home station).
    name: String,
    /// The user's home station (https://HOST:9620): where their jobs queue.
    #[arg(long, value_name = "URL")]
    station: String,
    /// Lifetime of the token, days (default 30).
    #[arg(long, value_name = "DAYS")]
    expires: Option<u64>,
    /// Where to write the client directory (default ./NAME.glean).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    place: crate::token::Place,
}

pub fn run(args: UserArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        UserCommand::Add(a) => add(a),
    }
}

fn add(a: AddArgs) -> anyhow::Result<ExitCode> {
    let place = a.place.resolve()?;
    let signer = crate::token::signer_at(&place)?;
    let Some((pool, ca)) = place.ca.clone() else {
        bail!(
            "this pool has no CA (glean pool init makes it): remote users need TLS; \
             local users submit on their station's socket"
        );
    };
    if place.address.is_empty() {
        bail!("no coordinator address: set `address` in the coordinator's configuration");
    }
    gleaner_edge::tls::check_url("--station", &a.station, false).map_err(anyhow::Error::msg)?;
    let ca_pem = gleaner_edge::tls::PoolCa::load(&pool, &ca)?.pem();
    let issued = TokenRegistry::in_state_dir(&place.state_dir).create(
        &signer,
        &TokenRequest {
            role: Role::User,
            subject: a.name.clone(),
            expires_days: a.expires,
        },
        crate::token::now_secs(),
    )?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.glean", a.name)));
    gleaner_proto::creds::create_private_dir(&out)
        .with_context(|| format!("creating {}", out.display()))?;
    let w = |file: &str, text: &str, mode: u32| {
        let p = out.join(file);
        write_atomic(&p, text.as_bytes(), mode).with_context(|| format!("writing {}", p.display()))
    };
    w("token", &format!("{}\n", issued.token), 0o600)?;
    w("pool-ca.pem", &ca_pem, 0o644)?;
    w(
        "pool.toml",
        &format!(
            "# For {name}: copy this directory to ~/.glean (or point $GLEAN_HOME at it).\n\
             station = {}\ncoordinator = {}\nca = \"pool-ca.pem\"\npool = {}\ntoken_file = \"token\"\n",
            q(a.station.trim_end_matches('/')),
            q(&place.address),
            q(&pool),
            name = a.name,
        ),
        0o644,
    )?;
    println!(
        "user {}: token {} (expires {}), client directory {}",
        a.name,
        issued.record.token_id,
        issued
            .record
            .expires_at
            .map_or("never".into(), |e| e.to_string()),
        out.display()
    );
    println!(
        "give it to {0} (it holds their token): it becomes their ~/.glean; then `glean q` works \
         from any machine that reaches {1}",
        a.name, a.station
    );
    Ok(ExitCode::SUCCESS)
}
