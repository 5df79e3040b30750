//! `glean tail JOB`: a job's stdout (or stderr) as its home has received
//! it, in the manner of `condor_tail`: the last bytes at once, and with
//! `-f` whatever arrives until the job is over.
//!
//! The job's bytes are its owner's data: they go out unchanged to a file
//! or a pipe, and to the owner's own terminal (a program's colours and
//! progress bars are the owner's to see). Shown on anyone else's terminal
//! (an administrator's), they are escaped like every other user text
//! (`crate::output::escape::StreamEscaper`), line breaks kept.

use crate::jobs::ConnectArgs;
use crate::output::escape::shout;
use anyhow::bail;
use clap::Args;
use gleaner_proto::job::JobId;
use gleaner_station::client::StationClient;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// `glean tail [-f] [--stderr] [--maxbytes N] CLUSTER.PROC`.
#[derive(Args, Debug)]
pub struct TailArgs {
    /// The job, `CLUSTER.PROC`.
    pub id: String,
    /// Its standard error instead of its standard output.
    #[arg(long)]
    pub stderr: bool,
    /// Keep printing what arrives until the job completes, is removed or
    /// held (condor_tail -f).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Print at most this many bytes from the end first (condor_tail
    /// -maxbytes; 1024 by default, as there).
    #[arg(long, default_value_t = 1024, value_name = "N")]
    pub maxbytes: u64,
    /// Seconds between looks while following.
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub interval: f64,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

pub fn tail(args: TailArgs) -> anyhow::Result<ExitCode> {
    let id: JobId = match args.id.trim().parse() {
        Ok(id) => id,
        Err(_) => bail!("{:?} is not a job id (CLUSTER.PROC)", args.id),
    };
    if !(args.interval.is_finite() && args.interval > 0.0) {
        bail!("--interval must be a positive number of seconds");
    }
    let settings = args.connect.settings()?;
    let client = StationClient::from_settings(&settings)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(follow(&client, &id.to_string(), &args))
}

async fn follow(client: &StationClient, id: &str, args: &TailArgs) -> anyhow::Result<ExitCode> {
    let stream = if args.stderr { "stderr" } else { "stdout" };
    // Raw only for the owner's own terminal, or when not on a terminal.
    let owner = client.job(id).await?.job.owner;
    let me = client.whoami().await?.name;
    let mut escaper = (std::io::IsTerminal::is_terminal(&std::io::stdout()) && owner != me)
        .then(crate::output::escape::StreamEscaper::default);
    let mut emit = |out: &mut std::io::StdoutLock<'_>, bytes: &[u8]| -> std::io::Result<()> {
        match escaper.as_mut() {
            Some(e) => out.write_all(e.push(bytes).as_bytes()),
            None => out.write_all(bytes),
        }
    };
    // The length first (an offset past the end reads nothing), then the
    // last `maxbytes` of it.
    let (_, size) = client.output_part(id, stream, u64::MAX, Some(0)).await?;
    let mut offset = size.unwrap_or(0).saturating_sub(args.maxbytes);
    let mut out = std::io::stdout().lock();
    loop {
        // Everything there now, in the home's pieces.
        loop {
            let (bytes, size) = client.output_part(id, stream, offset, None).await?;
            let size = size.unwrap_or(offset + bytes.len() as u64);
            if size < offset {
                // A new run of the job: its output starts again.
                out.flush()?;
                shout!("glean tail: job {id} started again; its output restarts");
                offset = 0;
                continue;
            }
            emit(&mut out, &bytes)?;
            offset += bytes.len() as u64;
            if bytes.is_empty() || offset >= size {
                break;
            }
        }
        out.flush()?;
        if !args.follow {
            return Ok(ExitCode::SUCCESS);
        }
        let state = client.job(id).await?.job.state;
        if state.is_terminal() || state.kind() == gleaner_proto::job::JobStateKind::Held {
            // One more look: the last bytes may have come with the end.
            let (bytes, _) = client.output_part(id, stream, offset, None).await?;
            emit(&mut out, &bytes)?;
            out.flush()?;
            shout!("glean tail: job {id} is {state}");
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_secs_f64(args.interval)).await;
    }
}
